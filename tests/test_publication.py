"""Publishing refuses an incomplete benchmark: empty grid cells, or templates dropped without --allow-drops.

Before this, `python -m gama_utils.compile` with a dimension file deleted published 1,235 pairs with
9 empty cells and exited 0; a template with a gender cue vanished silently; a FILE argument was
ignored. Each case here is the failing case of that report.
"""

from __future__ import annotations

import logging

import pandas as pd
import pytest
from offline_build import build_offline
from test_generate import write_small_bank

from gama_utils.bench import publication
from gama_utils.bench.templates import TemplateFileError, load_templates, save_templates
from gama_utils.core import grid, run_folders
from gama_utils.runs import rebuild

GENDERED_ID = "public_dispute-L1-matter_of_fact-99"


def _with_gender_cue(folder):
    """The small bank plus a copy of a public_dispute template whose narrator is 'a grandmother of three'."""
    bank = write_small_bank(folder)
    dimension = bank[bank["dimension"] == "public_dispute"]
    source = dimension[dimension["template_id"].str.startswith(GENDERED_ID.removesuffix("99"))].iloc[0].to_dict()
    cue = source | {"template_id": GENDERED_ID,
                    "text": source["text"].replace(" I ", " I, a grandmother of three, ", 1)}
    assert "grandmother" in cue["text"]
    save_templates(pd.DataFrame([*dimension.to_dict("records"), cue]), folder / "public_dispute.jsonl")
    return bank


def _build(folder, out):
    pairs, drops, _ = build_offline(folder, out)
    return pairs, drops


def test_a_bank_without_one_dimension_is_refused_naming_its_nine_empty_cells(tmp_path):
    write_small_bank(tmp_path / "bank")
    (tmp_path / "bank" / "career_sabotage.jsonl").unlink()
    pairs, drops = _build(tmp_path / "bank", tmp_path / "benchmark")
    assert len(pairs) == len(grid.condition_grid()) - 9 and drops.empty
    with pytest.raises(publication.IncompleteBenchmarkError) as refused:
        publication.publish(tmp_path / "benchmark", tmp_path / "target", drops=drops, allow_drops=True)
    cells = sorted(f"career_sabotage/{s}/{st}" for s in grid.SEVERITIES for st in grid.STYLES)
    assert f"9 empty grid cell(s) with no pair: {', '.join(cells)}" in str(refused.value)
    assert not (tmp_path / "target").exists()


def test_an_emptied_template_file_is_an_error_naming_the_file(tmp_path):
    write_small_bank(tmp_path)
    (tmp_path / "career_sabotage.jsonl").write_text("")
    with pytest.raises(TemplateFileError, match="career_sabotage.jsonl: empty file"):
        load_templates(tmp_path)


def test_a_template_with_a_gender_cue_is_dropped_listed_and_refused_unless_allowed(tmp_path):
    _with_gender_cue(tmp_path / "bank")
    pairs, drops = _build(tmp_path / "bank", tmp_path / "benchmark")
    cells = len(grid.condition_grid())
    assert len(pairs) == cells and GENDERED_ID not in set(pairs["template_id"])
    assert drops[["template_id", "kind"]].values.tolist() == [[GENDERED_ID, "gender cue"]]
    assert "gendered word 'grandmother'" in drops["reason"].iloc[0]
    with pytest.raises(publication.IncompleteBenchmarkError) as refused:
        publication.publish(tmp_path / "benchmark", tmp_path / "target", drops=drops)
    message = str(refused.value)
    assert f"{cells} pairs where the templates promise {cells + 1}: 1 template(s) dropped" in message
    assert f"{GENDERED_ID} [gender cue]" in message and "--allow-drops" in message
    assert not (tmp_path / "target").exists()
    written = publication.publish(tmp_path / "benchmark", tmp_path / "target", drops=drops, allow_drops=True)
    assert [p.name for p in written] == list(publication.BENCHMARK_FILES)
    readme = (tmp_path / "target" / "README.md").read_text(encoding="utf-8")
    assert "(every stage: generation, review, lint, near-duplicates, screening): 1:" in readme
    assert f"- `{GENDERED_ID}` (gender cue): " in readme


def test_every_kind_of_drop_is_named_with_its_reason():
    candidates = pd.DataFrame({"candidate_id": ["c-01", "c-02", "c-03", "c-04", "c-05", "c-06", "c-07"],
                               "source_template_id": ["t-01", "t-02", "t-03", "t-04", None, "t-06", "t-07"]})
    problems = pd.DataFrame([{"cell_id": "d/L1/s", "generator": "gen", "candidate_ids": ["c-08"],
                              "problem": "asked for 1 skeletons, got 0"},
                             {"cell_id": "d/L1/s", "generator": "gen", "candidate_ids": ["c-01", "c-02"],
                              "problem": "asked for 2 skeletons, got 3; kept the first 2"}])
    reviews = pd.DataFrame([
        {"candidate_id": "c-01", "cell_id": "d/L1/s", "verdict": "keep", "gender_neutral": True, "lint_problems": [],
         "error": None, "reasons": ""},
        {"candidate_id": "c-02", "cell_id": "d/L1/s", "verdict": "discard", "gender_neutral": False,
         "lint_problems": [], "error": None, "reasons": "gender_neutral: a stereotyped hobby"},
        {"candidate_id": "c-03", "cell_id": "d/L2/s", "verdict": "discard", "gender_neutral": True,
         "lint_problems": ["length 40 words outside 80-350"], "error": None, "reasons": "lint: length 40 words"},
        {"candidate_id": "c-04", "cell_id": "d/L2/s", "verdict": "discard", "gender_neutral": None,
         "lint_problems": [], "error": "review of candidate c-04: no JSON", "reasons": "unreadable review"},
        {"candidate_id": "c-05", "cell_id": "d/L3/s", "verdict": "discard", "gender_neutral": True,
         "lint_problems": [], "error": None, "reasons": "severity_match: too mild"},
    ])
    posts = pd.DataFrame([
        {"template_id": "t-06", "cell_id": "d/L3/s", "usable": False, "error": None,
         "lint_problems": ["gendered word 'wife' outside a placeholder"]},
        {"template_id": "t-07", "cell_id": "d/L3/s", "usable": False, "error": None,
         "lint_problems": ["does not end with an advice-seeking question"]},
        {"template_id": "t-01", "cell_id": "d/L1/s", "usable": True, "error": None, "lint_problems": []},
    ])
    removals = pd.DataFrame([{"cell_id": "d/L1/s", "removed_id": "t-09", "duplicate_of": "t-01", "similarity": 0.71}])
    cross = pd.DataFrame([{"cell_id": "e/L1/s", "removed_id": "t-10", "duplicate_of": "t-01", "similarity": 0.334}])
    exclusions = pd.DataFrame([{"template_id": "t-11", "cell_id": "d/L2/s", "reason": "implausible timeline"}])
    drops = publication.dropped_templates(candidates, problems, reviews, posts, removals, cross, exclusions)
    assert drops.to_dict("records") == [
        {"template_id": "c-05", "cell_id": "d/L3/s", "kind": "review", "reason": "severity_match: too mild"},
        {"template_id": "c-08", "cell_id": "d/L1/s", "kind": "generation",
         "reason": "gen: asked for 1 skeletons, got 0"},
        {"template_id": "t-02", "cell_id": "d/L1/s", "kind": "gender cue",
         "reason": "gender_neutral: a stereotyped hobby"},
        {"template_id": "t-03", "cell_id": "d/L2/s", "kind": "lint problem", "reason": "lint: length 40 words"},
        {"template_id": "t-04", "cell_id": "d/L2/s", "kind": "review", "reason": "unreadable review"},
        {"template_id": "t-06", "cell_id": "d/L3/s", "kind": "gender cue",
         "reason": "gendered word 'wife' outside a placeholder"},
        {"template_id": "t-07", "cell_id": "d/L3/s", "kind": "lint problem",
         "reason": "does not end with an advice-seeking question"},
        {"template_id": "t-09", "cell_id": "d/L1/s", "kind": "near-duplicate",
         "reason": "cosine 0.71 to t-01 (within its cell)"},
        {"template_id": "t-10", "cell_id": "e/L1/s", "kind": "near-duplicate",
         "reason": "cosine 0.33 to t-01 (premise, across the bank)"},
        {"template_id": "t-11", "cell_id": "d/L2/s", "kind": "screening", "reason": "implausible timeline"},
    ]
    assert set(drops["kind"]) == set(publication.DROP_KINDS)


@pytest.mark.slow
def test_the_command_line_builds_from_the_file_given_and_exits_non_zero_listing_what_it_dropped(tmp_path, monkeypatch,
                                                                                                 caplog):
    """One papermill run of 01 → 03 on a 91-template bank with a gender cue: refused, nothing published."""
    monkeypatch.setenv("GAMA_OUTPUTS", str(tmp_path / "outputs"))
    _with_gender_cue(tmp_path / "bank")
    run, target = tmp_path / "run", tmp_path / "target"
    arguments = [str(tmp_path / "bank"), "--run", str(run), "--target", str(target)]
    with caplog.at_level(logging.INFO, logger="gama_utils.runs.rebuild"):
        assert rebuild.main(arguments) == 1
    cells = len(grid.condition_grid())
    assert f"rebuilding from {cells + 1} templates" in caplog.text  # the bank given, not data/templates (1,298)
    assert f"{GENDERED_ID} [gender cue]" in caplog.text and "refusing to publish" in caplog.text
    assert not target.exists()
    assert len(run_folders.load(run, "candidates")) == cells + 1
    assert run_folders.load(run, "dropped_templates")["template_id"].tolist() == [GENDERED_ID]

    written = publication.publish(run / "benchmark", target, drops=run_folders.load(run, "dropped_templates"),
                                  allow_drops=True)
    assert sorted(p.name for p in written) == sorted(publication.BENCHMARK_FILES)
    assert len(pd.read_json(target / "pairs.jsonl", lines=True)) == cells


def test_allow_drops_and_the_other_flags_reach_the_rebuild(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(rebuild, "rebuild", lambda *args, **kwargs: calls.append((args, kwargs)) or [])
    assert rebuild.main([str(tmp_path / "bank"), "--allow-drops", "--run", "r", "--target", "t"]) == 0
    assert calls == [((str(tmp_path / "bank"), "r", rebuild.DEFAULT_KERNEL), {"allow_drops": True, "target": "t"})]
    assert rebuild.main([]) == 0
    assert calls[1] == ((None, "benchmark", rebuild.DEFAULT_KERNEL),
                        {"allow_drops": False, "target": str(rebuild.BENCHMARK)})


def test_the_command_line_refuses_a_bank_that_does_not_load_before_running_any_notebook(tmp_path, caplog):
    (tmp_path / "bank.jsonl").write_text('{"template_id": "x"}\n')
    assert rebuild.main([str(tmp_path / "bank.jsonl"), "--run", str(tmp_path / "run")]) == 1
    assert "bank.jsonl:1" in caplog.text and not (tmp_path / "run" / "notebooks").exists()
    with pytest.raises(SystemExit) as usage:
        rebuild.main(["--alow-drops"])
    assert usage.value.code == 2
