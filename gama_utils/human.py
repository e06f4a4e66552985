"""Human validation of the evaluator-based framing metrics (paper §4.5, App. F, Tables 4 and 9).

Workflow (notebook 08_robustness):
1. `validation_key(responses, evaluations)`: sample n items (default 200), an item being one
   target model × mirrored pair with its male- and female-actor answer (sample 0), stratified
   by model × track. Each item gets a random A/B order, and both answers are masked for gender
   markers (`gama_utils.blind`). The key (item_id → pair_id, model, track, which side is the
   female actor, the evaluator's scores of A and B) stays with the researcher: `write_key`.
2. `export_sheets(key, out_dir)`: one sheet per annotator, as CSV and as a self-contained HTML
   form (works offline from file://, saves the labels as CSV). Sheets show only item_id and
   the two masked answers: no actor gender, model, scores or study hypothesis.
3. `read_completed_sheets(files, key)`: the labels (A / B / Tie per framing dimension), with
   errors that name file, item and field.
4. `validation_summary(labels, key)` and `table4(summary, with_paper=True)`: Fleiss' κ per
   dimension (statsmodels), human majority vote (more than half the annotators, else "none"),
   evaluator-derived A/B/Tie direction (A if A's score is higher, B if lower, Tie if equal) and
   the share of items where it equals the majority (items with no majority are counted and
   excluded), beside the paper's Table 4.

`simulate_annotation` fills exported sheets from the hidden evaluator scores plus seeded noise
so the pipeline runs offline; its sheets, labels and tables all say "simulated".

Frames:
key, one row per item: item_id, pair_id, model, track, dimension, severity, style, female_is
    ("A"/"B"), answer_a, answer_b (masked), <framing>_a, <framing>_b (evaluator scores; the framings
    are the metrics that declare a human question, the paper's puni/ther/instr/full_bl), simulated
    (responses or evaluations were simulated)
sheet, one row per item: item_id, answer_a, answer_b, one label column per framing
labels, one row per annotator × item × framing: annotator, item_id, framing, label, simulated, file
"""

from __future__ import annotations

import html
import json
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from statsmodels.stats import inter_rater

from gama_utils import paper, paths
from gama_utils.blind import gender_markers, mask_gender
from gama_utils.metrics import HUMAN_OPTIONS, metric, metrics
from gama_utils.schema import require


@dataclass(frozen=True)
class Framing:
    """One dimension of the expert validation scale (Table 9): a metric's `human` question."""

    key: str  # the metric key of gama_utils.metrics
    name: str
    criterion: str
    options: tuple[str, ...]  # captions of the answers A, B, Tie

    @property
    def label(self) -> str:
        return metric(self.key).label

    @property
    def score_column(self) -> str:
        return metric(self.key).column


def framings() -> tuple[Framing, ...]:
    """The framings annotators judge: every registered metric that declares a human question."""
    return tuple(Framing(m.key, m.human.name, m.human.question, m.human.options) for m in metrics() if m.human)


def framing_keys() -> tuple[str, ...]:
    """The metric keys of `framings()`, which are also the sheet's label columns."""
    return tuple(f.key for f in framings())


def sheet_columns() -> tuple[str, ...]:
    """Columns of an annotator's sheet."""
    return ("item_id", "answer_a", "answer_b", *framing_keys())


def key_columns() -> tuple[str, ...]:
    """Columns every key has."""
    return ("item_id", "pair_id", "model", "track", "female_is", "answer_a", "answer_b",
            *(f"{k}_{side}" for k in framing_keys() for side in ("a", "b")), "simulated")


LABELS: tuple[str, ...] = HUMAN_OPTIONS
NO_MAJORITY = "none"
DEFAULT_ANNOTATORS: tuple[str, ...] = ("annotator_1", "annotator_2", "annotator_3")
SIMULATED_ANNOTATORS: tuple[str, ...] = ("simulated_annotator_1", "simulated_annotator_2",
                                         "simulated_annotator_3")
COMPLETED_SUFFIX = "_completed"

KAPPA_ROW = "Human Fleiss' κ"
AGREEMENT_ROW = "Eval.-Human Agr."


class AnnotationError(ValueError):
    """Completed sheets that cannot be used; the message lists every problem (file, item, field)."""


# --------------------------------------------------------------------------- sampling


def mirrored_items(responses: pd.DataFrame, evaluations: pd.DataFrame,
                   evaluator: str | None = None) -> pd.DataFrame:
    """One row per model × pair with a usable male and female answer (sample 0) and valid scores.

    Columns: model, pair_id, track (+ dimension, severity, style when present), answer_male,
    answer_female, <framing>_male, <framing>_female, simulated.
    """
    require(responses, ("pair_id", "track", "model", "arm", "sample", "answer"), "responses")
    score_columns = [f.score_column for f in framings()]
    require(evaluations, ("pair_id", "model", "arm", "sample", "evaluator", "valid", *score_columns),
            "evaluations")
    evaluators = sorted(evaluations["evaluator"].dropna().unique())
    if evaluator is None and len(evaluators) > 1:
        raise ValueError(f"evaluations come from several evaluators ({', '.join(evaluators)}); pass evaluator=")
    if evaluator is not None:
        if evaluator not in evaluators:
            raise ValueError(f"no evaluations by {evaluator!r}; found {', '.join(evaluators) or 'none'}")
        evaluations = evaluations[evaluations["evaluator"] == evaluator]

    keys = ["pair_id", "model", "arm", "sample"]
    answered = responses[(responses["sample"] == 0) & responses["arm"].isin(["male", "female"])]
    if "error" in answered:
        answered = answered[answered["error"].isna()]
    answered = answered[answered["answer"].map(lambda a: isinstance(a, str) and a.strip() != "")]
    scored = evaluations[(evaluations["sample"] == 0) & evaluations["valid"].astype(bool)]
    duplicated = scored.duplicated(keys)
    if duplicated.any():
        row = scored[duplicated].iloc[0]
        raise ValueError(f"evaluations: several rows for pair {row['pair_id']}, model {row['model']}, "
                         f"arm {row['arm']} (filter on evaluator/blind first)")
    cell = [c for c in ("track", "dimension", "severity", "style") if c in answered]
    merged = answered[[*keys, *cell, "answer"] + (["simulated"] if "simulated" in answered else [])].merge(
        scored[keys + score_columns + (["simulated"] if "simulated" in scored else [])],
        on=keys, suffixes=("", "_evaluation"))
    flags = merged.filter(like="simulated")
    merged["simulated"] = flags.apply(lambda c: c.fillna(False).astype(bool)).any(axis=1) if flags.shape[1] \
        else False

    names = {"answer": "answer", "simulated": "simulated", **{f.score_column: f.key for f in framings()}}
    wide = merged.pivot(index=["model", "pair_id"], columns="arm", values=list(names))
    wide.columns = [f"{names[column]}_{arm}" for column, arm in wide.columns]
    wide = wide.reindex(columns=[f"{name}_{arm}" for name in names.values() for arm in ("male", "female")])
    wide = wide.dropna(subset=["answer_male", "answer_female"])
    cells = merged.drop_duplicates(["model", "pair_id"]).set_index(["model", "pair_id"])[cell]
    items = cells.join(wide, how="inner").reset_index()
    items["simulated"] = items.pop("simulated_male").astype(bool) | items.pop("simulated_female").astype(bool)
    for f in framings():
        for arm in ("male", "female"):
            items[f"{f.key}_{arm}"] = pd.to_numeric(items[f"{f.key}_{arm}"]).astype(float)
    return items.sort_values(["model", "track", "pair_id"], key=lambda s: s.astype(str)).reset_index(drop=True)


def _allocate(sizes: pd.Series, n: int, rng: np.random.Generator) -> pd.Series:
    """Equal allocation of n draws over strata (water-filling), capped at each stratum's size.

    Draws go one at a time to the stratum with the fewest so far that still has items; ties are
    broken by a random order of the strata.
    """
    order = rng.permutation(len(sizes))
    allocation = np.zeros(len(sizes), dtype=int)
    capacity = sizes.to_numpy()
    for _ in range(n):
        open_strata = np.flatnonzero(allocation < capacity)
        allocation[min(open_strata, key=lambda s: (allocation[s], order[s]))] += 1
    return pd.Series(allocation, index=sizes.index)


def sample_items(items: pd.DataFrame, n: int = 200, seed: int = 0) -> pd.DataFrame:
    """n items stratified by model × track (equal shares; a small stratum's spare draws go to the others)."""
    require(items, ("model", "track", "pair_id"), "items")
    if n > len(items):
        raise ValueError(f"asked for {n} items but only {len(items)} model × pair items have both answers "
                         f"and valid scores")
    rng = np.random.default_rng(seed)
    ordered = items.sort_values(["model", "track", "pair_id"], key=lambda s: s.astype(str))
    strata = ordered.groupby(["model", "track"], sort=True)
    allocation = _allocate(strata.size(), n, rng)
    picked = [group.iloc[np.sort(rng.choice(len(group), size=allocation[name], replace=False))]
              for name, group in strata if allocation[name] > 0]
    return pd.concat(picked, ignore_index=True)


def validation_key(responses: pd.DataFrame, evaluations: pd.DataFrame, n: int = 200, seed: int = 0,
                   evaluator: str | None = None) -> pd.DataFrame:
    """Sample the validation set and build its key: random item ids, random A/B order, masked answers.

    The female answer is side A for half the items (randomly chosen), side B for the others.
    """
    sample = sample_items(mirrored_items(responses, evaluations, evaluator), n=n, seed=seed)
    rng = np.random.default_rng([seed, 1])
    sample = sample.iloc[rng.permutation(len(sample))].reset_index(drop=True)
    width = max(3, len(str(len(sample))))
    sample.insert(0, "item_id", [f"item-{i + 1:0{width}d}" for i in range(len(sample))])
    female_is = np.array(["A"] * ((len(sample) + 1) // 2) + ["B"] * (len(sample) // 2))
    sample["female_is"] = rng.permutation(female_is)
    female_a = sample["female_is"] == "A"
    for column in ("answer", *framing_keys()):
        male, female = sample[f"{column}_male"], sample[f"{column}_female"]
        sample[f"{column}_a"] = female.where(female_a, male)
        sample[f"{column}_b"] = male.where(female_a, female)
    for side in ("a", "b"):
        sample[f"answer_{side}"] = sample[f"answer_{side}"].map(mask_gender)
    leftover = {row.item_id: gender_markers(row.answer_a) + gender_markers(row.answer_b)
                for row in sample.itertuples()}
    leftover = {item: found for item, found in leftover.items() if found}
    if leftover:
        warnings.warn(f"gender markers left after masking in {len(leftover)} item(s), e.g. "
                      f"{next(iter(leftover.items()))}", stacklevel=2)
    cell = [c for c in ("dimension", "severity", "style") if c in sample]
    columns = ["item_id", "pair_id", "model", "track", *cell, *key_columns()[4:]]
    return sample[columns]


def write_key(key: pd.DataFrame, path: str | Path) -> Path:
    """Write the key (keep it away from the annotators) as CSV."""
    require(key, key_columns(), "key")
    path = paths.resolve(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    key.to_csv(path, index=False, encoding="utf-8")
    return path


def read_key(path: str | Path) -> pd.DataFrame:
    """Read a key written by `write_key`."""
    path = paths.resolve(path)
    text_columns = {c: str for c in ("item_id", "pair_id", "model", "track", "female_is", "answer_a",
                                     "answer_b", "dimension", "severity", "style")}
    key = pd.read_csv(path, dtype=text_columns, keep_default_na=False, encoding="utf-8")
    require(key, key_columns(), f"key {path.name}")
    key["simulated"] = key["simulated"].astype(str).str.lower().isin(["true", "1"])
    return key


# --------------------------------------------------------------------------- export


def annotation_sheet(key: pd.DataFrame) -> pd.DataFrame:
    """The blank sheet an annotator sees: item_id, the two masked answers, empty label columns."""
    require(key, ("item_id", "answer_a", "answer_b"), "key")
    sheet = key[["item_id", "answer_a", "answer_b"]].sort_values("item_id").reset_index(drop=True)
    for k in framing_keys():
        sheet[k] = ""
    return sheet


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;background:#f5f5f2;color:#222}
header{position:sticky;top:0;background:#fff;border-bottom:1px solid #ccc;padding:.6em 1.2em;display:flex;
gap:1.5em;align-items:center;z-index:1}
header h1{font-size:1.1em;margin:0}#progress{font-weight:bold}
button{font-size:1em;padding:.4em 1em;cursor:pointer}
main{max-width:1200px;margin:auto;padding:1em}
.instructions,.item{background:#fff;border:1px solid #ddd;border-radius:6px;padding:1em;margin-bottom:1em}
.item.complete{border-left:6px solid #3a7}
.answers{display:grid;grid-template-columns:1fr 1fr;gap:1em}
.answer{white-space:pre-wrap;border:1px solid #eee;background:#fafafa;padding:.6em;max-height:28em;overflow:auto}
table{border-collapse:collapse;width:100%;margin-top:.8em}
th,td{border:1px solid #ddd;padding:.3em .5em;text-align:left}
td.choice{text-align:center;width:3.5em}
"""

_JS = """
const STORE = "gama-validation-" + SHEET;
const items = () => Array.from(document.querySelectorAll("article.item"));
function value(item, field) {
  const c = item.querySelector('input[name="' + item.dataset.item + "|" + field + '"]:checked');
  return c ? c.value : "";
}
function update() {
  let done = 0;
  const saved = {};
  for (const item of items()) {
    const values = FIELDS.map(f => value(item, f));
    const complete = values.every(v => v !== "");
    if (complete) done += 1;
    item.classList.toggle("complete", complete);
    saved[item.dataset.item] = values;
  }
  document.getElementById("progress").textContent = done + " / " + items().length + " items complete";
  try { localStorage.setItem(STORE, JSON.stringify(saved)); } catch (e) {}
  return done;
}
function restore() {
  let saved = {};
  try { saved = JSON.parse(localStorage.getItem(STORE) || "{}"); } catch (e) {}
  for (const [id, values] of Object.entries(saved)) {
    values.forEach((v, k) => {
      const el = document.querySelector('input[name="' + id + "|" + FIELDS[k] + '"][value="' + v + '"]');
      if (el) el.checked = true;
    });
  }
}
const quote = s => '"' + String(s).replace(/"/g, '""') + '"';
function csv() {
  const rows = [["item_id", "answer_a", "answer_b", ...FIELDS]];
  for (const item of items()) {
    rows.push([item.dataset.item,
               item.querySelector('.answer[data-side="a"]').textContent,
               item.querySelector('.answer[data-side="b"]').textContent,
               ...FIELDS.map(f => value(item, f))]);
  }
  return "\\ufeff" + rows.map(r => r.map(quote).join(",")).join("\\r\\n") + "\\r\\n";
}
function download() {
  const open = items().length - update();
  if (open > 0 && !confirm(open + " item(s) are not complete. Download anyway?")) return;
  const url = URL.createObjectURL(new Blob([csv()], {type: "text/csv;charset=utf-8"}));
  const link = document.createElement("a");
  link.href = url;
  link.download = SHEET + "_completed.csv";
  document.body.appendChild(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
document.getElementById("sheet").addEventListener("change", update);
document.getElementById("download").addEventListener("click", download);
restore();
update();
"""


SIMULATED_RESPONSES_NOTE = ("SIMULATED responses: these answers come from the offline simulated backend; "
                            "the sheet exercises the pipeline and its labels are not a finding.")


def sheet_html(sheet: pd.DataFrame, name: str, note: str | None = None) -> str:
    """A self-contained HTML form for one annotator's sheet (inline CSS/JS, no external resources)."""
    require(sheet, sheet_columns(), f"sheet {name}")
    esc = html.escape
    criteria = "".join(f"<tr><td>{esc(f.name)}</td><td>{esc(f.criterion)}</td></tr>" for f in framings())
    articles = []
    for row in sheet.itertuples(index=False):
        item = esc(row.item_id)
        choices = "".join(
            f"<tr><td>{esc(f.name)}</td>"
            + "".join(f'<td class="choice"><label><input type="radio" name="{item}|{f.key}" value="{label}"'
                      f'{" checked" if str(getattr(row, f.key)).strip() == label else ""}> {esc(caption)}</label></td>'
                      for label, caption in zip(LABELS, f.options))
            + f"<td>{esc(f.criterion)}</td></tr>"
            for f in framings())
        articles.append(
            f'<article class="item" data-item="{item}"><h2>{item}</h2><div class="answers">'
            f'<div><h3>Response A</h3><div class="answer" data-side="a">{esc(row.answer_a)}</div></div>'
            f'<div><h3>Response B</h3><div class="answer" data-side="b">{esc(row.answer_b)}</div></div></div>'
            f"<table><tr><th>Framing dimension</th><th>A</th><th>B</th><th>Tie</th><th>Criterion</th></tr>"
            f"{choices}</table></article>")
    sheet_name = json.dumps(name).replace("<", "\\u003c")
    fields = json.dumps(list(framing_keys())).replace("<", "\\u003c")
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Response comparison: {esc(name)}</title><style>{_CSS}</style></head><body>"
        f'<header><h1>Response comparison: {esc(name)}</h1><span id="progress"></span>'
        f'<button type="button" id="download">Download completed CSV</button></header><main>'
        + (f'<p class="note"><b>{esc(note)}</b></p>' if note else "")
        + f'<section class="instructions"><p>Each item shows two responses to the same request. Read both, '
        f"then choose A, B or Tie on each of the four framing dimensions: the response that shows more "
        f"of it, or Tie when the two do not differ. Your choices are kept in this browser while you work; "
        f"when you are done, press <b>Download completed CSV</b> and send the file back.</p>"
        f"<table><tr><th>Framing dimension</th><th>Criterion</th></tr>{criteria}</table></section>"
        f'<form id="sheet">{"".join(articles)}</form></main>'
        f"<script>const SHEET = {sheet_name};const FIELDS = {fields};{_JS}</script></body></html>\n")


def export_sheets(key: pd.DataFrame, out_dir: str | Path,
                  annotators: Sequence[str] = DEFAULT_ANNOTATORS) -> dict[str, dict[str, Path]]:
    """Write <annotator>.csv and <annotator>.html for each annotator under out_dir; return their paths."""
    if len(set(annotators)) != len(annotators) or not annotators:
        raise ValueError(f"annotator names must be distinct and non-empty, got {list(annotators)}")
    out_dir = paths.resolve(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    sheet = annotation_sheet(key)
    written = {}
    for name in annotators:
        csv_path, html_path = out_dir / f"{name}.csv", out_dir / f"{name}.html"
        sheet.to_csv(csv_path, index=False, encoding="utf-8-sig")
        note = SIMULATED_RESPONSES_NOTE if "simulated" in key and key["simulated"].any() else None
        html_path.write_text(sheet_html(sheet, name, note), encoding="utf-8")
        written[name] = {"csv": csv_path, "html": html_path}
    return written


# --------------------------------------------------------------------------- simulated annotators


def _other_label(label: str, rng: np.random.Generator) -> str:
    return str(rng.choice([other for other in LABELS if other != label]))


def simulated_labels(sheet: pd.DataFrame, key: pd.DataFrame, annotator: int, item_noise: float = 0.15,
                     rater_noise: float = 0.15, seed: int = 0) -> pd.DataFrame:
    """A sheet filled by simulated annotator number `annotator` (SIMULATED, not human judgement).

    Each item × framing has a latent label: the evaluator direction, replaced with probability
    `item_noise` by another label (shared by all simulated annotators); each annotator copies the
    latent label and replaces it with probability `rater_noise`.
    """
    directions = evaluator_directions(key).set_index(["item_id", "framing"])["evaluator"]
    item_rng, rater_rng = np.random.default_rng([seed, 2]), np.random.default_rng([seed, 3, annotator])
    filled = sheet.copy()
    for k in framing_keys():
        column = []
        for item in sorted(key["item_id"]):  # fixed draw order, whatever the sheet's row order
            latent = directions[(item, k)]
            if item_rng.random() < item_noise:
                latent = _other_label(latent, item_rng)
            column.append(_other_label(latent, rater_rng) if rater_rng.random() < rater_noise else latent)
        filled[k] = filled["item_id"].map(dict(zip(sorted(key["item_id"]), column)))
    filled["simulated"] = True
    return filled


def simulate_annotation(sheet_files: Iterable[str | Path], key: pd.DataFrame, item_noise: float = 0.15,
                        rater_noise: float = 0.15, seed: int = 0) -> list[Path]:
    """Fill exported CSV sheets with simulated labels; write <name>[_simulated]_completed.csv beside them."""
    written = []
    for number, file in enumerate(sheet_files, start=1):
        file = paths.resolve(file)
        sheet = pd.read_csv(file, dtype=str, keep_default_na=False, encoding="utf-8-sig")
        unknown = sorted(set(sheet["item_id"]) - set(key["item_id"]))
        if unknown:
            raise AnnotationError(f"{file.name}: item(s) not in the key: {', '.join(unknown[:5])}")
        filled = simulated_labels(sheet, key, number, item_noise, rater_noise, seed)
        stem = file.stem if "simulated" in file.stem else f"{file.stem}_simulated"
        out = file.with_name(f"{stem}{COMPLETED_SUFFIX}.csv")
        filled.to_csv(out, index=False, encoding="utf-8-sig")
        written.append(out)
    return written


# --------------------------------------------------------------------------- import


def normalise_label(value: object) -> str | None:
    """'a', ' B ', 'TIE' → 'A', 'B', 'Tie'; '' → ''; anything else → None."""
    text = "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value).strip()
    if text == "":
        return ""
    return {label.lower(): label for label in LABELS}.get(text.lower())


def annotator_name(file: str | Path) -> str:
    """annotator_2_completed.csv → annotator_2."""
    stem = Path(file).stem
    return stem[: -len(COMPLETED_SUFFIX)] if stem.endswith(COMPLETED_SUFFIX) else stem


def read_completed_sheets(files: Iterable[str | Path], key: pd.DataFrame,
                          annotators: Sequence[str] | None = None) -> pd.DataFrame:
    """Read completed sheets into the long labels frame; raise AnnotationError listing every problem.

    Checks: file exists and has item_id and the four label columns; every label is A, B or Tie
    (any case); no unknown, duplicated or missing item_id against the key; one file per
    annotator; every expected annotator (if `annotators` is given) has a file.
    """
    require(key, ("item_id",), "key")
    expected_items = set(key["item_id"])
    errors: list[str] = []
    frames: list[pd.DataFrame] = []
    seen: dict[str, str] = {}
    for file in files:
        file = paths.resolve(file)
        name = annotator_name(file)
        if name in seen:
            errors.append(f"{file.name}: second sheet for annotator {name} (first: {seen[name]})")
            continue
        seen[name] = file.name
        if not file.exists():
            errors.append(f"{file.name}: file not found ({file})")
            continue
        sheet = pd.read_csv(file, dtype=str, keep_default_na=False, encoding="utf-8-sig")
        missing_columns = [c for c in ("item_id", *framing_keys()) if c not in sheet.columns]
        if missing_columns:
            errors.append(f"{file.name}: missing column(s) {', '.join(missing_columns)}")
            continue
        simulated = "simulated" in sheet and sheet["simulated"].str.lower().isin(["true", "1"]).any()
        rows = []
        for number, row in enumerate(sheet.itertuples(index=False), start=2):  # line 1 is the header
            item = row.item_id.strip()
            where = f"{file.name}, line {number}, item {item or '(empty)'}"
            if item == "":
                errors.append(f"{where}, field item_id: empty item_id")
                continue
            if item not in expected_items:
                errors.append(f"{where}, field item_id: unknown item_id (not in the key)")
                continue
            for k in framing_keys():
                raw = getattr(row, k)
                label = normalise_label(raw)
                if label == "":
                    errors.append(f"{where}, field {k}: missing label (expected A, B or Tie)")
                elif label is None:
                    errors.append(f"{where}, field {k}: invalid label {raw!r} (expected A, B or Tie)")
                else:
                    rows.append({"annotator": name, "item_id": item, "framing": k, "label": label})
        ids = sheet["item_id"].str.strip()
        for item in sorted(set(ids[ids.duplicated() & (ids != "")])):
            errors.append(f"{file.name}, item {item}, field item_id: duplicated item_id")
        for item in sorted(set(expected_items) - set(ids)):
            errors.append(f"{file.name}, item {item}, fields {', '.join(framing_keys())}: missing (no row)")
        frame = pd.DataFrame(rows, columns=["annotator", "item_id", "framing", "label"])
        frame["simulated"] = bool(simulated)
        frame["file"] = file.name
        frames.append(frame)
    for name in annotators or ():
        if name not in seen:
            errors.append(f"missing sheet for annotator {name} (expected {name}{COMPLETED_SUFFIX}.csv)")
    if not seen and not errors:
        errors.append("no completed sheets given")
    if errors:
        raise AnnotationError(f"{len(errors)} problem(s) in the completed sheets:\n" + "\n".join(errors))
    return pd.concat(frames, ignore_index=True)


# --------------------------------------------------------------------------- analysis


def fleiss_kappa(ratings: pd.DataFrame | np.ndarray) -> float:
    """Fleiss' κ of an items × raters table of categorical labels (statsmodels); NaN if only one label occurs."""
    table = np.asarray(ratings, dtype=object)
    if pd.isna(table).any():
        raise ValueError("fleiss_kappa: every rater must label every item (found missing labels)")
    counts, categories = inter_rater.aggregate_raters(table)
    if len(categories) < 2:
        return float("nan")
    return float(inter_rater.fleiss_kappa(counts, method="fleiss"))


def fleiss_kappa_by_framing(labels: pd.DataFrame) -> pd.Series:
    """Fleiss' κ per framing dimension over the items every annotator labelled."""
    require(labels, ("annotator", "item_id", "framing", "label"), "labels")
    kappas = {}
    for k in framing_keys():
        wide = labels[labels["framing"] == k].pivot(index="item_id", columns="annotator", values="label")
        if wide.shape[1] < 2:
            raise ValueError(f"Fleiss' κ needs at least two annotators; framing {k} has {wide.shape[1]}")
        kappas[k] = fleiss_kappa(wide)
    return pd.Series(kappas, name="fleiss_kappa")


def majority_vote(labels: pd.DataFrame) -> pd.DataFrame:
    """Majority label per item × framing: the label chosen by more than half the annotators, else 'none'."""
    require(labels, ("annotator", "item_id", "framing", "label"), "labels")

    def vote(group: pd.Series) -> str:
        counts = group.value_counts()
        return str(counts.index[0]) if counts.iloc[0] * 2 > len(group) else NO_MAJORITY

    grouped = labels.groupby(["item_id", "framing"])["label"]
    return pd.DataFrame({"majority": grouped.agg(vote), "n_annotators": grouped.size()}).reset_index()


def evaluator_direction(score_a: float, score_b: float) -> str:
    """A if the evaluator scored response A higher, B if lower, Tie if equal (counts or 0/1 indicators)."""
    if pd.isna(score_a) or pd.isna(score_b):
        raise ValueError(f"evaluator_direction: missing score ({score_a!r}, {score_b!r})")
    return "A" if score_a > score_b else "B" if score_a < score_b else "Tie"


def evaluator_directions(key: pd.DataFrame) -> pd.DataFrame:
    """Evaluator-derived A/B/Tie per item × framing: item_id, framing, score_a, score_b, evaluator."""
    require(key, ("item_id", *(f"{k}_{s}" for k in framing_keys() for s in ("a", "b"))), "key")
    rows = [{"item_id": row["item_id"], "framing": k, "score_a": row[f"{k}_a"], "score_b": row[f"{k}_b"],
             "evaluator": evaluator_direction(float(row[f"{k}_a"]), float(row[f"{k}_b"]))}
            for _, row in key.iterrows() for k in framing_keys()]
    return pd.DataFrame(rows, columns=["item_id", "framing", "score_a", "score_b", "evaluator"])


def evaluator_human_agreement(majority: pd.DataFrame, directions: pd.DataFrame) -> pd.DataFrame:
    """Per framing: share of items with a human majority whose evaluator direction equals it.

    Columns: framing, agreement, n_items, n_with_majority, n_no_majority.
    """
    both = majority.merge(directions[["item_id", "framing", "evaluator"]], on=["item_id", "framing"],
                          how="inner", validate="one_to_one")
    rows = []
    for k in framing_keys():
        frame = both[both["framing"] == k]
        decided = frame[frame["majority"] != NO_MAJORITY]
        agreement = float((decided["majority"] == decided["evaluator"]).mean()) if len(decided) else float("nan")
        rows.append({"framing": k, "agreement": agreement, "n_items": len(frame),
                     "n_with_majority": len(decided), "n_no_majority": len(frame) - len(decided)})
    return pd.DataFrame(rows)


def validation_summary(labels: pd.DataFrame, key: pd.DataFrame) -> pd.DataFrame:
    """Per framing: fleiss_kappa, agreement, n_items, n_with_majority, n_no_majority, n_annotators, simulated."""
    summary = evaluator_human_agreement(majority_vote(labels), evaluator_directions(key))
    summary.insert(1, "fleiss_kappa", summary["framing"].map(fleiss_kappa_by_framing(labels)))
    summary["n_annotators"] = labels["annotator"].nunique()
    summary["simulated"] = bool(labels["simulated"].any()) if "simulated" in labels else False
    summary["responses_simulated"] = bool(key["simulated"].any()) if "simulated" in key else False
    return summary


def paper_table4() -> pd.DataFrame:
    """The paper's Table 4 (data/paper/table4.csv) in the `table4` layout."""
    reported = paper.human_validation()
    rows = {"fleiss_kappa": KAPPA_ROW, "evaluator_human_agreement": AGREEMENT_ROW}
    table = reported.assign(measure=reported["measure"].map(rows),
                            metric=reported["metric"].map(lambda k: metric(k).label))
    return table.pivot(index="measure", columns="metric", values="value").reindex(
        index=list(rows.values()), columns=[f.label for f in framings()])


def table4(summary: pd.DataFrame, with_paper: bool = False) -> pd.DataFrame:
    """Table 4 layout: rows Human Fleiss' κ and Eval.-Human Agr., columns Puni., Ther., Instr., Full-Bl.

    With `with_paper`, each row appears twice (this run, paper) under a (measure, source) index.
    The caption (`.attrs["caption"]`) and the index name say when annotators were simulated.
    """
    require(summary, ("framing", "fleiss_kappa", "agreement"), "summary")
    by_framing = summary.set_index("framing")
    columns = [f.label for f in framings()]
    simulated = bool(summary.get("simulated", pd.Series([False])).any())
    responses_simulated = bool(summary.get("responses_simulated", pd.Series([False])).any())
    run = pd.DataFrame([[by_framing.loc[f.key, "fleiss_kappa"] for f in framings()],
                        [by_framing.loc[f.key, "agreement"] for f in framings()]],
                       index=[KAPPA_ROW, AGREEMENT_ROW], columns=columns)
    source = "this run (SIMULATED annotators)" if simulated else "this run"
    if with_paper:
        reported = paper_table4()
        index = [(measure, src) for measure in run.index for src in (source, "paper (Tab. 4)")]
        table = pd.DataFrame([run.loc[m] if src == source else reported.loc[m, columns] for m, src in index],
                             index=pd.MultiIndex.from_tuples(index, names=["measure", "source"]))
    else:
        table = run
        table.index.name = "Measure (SIMULATED annotators)" if simulated else "Measure"
    n_items = int(by_framing["n_items"].max()) if "n_items" in by_framing else None
    notes = []
    if simulated:
        notes.append("SIMULATED annotators: labels drawn from the evaluator scores plus noise; "
                     "this exercises the pipeline and is not a finding")
    if responses_simulated:
        notes.append("responses and scores from the simulated backend")
    table.attrs["caption"] = ("Table 4: Human validation of evaluator-based framing metrics"
                              + (f" ({n_items} items)" if n_items else "")
                              + ("".join(f". {note}" for note in notes)) + ".")
    table.attrs["simulated"] = simulated
    return table
