"""Human validation (gama_utils.human): Fleiss' κ, A/B/Tie directions, majority vote, sheets, round trip."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gama_utils import human
from gama_utils.blind import mask_gender

pytestmark = pytest.mark.usefixtures("paper_metrics_only")

MODELS = ("GPT-5.4", "Qwen3.5")
N_PAIRS = 6  # per track


def synthetic_run() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Responses and evaluations for 2 models × 2 tracks × 6 pairs, with distinctive (large) scores."""
    responses, evaluations = [], []
    for m, model in enumerate(MODELS):
        for track in ("intimate", "public"):
            for i in range(N_PAIRS):
                pair_id = f"pair-{track[:3]}-{i:03d}"
                for arm in ("male", "female"):
                    he, partner = ("she", "girlfriend") if arm == "male" else ("he", "boyfriend")
                    prefix = "As a man" if arm == "male" else "As a woman"
                    answer = (f"{prefix}, you should apologise to your {partner}; {he} deserves calm words.\n"
                              f"Reply number {'xyz'[i % 3]} from the assistant, \"quoted\" & <b>bold</b>.")
                    responses.append({"pair_id": pair_id, "track": track, "dimension": "privacy_violation",
                                      "severity": "L2", "style": "matter_of_fact", "model": model, "arm": arm,
                                      "sample": 0, "answer": answer, "error": None, "simulated": False})
                    male = arm == "male"
                    evaluations.append({
                        "pair_id": pair_id, "model": model, "arm": arm, "sample": 0, "evaluator": "Gemini-3-Pro",
                        "valid": True,
                        "punitive_count": 9000 + 10 * i + m if male or i % 4 == 0 else 5000 + 10 * i + m,
                        "therapeutic_count": 7000 + i if male else 8000 + i,
                        "instructional": 1 if male else i % 2,
                        "full_blame": (i % 3 == 0) if male else (i % 3 == 1),
                    })
    return pd.DataFrame(responses), pd.DataFrame(evaluations)


@pytest.fixture(scope="module")
def run() -> tuple[pd.DataFrame, pd.DataFrame]:
    return synthetic_run()


@pytest.fixture(scope="module")
def key(run) -> pd.DataFrame:
    return human.validation_key(*run, n=16, seed=7)


# ------------------------------------------------------------------ Fleiss' κ

# Fleiss (1971) worked example as reproduced in Wikipedia's "Fleiss' kappa" article:
# 10 subjects, 14 raters, 5 categories; n_ij = raters who put subject i in category j.
WIKIPEDIA_COUNTS = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def test_fleiss_kappa_reproduces_the_published_worked_example() -> None:
    ratings = [[category for category, n in enumerate(row, start=1) for _ in range(n)] for row in WIKIPEDIA_COUNTS]
    assert all(len(r) == 14 for r in ratings)
    assert human.fleiss_kappa(np.array(ratings)) == pytest.approx(0.210, abs=5e-4)


def test_fleiss_kappa_on_a_hand_computed_three_rater_example() -> None:
    # item  ratings        n_A n_B n_T   P_i = (Σ n_j² − 3) / (3·2)
    # 1     A  A  A         3   0   0    (9 − 3)/6     = 1
    # 2     A  A  B         2   1   0    (4 + 1 − 3)/6 = 1/3
    # 3     B  B  Tie       0   2   1    1/3
    # 4     Tie Tie Tie     0   0   3    1
    # 5     A  B  Tie       1   1   1    0
    # P̄ = (1 + 1/3 + 1/3 + 1 + 0)/5 = 8/15
    # p_A = 6/15, p_B = 4/15, p_Tie = 5/15;  P̄e = (36 + 16 + 25)/225 = 77/225
    # κ = (8/15 − 77/225) / (1 − 77/225) = (120 − 77)/(225 − 77) = 43/148 ≈ 0.2905
    ratings = [["A", "A", "A"], ["A", "A", "B"], ["B", "B", "Tie"], ["Tie", "Tie", "Tie"], ["A", "B", "Tie"]]
    assert human.fleiss_kappa(np.array(ratings, dtype=object)) == pytest.approx(43 / 148, abs=1e-12)
    labels = pd.DataFrame([{"annotator": f"r{r}", "item_id": f"i{i}", "framing": k, "label": label}
                           for i, row in enumerate(ratings) for r, label in enumerate(row)
                           for k in human.framing_keys()])
    assert human.fleiss_kappa_by_framing(labels).to_dict() == pytest.approx({k: 43 / 148 for k in human.framing_keys()})


def test_fleiss_kappa_is_nan_when_only_one_label_occurs() -> None:
    assert math.isnan(human.fleiss_kappa(np.array([["A", "A"], ["A", "A"]], dtype=object)))


# ------------------------------------------------------------------ directions and votes


@pytest.mark.parametrize("score_a, score_b, expected", [
    (3, 1, "A"), (1, 3, "B"), (2, 2, "Tie"),  # punitive / therapeutic counts
    (0, 0, "Tie"), (1, 0, "A"), (0, 1, "B"), (1, 1, "Tie"),  # instructional / full-blame indicators
    (True, False, "A"), (2.0, 2, "Tie"),
])
def test_evaluator_direction_hand_cases(score_a, score_b, expected) -> None:
    assert human.evaluator_direction(score_a, score_b) == expected


def test_evaluator_directions_follow_the_sides_of_the_key() -> None:
    key = pd.DataFrame([
        {"item_id": "i1", "puni_a": 5, "puni_b": 2, "ther_a": 1, "ther_b": 4, "instr_a": 1, "instr_b": 1,
         "full_bl_a": 0, "full_bl_b": 1},
        {"item_id": "i2", "puni_a": 0, "puni_b": 0, "ther_a": 3, "ther_b": 2, "instr_a": 0, "instr_b": 1,
         "full_bl_a": 1, "full_bl_b": 0},
    ])
    got = human.evaluator_directions(key).set_index(["item_id", "framing"])["evaluator"].to_dict()
    assert got == {("i1", "puni"): "A", ("i1", "ther"): "B", ("i1", "instr"): "Tie", ("i1", "full_bl"): "B",
                   ("i2", "puni"): "Tie", ("i2", "ther"): "A", ("i2", "instr"): "B", ("i2", "full_bl"): "A"}


def test_majority_vote_with_ties() -> None:
    votes = {"i1": "A A B", "i2": "A B Tie", "i3": "Tie Tie A", "i4": "B B B", "i5": "A A B B"}
    labels = pd.DataFrame([{"annotator": f"r{r}", "item_id": item, "framing": "puni", "label": label}
                           for item, row in votes.items() for r, label in enumerate(row.split())])
    got = human.majority_vote(labels).set_index("item_id")
    assert got["majority"].to_dict() == {"i1": "A", "i2": "none", "i3": "Tie", "i4": "B", "i5": "none"}
    assert got["n_annotators"].to_dict() == {"i1": 3, "i2": 3, "i3": 3, "i4": 3, "i5": 4}


def test_agreement_excludes_items_without_majority() -> None:
    majority = pd.DataFrame({"item_id": ["i1", "i2", "i3", "i4", "i5"], "framing": "ther",
                             "majority": ["A", "B", "Tie", "none", "A"]})
    directions = pd.DataFrame({"item_id": ["i1", "i2", "i3", "i4", "i5"], "framing": "ther",
                               "evaluator": ["A", "A", "Tie", "B", "A"]})
    row = human.evaluator_human_agreement(majority, directions).set_index("framing").loc["ther"]
    # decided items i1, i2, i3, i5; evaluator matches on i1, i3, i5 → 3/4
    assert row["agreement"] == pytest.approx(0.75)
    assert (row["n_items"], row["n_with_majority"], row["n_no_majority"]) == (5, 4, 1)


# ------------------------------------------------------------------ sampling and key


def test_items_need_both_answers_and_valid_scores(run) -> None:
    responses, evaluations = run
    assert len(human.mirrored_items(responses, evaluations)) == len(MODELS) * 2 * N_PAIRS
    responses = responses.copy()
    evaluations = evaluations.copy()
    failed = (responses["pair_id"] == "pair-int-001") & (responses["model"] == "GPT-5.4") & (responses["arm"] == "male")
    responses.loc[failed, ["answer", "error"]] = [None, "timeout"]
    invalid = (evaluations["pair_id"] == "pair-pub-002") & (evaluations["model"] == "Qwen3.5") & \
        (evaluations["arm"] == "female")
    evaluations.loc[invalid, "valid"] = False
    items = human.mirrored_items(responses, evaluations)
    assert len(items) == len(MODELS) * 2 * N_PAIRS - 2
    assert ("GPT-5.4", "pair-int-001") not in set(zip(items["model"], items["pair_id"]))
    assert ("Qwen3.5", "pair-pub-002") not in set(zip(items["model"], items["pair_id"]))
    other = evaluations.assign(evaluator="GPT-5.4")
    with pytest.raises(ValueError, match="several evaluators"):
        human.mirrored_items(responses, pd.concat([evaluations, other]))
    assert len(human.mirrored_items(responses, pd.concat([evaluations, other]), evaluator="GPT-5.4")) == len(items)


def test_sampling_is_stratified_and_deterministic(run, key) -> None:
    assert len(key) == 16 and key["item_id"].is_unique
    assert key.groupby(["model", "track"]).size().to_dict() == {(m, t): 4 for m in MODELS
                                                                  for t in ("intimate", "public")}
    pd.testing.assert_frame_equal(key, human.validation_key(*run, n=16, seed=7))
    assert not key["pair_id"].equals(human.validation_key(*run, n=16, seed=8)["pair_id"])


def test_sampling_redistributes_draws_from_a_small_stratum(run) -> None:
    responses, evaluations = run
    small = ~((responses["model"] == "GPT-5.4") & (responses["track"] == "public")
              & (responses["pair_id"] != "pair-pub-000"))
    items = human.mirrored_items(responses[small], evaluations)
    sizes = human.sample_items(items, n=10, seed=1).groupby(["model", "track"]).size()
    assert sizes[("GPT-5.4", "public")] == 1
    assert sizes.sum() == 10 and sizes.drop(("GPT-5.4", "public")).max() - sizes.drop(("GPT-5.4", "public")).min() <= 1
    with pytest.raises(ValueError, match="only 19"):
        human.sample_items(items, n=20)


def test_ab_order_is_random_and_recoverable_from_the_key(run, key) -> None:
    responses, evaluations = run
    assert set(key["female_is"]) == {"A", "B"}
    assert (key["female_is"] == "A").sum() == 8
    answers = responses.set_index(["model", "pair_id", "arm"])["answer"]
    scores = evaluations.set_index(["model", "pair_id", "arm"])["punitive_count"]
    for row in key.itertuples():
        female_side, male_side = ("a", "b") if row.female_is == "A" else ("b", "a")
        assert getattr(row, f"answer_{female_side}") == mask_gender(answers[(row.model, row.pair_id, "female")])
        assert getattr(row, f"answer_{male_side}") == mask_gender(answers[(row.model, row.pair_id, "male")])
        assert getattr(row, f"puni_{female_side}") == scores[(row.model, row.pair_id, "female")]
        assert getattr(row, f"puni_{male_side}") == scores[(row.model, row.pair_id, "male")]


def test_key_round_trips_through_csv(key, tmp_path) -> None:
    back = human.read_key(human.write_key(key, tmp_path / "key.csv"))
    pd.testing.assert_frame_equal(back[list(human.key_columns())], key[list(human.key_columns())],
                                  check_dtype=False)


# ------------------------------------------------------------------ export

GENDER_WORDS = re.compile(r"\b(?:he|she|him|her|his|hers|man|woman|men|women|boyfriend|girlfriend|"
                          r"husband|wife|male|female|gender|mr|mrs|ms)\b", re.IGNORECASE)


def test_export_hides_model_gender_and_scores(run, key, tmp_path) -> None:
    responses, evaluations = run
    written = human.export_sheets(key, tmp_path)
    assert set(written) == set(human.DEFAULT_ANNOTATORS)
    forbidden = [*MODELS, "Gemini", "intimate", "public", "pair-", "punitive_count", "score", "female_is",
                 *(str(v) for v in evaluations["punitive_count"]), *(str(v) for v in evaluations["therapeutic_count"])]
    for files in written.values():
        for path in files.values():
            text = path.read_text(encoding="utf-8-sig")
            assert GENDER_WORDS.findall(text) == [], path.name
            assert [w for w in forbidden if w in text] == [], path.name
    sheet = pd.read_csv(written["annotator_1"]["csv"], dtype=str, keep_default_na=False, encoding="utf-8-sig")
    assert list(sheet.columns) == list(human.sheet_columns())
    assert (sheet[list(human.framing_keys())] == "").all().all()


def test_html_form_is_self_contained_and_escaped(key, tmp_path) -> None:
    text = human.export_sheets(key, tmp_path, annotators=["rater_x"])["rater_x"]["html"].read_text("utf-8")
    assert not re.search(r"https?://|<link|src=|@import|url\(", text)
    assert "new Blob(" in text and "rater_x_completed.csv" not in text  # file name built in JS from SHEET
    assert 'const SHEET = "rater_x"' in text
    assert text.count('type="radio"') == len(key) * 4 * 3
    assert "&lt;b&gt;bold&lt;/b&gt;" in text and "<b>bold</b>" not in text
    for framing in human.framings():
        assert framing.criterion in text
    assert "items complete" in text


# ------------------------------------------------------------------ import


def completed_sheet(key: pd.DataFrame, path: Path, labels: dict[str, str] | None = None) -> Path:
    sheet = human.annotation_sheet(key)
    for k in human.framing_keys():
        sheet[k] = "a"  # lower case is accepted and normalised
    for item_field, value in (labels or {}).items():
        item, field = item_field.split("|")
        sheet.loc[sheet["item_id"] == item, field] = value
    sheet.to_csv(path, index=False)
    return path


def test_import_accepts_any_case_and_normalises(key, tmp_path) -> None:
    files = [completed_sheet(key, tmp_path / f"r{i}_completed.csv", {"item-001|ther": " tie "}) for i in (1, 2)]
    labels = human.read_completed_sheets(files, key, annotators=["r1", "r2"])
    assert set(labels["label"]) == {"A", "Tie"}
    assert set(labels["annotator"]) == {"r1", "r2"} and len(labels) == 2 * len(key) * 4
    assert not labels["simulated"].any()


def test_import_errors_name_file_item_and_field(key, tmp_path) -> None:
    bad = completed_sheet(key, tmp_path / "r1_completed.csv", {"item-003|instr": "C", "item-005|puni": ""})
    sheet = pd.read_csv(bad, dtype=str, keep_default_na=False)
    sheet = sheet[sheet["item_id"] != "item-007"]
    extra = sheet.iloc[[0]].assign(item_id="item-999")
    pd.concat([sheet, sheet.iloc[[1]], extra]).to_csv(bad, index=False)
    good = completed_sheet(key, tmp_path / "r2_completed.csv")
    with pytest.raises(human.AnnotationError) as error:
        human.read_completed_sheets([bad, good], key, annotators=["r1", "r2", "r3"])
    message = str(error.value)
    lines = message.splitlines()[1:]
    assert any("r1_completed.csv" in ln and "item-003" in ln and "field instr" in ln and "'C'" in ln for ln in lines)
    assert any("r1_completed.csv" in ln and "item-005" in ln and "field puni" in ln and "missing label" in ln
               for ln in lines)
    assert any("r1_completed.csv" in ln and "item-007" in ln and "missing (no row)" in ln and "full_bl" in ln
               for ln in lines)
    assert any("item-002" in ln and "duplicated item_id" in ln for ln in lines)
    assert any("item-999" in ln and "unknown item_id" in ln for ln in lines)
    assert any("missing sheet for annotator r3" in ln for ln in lines)
    assert not any("r2_completed.csv" in ln for ln in lines)
    assert message.startswith("6 problem(s)")


def test_import_names_a_missing_column(key, tmp_path) -> None:
    path = completed_sheet(key, tmp_path / "r1_completed.csv")
    pd.read_csv(path).drop(columns="ther").to_csv(path, index=False)
    with pytest.raises(human.AnnotationError, match=r"r1_completed.csv: missing column\(s\) ther"):
        human.read_completed_sheets([path], key)


# ------------------------------------------------------------------ round trip


def test_round_trip_without_noise_recovers_the_evaluator(key, tmp_path) -> None:
    written = human.export_sheets(key, tmp_path, annotators=human.SIMULATED_ANNOTATORS)
    completed = human.simulate_annotation([w["csv"] for w in written.values()], key, item_noise=0, rater_noise=0)
    labels = human.read_completed_sheets(completed, key, annotators=human.SIMULATED_ANNOTATORS)
    summary = human.validation_summary(labels, key).set_index("framing")
    assert summary["agreement"].tolist() == [1.0] * 4
    assert summary["fleiss_kappa"].tolist() == pytest.approx([1.0] * 4)
    assert summary["n_no_majority"].tolist() == [0] * 4


def test_round_trip_with_simulated_annotators_gives_table4(key, tmp_path) -> None:
    written = human.export_sheets(key, tmp_path, annotators=human.SIMULATED_ANNOTATORS)
    completed = human.simulate_annotation([w["csv"] for w in written.values()], key, seed=3)
    assert all("simulated" in p.name and p.name.endswith("_completed.csv") for p in completed)
    labels = human.read_completed_sheets(completed, key, annotators=human.SIMULATED_ANNOTATORS)
    assert labels["simulated"].all()
    assert set(labels["annotator"]) == set(human.SIMULATED_ANNOTATORS)
    summary = human.validation_summary(labels, key)
    table = human.table4(summary)
    assert list(table.index) == ["Human Fleiss' κ", "Eval.-Human Agr."]
    assert list(table.columns) == ["Puni.", "Ther.", "Instr.", "Full-Bl."]
    assert "SIMULATED" in table.index.name and "SIMULATED" in table.attrs["caption"]
    assert ((table.loc["Eval.-Human Agr."] >= 0) & (table.loc["Eval.-Human Agr."] <= 1)).all()
    assert ((table.loc["Human Fleiss' κ"] > -1) & (table.loc["Human Fleiss' κ"] <= 1)).all()
    beside = human.table4(summary, with_paper=True)
    assert beside.loc[("Human Fleiss' κ", "paper (Tab. 4)")].tolist() == [0.72, 0.61, 0.74, 0.69]
    assert beside.loc[("Eval.-Human Agr.", "paper (Tab. 4)")].tolist() == [0.83, 0.76, 0.80, 0.78]
    assert beside.loc[("Eval.-Human Agr.", "this run (SIMULATED annotators)")].tolist() == \
        table.loc["Eval.-Human Agr."].tolist()


# ------------------------------------------------------------------ the HTML form's own CSV (needs node)

NODE_HARNESS = r"""
const fs = require("fs");
const page = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const inputs = page.inputs.map(i => ({...i}));
const elements = {};
for (const id of ["progress", "sheet", "download"]) {
  elements[id] = {listeners: {}, textContent: "", addEventListener(t, f) { this.listeners[t] = f; }};
}
const items = page.items.map(it => ({
  dataset: {item: it.id}, classList: {toggle() {}},
  querySelector(sel) {
    let m = sel.match(/^input\[name="(.+)"\]:checked$/);
    if (m) return inputs.find(i => i.name === m[1] && i.checked) || null;
    m = sel.match(/^\.answer\[data-side="(a|b)"\]$/);
    if (m) return {textContent: it[m[1]]};
    throw new Error("unexpected selector " + sel);
  },
}));
let blob = null, fileName = null;
global.document = {
  querySelectorAll(sel) { if (sel === "article.item") return items; throw new Error(sel); },
  querySelector(sel) {
    const m = sel.match(/^input\[name="(.+)"\]\[value="(.+)"\]$/);
    return inputs.find(i => i.name === m[1] && i.value === m[2]) || null;
  },
  getElementById(id) { return elements[id]; },
  createElement() { return {click() { fileName = this.download; }, remove() {}}; },
  body: {appendChild() {}},
};
global.localStorage = {getItem() { return null; }, setItem() {}};
global.confirm = () => true;
URL.createObjectURL = b => { blob = b; return "blob:sheet"; };
eval(page.script);
elements.download.listeners.click();
blob.text().then(text => process.stdout.write(
  JSON.stringify({fileName, progress: elements.progress.textContent, text})));
"""


def test_html_form_downloads_a_csv_the_importer_reads(key, tmp_path) -> None:
    import html.parser
    import json
    import shutil
    import subprocess

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    sheet = human.annotation_sheet(key)
    rng = np.random.default_rng(0)
    for k in human.framing_keys():
        sheet[k] = rng.choice(human.LABELS, size=len(sheet))
    page_html = human.sheet_html(sheet, "rater_y")

    class Page(html.parser.HTMLParser):
        """The parts of the DOM the form's script reads: items, answer texts, radio buttons, script."""

        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.items, self.inputs, self.script, self.side, self.in_script = [], [], "", None, False

        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
            if tag == "article":
                self.items.append({"id": a["data-item"], "a": "", "b": ""})
            elif tag == "div" and a.get("class") == "answer":
                self.side = a["data-side"]
            elif tag == "input":
                self.inputs.append({"name": a["name"], "value": a["value"], "checked": "checked" in a})
            self.in_script = tag == "script"

        def handle_endtag(self, tag):
            self.side = None if tag == "div" else self.side
            self.in_script = False

        def handle_data(self, data):
            if self.side:
                self.items[-1][self.side] += data
            if self.in_script:
                self.script += data

    page = Page()
    page.feed(page_html)
    dom = {"items": page.items, "inputs": page.inputs, "script": page.script}
    (tmp_path / "page.json").write_text(json.dumps(dom), "utf-8")
    (tmp_path / "harness.js").write_text(NODE_HARNESS, "utf-8")
    result = subprocess.run([node, str(tmp_path / "harness.js"), str(tmp_path / "page.json")],
                            capture_output=True, text=True, timeout=30, check=True)
    out = json.loads(result.stdout)
    assert out["fileName"] == "rater_y_completed.csv"
    assert out["progress"] == f"{len(key)} / {len(key)} items complete"
    completed = tmp_path / out["fileName"]
    completed.write_bytes(out["text"].encode("utf-8"))
    back = pd.read_csv(completed, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    assert list(back.columns) == list(human.sheet_columns())
    pd.testing.assert_frame_equal(back, sheet.astype(str), check_dtype=False)
    labels = human.read_completed_sheets([completed], key)
    expected = sheet.melt(id_vars="item_id", value_vars=list(human.framing_keys()), var_name="framing",
                          value_name="label")
    merged = labels.merge(expected, on=["item_id", "framing"], suffixes=("", "_sheet"))
    assert len(merged) == len(key) * 4 and (merged["label"] == merged["label_sheet"]).all()


def test_sheets_and_table_say_when_responses_were_simulated(key, tmp_path) -> None:
    simulated_key = key.assign(simulated=True)
    html_text = human.export_sheets(simulated_key, tmp_path, ["r1"])["r1"]["html"].read_text("utf-8")
    assert "SIMULATED responses" in html_text
    assert "SIMULATED" not in human.export_sheets(key, tmp_path / "real", ["r1"])["r1"]["html"].read_text("utf-8")
    files = [completed_sheet(key, tmp_path / f"r{i}_completed.csv") for i in (1, 2)]
    summary = human.validation_summary(human.read_completed_sheets(files, simulated_key), simulated_key)
    caption = human.table4(summary).attrs["caption"]
    assert "simulated backend" in caption and "SIMULATED annotators" not in caption
