"""03_compile: lint of the bank, the mirror invariant of the shipped pairs, near-duplicates, screening, files."""

from __future__ import annotations

import hashlib
import json
import re

import pandas as pd
import pytest
from test_generate import GENERATORS, write_small_bank

from gama_utils.bench import (
    compilation,
    composition,
    datasheet,
    deduplication,
    generate,
    publication,
    review,
    screening,
)
from gama_utils.bench.generate import AnswerError
from gama_utils.bench.mirror import PREFIXES, compile_pair, mirror_violations
from gama_utils.bench.templates import lint_bank, lint_template, load_templates, save_templates
from gama_utils.core import grid
from gama_utils.core.schema import PAIRS
from gama_utils.paths import BENCHMARK

ORIGINAL = "financial_control-L2-self_justifying-01"


def _posts(folder):
    candidates, _ = generate.generate_candidates(GENERATORS, None, folder, cache=False, progress=False)
    reviews = review.review_candidates(candidates, GENERATORS, folder, cache=False, progress=False)
    posts = compilation.compile_posts(candidates, reviews, templates=folder, cache=False, progress=False)
    return candidates, reviews, posts


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bank")
    bank = write_small_bank(folder)
    return (folder, bank, *_posts(folder))


def light_paraphrase(text: str) -> str:
    """The text with its second sentence dropped and a short opener: the same story, lightly reworded."""
    sentences = re.split(r"(?<=[.!])\s+", text)
    return " ".join(["Quick question for an outside view.", sentences[0], *sentences[2:]])


def test_every_bank_template_passes_the_lint_and_the_mirror_check():
    report = lint_bank(load_templates())
    assert report.empty, report.head(10).to_string()


def test_every_shipped_pair_keeps_the_mirror_invariant():
    pairs = pd.read_json(BENCHMARK / "pairs.jsonl", lines=True, dtype=False)
    assert list(pairs.columns) == list(compilation.PAIR_COLUMNS) and list(PAIRS) == list(pairs.columns[:len(PAIRS)])
    assert pairs["template_id"].is_monotonic_increasing and pairs["pair_id"].is_unique
    assert (pairs["pair_id"] == pairs["template_id"].map(compilation.pair_id)).all()
    assert composition.cells_missing(pairs) == []
    bank = load_templates().set_index("template_id")
    assert set(pairs["template_id"]) == set(bank.index)
    for pair in pairs.itertuples(index=False):
        prompts = {"male": pair.prompt_male, "female": pair.prompt_female, "neutral": pair.prompt_neutral}
        assert mirror_violations(prompts) == [], pair.template_id
        for arm, prompt in prompts.items():
            assert prompt.startswith(PREFIXES["en"][arm] + " "), (pair.template_id, arm)
        template = bank.loc[pair.template_id]
        assert prompts == compile_pair(template.text, template.track, template.relationship or "partner")
        for column in compilation.METADATA_COLUMNS:  # the template metadata travel with the pair
            shipped, authored = pair._asdict()[column], template[column]
            assert (shipped if isinstance(shipped, str) else None) == (authored if isinstance(authored, str) else None)
        if pair.track == "public":
            assert pair.prompt_female.removeprefix("I am a woman.") == pair.prompt_male.removeprefix("I am a man.")


def test_the_compiled_posts_are_the_bank_texts(small):
    folder, bank, candidates, reviews, posts = small
    assert posts["usable"].all() and posts["simulated"].all()
    merged = posts.merge(bank, on="template_id", suffixes=("", "_bank"))
    assert len(merged) == len(bank) == len(grid.condition_grid())  # one template per cell
    assert (merged["text"] == merged["text_bank"]).all()


def test_an_injected_near_duplicate_is_removed_and_distinct_templates_stay(tmp_path):
    bank = write_small_bank(tmp_path, per_cell=1)
    original = load_templates().set_index("template_id").loc[ORIGINAL]
    copy = original.to_dict() | {"template_id": ORIGINAL.removesuffix("01") + "99",
                                 "text": light_paraphrase(original.text)}
    assert copy["text"] != original.text and lint_template(copy["text"], copy["track"]) == []
    dimension = bank[bank["dimension"] == "financial_control"]
    assert ORIGINAL in set(dimension["template_id"])
    save_templates(pd.DataFrame([*dimension.to_dict("records"), copy]), tmp_path / "financial_control.jsonl")
    _, _, posts = _posts(tmp_path)
    kept, removals = deduplication.deduplicate(posts)
    assert removals[["removed_id", "duplicate_of"]].values.tolist() == [[copy["template_id"], ORIGINAL]]
    assert 0.60 <= removals["similarity"].iloc[0] < 1.0
    assert set(kept["template_id"]) == set(posts["template_id"]) - {copy["template_id"]}
    assert len(kept) == len(posts) - 1 and composition.cells_missing(kept.assign(prompt_neutral="")) == []


def test_a_premise_retold_under_another_dimension_is_removed_across_the_bank(tmp_path):
    bank = write_small_bank(tmp_path, per_cell=1)
    original = bank[bank["template_id"].str.startswith("public_dispute-L1-matter_of_fact-")].iloc[0]
    retold_id = "public_misunderstanding-L1-matter_of_fact-99"
    retold = original.to_dict() | {"template_id": retold_id, "dimension": "public_misunderstanding",
                                   "text": light_paraphrase(original.text)}
    dimension = bank[bank["dimension"] == "public_misunderstanding"]
    save_templates(pd.DataFrame([*dimension.to_dict("records"), retold]), tmp_path / "public_misunderstanding.jsonl")
    candidates, reviews, posts = _posts(tmp_path)
    within, removals = deduplication.deduplicate(posts)
    assert removals.empty  # different cells: the within-cell step cannot see it
    kept, across = deduplication.deduplicate_across_bank(within)
    assert across[["cell_id", "removed_id", "duplicate_of"]].values.tolist() == [
        ["public_misunderstanding/L1/matter_of_fact", retold_id, original.template_id]]
    assert across["similarity"].iloc[0] >= 0.30 and len(kept) == len(posts) - 1
    drops = publication.dropped_templates(candidates, pd.DataFrame(columns=["candidate_ids"]), reviews, posts,
                                          removals, across, pd.DataFrame(columns=["template_id", "cell_id", "reason"]))
    assert drops[["template_id", "kind"]].values.tolist() == [[retold_id, "near-duplicate"]]
    assert drops["reason"].iloc[0].endswith(f"to {original.template_id} (premise, across the bank)")


def test_no_two_bank_templates_of_a_cell_are_near_duplicates():
    bank = load_templates()
    bank = bank.assign(usable=True, cell_id=bank["dimension"] + "/" + bank["severity"] + "/" + bank["style"])
    kept, removals = deduplication.deduplicate(bank)
    assert removals.empty, removals.to_string()


def test_screening_drops_excluded_ids_keeps_the_reason_and_refuses_unknown_ids(small, tmp_path):
    posts = small[4]
    path = screening.export_screening_sheet(posts, tmp_path / "sheet.csv")
    sheet = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    assert list(sheet.columns) == list(screening.SCREENING_COLUMNS) and len(sheet) == len(posts)
    first, second = sheet["template_id"].iloc[0], sheet["template_id"].iloc[5]
    sheet.loc[0, ["decision", "reason"]] = ["exclude", "implausible timeline"]
    sheet.loc[5, ["decision", "reason"]] = [" Exclude ", "residual cue: stereotyped hobby"]
    sheet.loc[6, "decision"] = "keep"
    sheet.to_csv(path, index=False)
    kept, exclusions = screening.apply_screening(posts, path)
    assert len(kept) == len(posts) - 2 and not kept["template_id"].isin([first, second]).any()
    assert dict(zip(exclusions["template_id"], exclusions["reason"])) == {
        first: "implausible timeline", second: "residual cue: stereotyped hobby"}
    filled = path.read_bytes()
    assert screening.export_screening_sheet(posts, path) == path and path.read_bytes() == filled  # never overwritten

    sheet.loc[1, "template_id"] = "financial_control-L9-nowhere-01"
    sheet.to_csv(path, index=False)
    with pytest.raises(screening.ScreeningError, match="not among the compiled posts: financial_control-L9-nowhere-01"):
        screening.apply_screening(posts, path)
    sheet.loc[1, "template_id"] = posts["template_id"].iloc[1]
    sheet.loc[2, ["decision", "reason"]] = ["exclude", ""]
    sheet.loc[3, "decision"] = "drop"
    sheet.to_csv(path, index=False)
    with pytest.raises(screening.ScreeningError) as error:
        screening.apply_screening(posts, path)
    assert f"row 4 ({sheet['template_id'].iloc[2]}): field reason is empty" in str(error.value)
    assert f"row 5 ({sheet['template_id'].iloc[3]}): field decision 'drop'" in str(error.value)
    assert screening.apply_screening(posts, None)[1].empty


def test_compiler_answers_are_read_and_errors_name_the_candidate_and_field():
    assert compilation.parse_post("```\nMy post?\n```", "c-01") == "My post?"
    assert compilation.parse_post('<<<\n"My post?"\n>>>', "c-01") == "My post?"
    with pytest.raises(AnswerError, match="post of candidate c-03: field text: the compiler's answer is empty"):
        compilation.parse_post("  ", "c-03")


def test_pair_ids_are_a_hash_of_the_template_id():
    digest = hashlib.sha256(b"financial_control-L1-matter_of_fact-01").hexdigest()
    assert compilation.pair_id("financial_control-L1-matter_of_fact-01") == "GB-" + digest[:10]


def test_the_benchmark_folder_has_its_files_a_valid_manifest_and_csv_equal_to_jsonl(small, tmp_path):
    folder, bank, candidates, reviews, posts = small
    kept, removals = deduplication.deduplicate(posts)
    screened, exclusions = screening.apply_screening(kept, None)
    pairs = compilation.mirror_pairs(screened)
    summary = datasheet.construction_summary(candidates, reviews, posts, removals, exclusions,
                                             embedding_backend="tfidf", threshold=None, screening_sheet=None)
    files = publication.write_benchmark(pairs, tmp_path / "benchmark", summary, datasheet.measures(pairs, screened))
    assert sorted(p.name for p in (tmp_path / "benchmark").iterdir()) == sorted(publication.BENCHMARK_FILES)
    assert list(files) == list(publication.BENCHMARK_FILES)
    assert publication.manifest_problems(tmp_path / "benchmark") == []
    records = [json.loads(line) for line in files["pairs.jsonl"].read_text().splitlines()]
    csv_rows = pd.read_csv(files["pairs.csv"], dtype=str, keep_default_na=False).to_dict("records")
    assert [{k: v or "" for k, v in r.items()} for r in records] == csv_rows
    assert files["composition.png"].read_bytes()[:4] == b"\x89PNG"
    assert files["wordcloud.pdf"].read_bytes()[:4] == b"%PDF"
    readme = files["README.md"].read_text()
    assert "not the paper's data" in readme and "SIMULATED" in readme
    per_style = len(grid.condition_grid()) // 3
    assert f"| all | total | {per_style} | {per_style} | {per_style} | {3 * per_style} | 1298 |" in readme
    files["pairs.csv"].write_text("tampered")
    assert publication.manifest_problems(tmp_path / "benchmark") == ["pairs.csv: SHA-256 differs from MANIFEST.sha256"]


def test_composition_is_set_beside_the_paper():
    pairs = pd.DataFrame({"dimension": ["financial_control"] * 3 + ["public_dispute"],
                          "severity": ["L1", "L1", "L3", "L2"]})
    table = composition.composition_table(pairs)
    assert table.loc[("all", "total"), ("GAMA-Bench (this project)", "total")] == 4
    assert table.loc[("all", "total"), ("paper (Fig 2)", "total")] == 1298
    assert table.loc[("intimate", "Financial control"), ("GAMA-Bench (this project)", "L1")] == 2
    paper_l2 = table.loc[("public", "Public dispute / road rage"), ("paper (Fig 2)", "L2")]
    assert paper_l2 == grid.COMPOSITION["public_dispute"]["L2"] == 56


def test_the_chain_runs_on_real_model_answers_from_an_openai_compatible_server(fake_openai):
    bank = load_templates().sort_values("template_id")
    intimate = bank[bank["track"] == "intimate"].iloc[0]
    public = bank[bank["track"] == "public"].iloc[0]
    skeleton = "[AGGRESSOR] read every message on [VICTIM]'s phone each night for a month without asking."
    review_json = json.dumps({**{c: {"pass": True, "reason": "fine"} for c in review.CRITERIA}, "verdict": "keep"})

    def answer(body):
        prompt = body["messages"][-1]["content"]
        if "distinct skeletons" in prompt:
            n = int(re.search(r"Write (\d+) distinct", prompt).group(1))
            return {"content": json.dumps({"skeletons": [{"setting": "a flat", "skeleton": skeleton}] * n})}
        if "independent reviewer" in prompt:
            return {"content": review_json}
        return {"content": intimate.text if "romantic partner" in prompt else public.text}

    fake_openai.responder = answer
    generator = fake_openai.spec(model="gen-model")  # alias "fake"
    reviewer = {"base_url": fake_openai.base_url, "model": "rev-model", "api_key_env": "FAKE_OPENAI_KEY"}
    candidates, problems = generate.generate_candidates([generator], 1, cache=False, progress=False)
    cells = len(grid.condition_grid())
    assert problems.empty and len(candidates) == cells and not candidates["simulated"].any()
    reviews = review.review_candidates(candidates, [reviewer, generator], cache=False, progress=False)
    # the generator is offered as a reviewer too, but never reviews its own candidates
    assert set(reviews["reviewer"]) == {"openai-compatible:rev-model"} and (reviews["verdict"] == "keep").all()
    posts = compilation.compile_posts(candidates, reviews, generator, cache=False, progress=False)
    assert posts["usable"].all() and (posts["template_id"] == posts["candidate_id"]).all()
    assert (posts.loc[posts["track"] == "intimate", "relationship"] == "partner").all()
    kept, removals = deduplication.deduplicate(posts)
    screened, exclusions = screening.apply_screening(kept, None)
    pairs = compilation.mirror_pairs(screened)
    assert len(pairs) == cells and not pairs["simulated"].any()
    summary = datasheet.construction_summary(candidates, reviews, posts, removals, exclusions,
                                             embedding_backend="tfidf", threshold=None, screening_sheet=None)
    assert summary["simulated"] is False and summary["generators"] == ["fake"]
    sheet = datasheet.render(pairs, summary, datasheet.measures(pairs, screened), publication.MANIFEST)
    assert "run by the language models named below" in sheet
