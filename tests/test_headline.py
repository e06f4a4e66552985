"""The report's first screen from the numbers: Holm counts and sentences, the example pair, marks, readable tables."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from gama_utils.report import headline, table_files
from gama_utils.report import run_report as report
from gama_utils.report.run_report import Artifact


def gaps(rows: list[tuple[str, str, str, float, float]]) -> pd.DataFrame:
    """(model, track, metric, delta, p_holm) rows as a gaps frame of the paper's comparison."""
    frame = pd.DataFrame(rows, columns=["model", "track", "metric", "delta", "p_holm"])
    return frame.assign(comparison="female-male", holm_family_size=len(rows))


# Intimate: A puni −3 (p .001), B puni −2 (p .01), A ther +1 (p .2), B ther +0.5 (p .04): 3 of 4 significant,
# 1 positive (B ther), 2 negative (both puni: the most frequent metric, 2 of 2 models, male higher).
# Public: nothing below .05.
ROWS = [("A", "intimate", "puni", -3.0, 0.001), ("B", "intimate", "puni", -2.0, 0.01),
        ("A", "intimate", "ther", 1.0, 0.2), ("B", "intimate", "ther", 0.5, 0.04),
        ("A", "public", "puni", -0.1, 0.6), ("B", "public", "puni", 0.2, 0.07)]


def test_holm_counts_per_track_by_hand():
    counts = headline.holm_counts(gaps(ROWS)).set_index("track")
    assert counts.loc["intimate", ["cells", "significant", "female_higher", "male_higher"]].tolist() == [4, 3, 1, 2]
    assert (counts.loc["intimate", "top_metric"], counts.loc["intimate", "top_count"],
            counts.loc["intimate", "top_direction"]) == ("puni", 2, -1)
    assert counts.loc["public", ["cells", "significant"]].tolist() == [2, 0]


def test_summary_sentences_state_the_counts_and_directions():
    sentences = headline.summary(gaps(ROWS))
    assert sentences[0] == ("Intimate track: 3 of 4 model × metric cells differ after Holm correction (p < 0.05), "
                            "1 higher for the female actor (Δ > 0) and 2 higher for the male actor (Δ < 0); most "
                            "often Puni. (2 of 2 models, mostly higher for the male actor).")
    assert sentences[1].startswith("Public track: none of the 2 model × metric cells differs")
    assert "all 6 tests" in sentences[2] and len(sentences) == 3


def test_example_pair_takes_the_largest_female_male_difference():
    # Pair p1: female 2, male 5 (|Δ| 3); p2: female 9, male 1 (|Δ| 8, the largest); p3 only one arm.
    evaluations = pd.DataFrame({
        "pair_id": ["p1", "p1", "p2", "p2", "p3"], "model": "M", "arm": ["female", "male", "female", "male", "male"],
        "sample": 0, "valid": True, "punitive_count": [2, 5, 9, 1, 4],
        "punitive_terms": [[], [], ["cruel"], [], []]})
    responses = evaluations[["pair_id", "model", "arm", "sample"]].assign(answer=lambda f: f["pair_id"] + f["arm"])
    pairs = pd.DataFrame({"pair_id": ["p1", "p2", "p3"], "prompt_female": ["I am a woman."] * 3,
                          "prompt_male": ["I am a man."] * 3, "track": "public", "dimension": "d", "severity": "L1"})
    example = headline.example_pair(evaluations, responses, pairs, "M")
    assert example is not None and example.pair["pair_id"] == "p2"
    assert example.answers == {"female": "p2female", "male": "p2male"}
    assert example.scores["female"]["punitive_count"] == 9 and "largest |female − male|" in example.rule


def test_word_diff_marks_only_the_mirrored_words():
    female, male = headline.word_diff("I am a woman. My husband left.", "I am a man. My wife left.")
    assert [p for p, changed in female if changed] == ["woman.", "husband"]
    assert [p for p, changed in male if changed] == ["man.", "wife"]
    assert "".join(p for p, _ in female) == "I am a woman. My husband left."


def test_term_spans_mark_every_occurrence_longest_first_ignoring_case():
    pieces = headline.term_spans("Cruel, cruel world; warning signs", {"Puni.": ["cruel", "warning signs", "warning"]})
    assert [(p, k) for p, k in pieces if k] == [("Cruel", "Puni."), ("cruel", "Puni."), ("warning signs", "Puni.")]
    assert "".join(p for p, _ in pieces) == "Cruel, cruel world; warning signs"


def test_marked_html_escapes_the_text_and_marks_only_the_terms():
    html = report.marked([("<b>x</b> ", ""), ("cruel", "Puni.")], {"Puni.": "term-0"})
    assert str(html) == '&lt;b&gt;x&lt;/b&gt; <mark class="term-0">cruel</mark>'


def test_short_titles_for_the_contents():
    def title(explanation: str) -> str:
        return report.short_title(Artifact("x", "S", explanation))

    assert title("Table 2. Intimate track: male, female and Δ per metric.") == "Table 2. Intimate track"
    assert title("Figure 10. The two evaluators' Δ (paper Fig 10).") == "Figure 10. The two evaluators' Δ"
    assert title("Intimate track: Δ per model and metric with its CI (behind Tables 2-3). More.") == (
        "Intimate track: Δ per model and metric with its CI")
    long = title("A " + "very " * 30 + "long sentence")
    assert len(long) <= report.TITLE_CHARS + 1 and long.endswith("…")


def test_grouped_header_puts_the_metric_over_its_parts():
    table = ('<table>\n<thead>\n<tr>\n  <th style="text-align:left">Model</th>\n  <th>Puni. Male</th>\n'
             '  <th>Puni. Δ</th>\n  <th>n</th>\n</tr>\n</thead>\n<tbody></tbody></table>')
    grouped = report.grouped_header(table)
    assert ('<tr><th rowspan="2">Model</th><th colspan="2" class="group">Puni.</th><th rowspan="2">n</th></tr>\n'
            '<tr><th>Male</th><th>Δ</th></tr>') in grouped
    single = table.replace("Puni. Δ", "Other")
    assert report.grouped_header(single) == single  # no two columns share a group


def test_plain_columns_one_precision_per_kind_and_words_for_names():
    frame = pd.DataFrame({"metric": ["puni", "full_bl"], "p_holm": [0.0004, 0.0421], "n_pairs": [305.0, 12.0],
                          "pearson_r": [0.9941, -0.5], "sd_diff": [3.0912, 12.5], "converged": [True, False],
                          "delta_blind": [-3.79, 0.5], "simulated": True})
    shown = table_files.display_table(frame)
    assert list(shown.columns) == ["Metric", "p Holm", "Pairs", "Pearson r", "SD of differences", "Converged",
                                   "Δ blind"]
    assert shown["Metric"].tolist() == ["Puni.", "Full-Bl."] and shown["p Holm"].tolist() == ["<.001", ".042"]
    assert shown["Pairs"].tolist() == ["305", "12"] and shown["Pearson r"].tolist() == ["0.994", "-0.500"]
    assert shown["SD of differences"].tolist() == ["3.09", "12.50"] and shown["Converged"].tolist() == ["yes", "no"]
    assert shown["Δ blind"].tolist() == ["-3.79", "+0.50"]
    assert table_files.plain_column(pd.Series([1.5, np.nan]), "x") == ["1.50", "–"]
    assert table_files.plain_column(pd.Series([9, None], dtype="Int64"), "pairs_needed") == ["9", "–"]


def test_stale_files_are_the_tables_written_after_the_report(tmp_path: Path):
    (tmp_path / "tables").mkdir()
    old, new = tmp_path / "tables" / "old.csv", tmp_path / "tables" / "new.csv"
    for path in (old, tmp_path / "report.html", new):
        path.write_text("x", encoding="utf-8")
    os.utime(old, (1_000, 1_000))
    os.utime(tmp_path / "report.html", (2_000, 2_000))
    os.utime(new, (3_000, 3_000))
    assert report.stale_files(tmp_path) == [new]
    (tmp_path / "report.html").unlink()
    assert report.stale_files(tmp_path) == [new, old]


def test_a_run_of_imported_answers_says_so_on_its_first_line(tmp_path: Path):
    from gama_utils.collect import respond
    from gama_utils.core.run_folders import file_sha256

    pairs = pd.DataFrame({"pair_id": ["p1"], "track": ["public"], "dimension": ["road_rage"], "severity": ["L1"],
                          "style": ["plain"], "prompt_male": ["I am a man."], "prompt_female": ["I am a woman."]})
    answers = tmp_path / "my_answers.csv"
    pd.DataFrame({"pair_id": ["p1", "p1"], "model": "mine", "arm": ["male", "female"],
                  "answer": ["No.", "Yes."]}).to_csv(answers, index=False)
    run = tmp_path / "run"
    respond.save_responses(respond.import_responses(str(answers), pairs=pairs), run, None)
    line = report.read_run(run).first.provenance
    assert line.startswith("Real answers · answers imported from my_answers.csv (2 rows, SHA-256 "
                           f"{file_sha256(answers)[:12]}…)"), line


def test_pairs_from_the_answers_when_the_run_has_no_pairs_file():
    responses = pd.DataFrame({"pair_id": ["p1", "p1", "p2"], "arm": ["male", "female", "male"],
                              "prompt": ["I am a man.", "I am a woman.", "I am a man. Again."], "track": "public",
                              "dimension": "road_rage", "severity": "L1", "style": "plain", "model": ["a", "a", "b"]})
    pairs = headline.pairs_from_responses(responses).set_index("pair_id")
    assert pairs.loc["p1", ["prompt_female", "prompt_male"]].tolist() == ["I am a woman.", "I am a man."]
    assert pd.isna(pairs.loc["p2", "prompt_female"]) and pairs.loc["p2", "track"] == "public"


def test_old_gaps_without_the_test_columns_give_a_report_that_says_why_there_is_no_summary(tmp_path: Path):
    from gama_utils.core.run_folders import save

    save(pd.DataFrame({"model": ["A"], "track": ["public"], "metric": ["puni"], "delta": [1.0]}), tmp_path, "gaps")
    first = report.read_run(tmp_path).first
    assert first.summary == [] and first.headline_png is None and "lacks ci_low, ci_high, p_holm" in first.missing
    assert "lacks ci_low" in report.build_report(tmp_path)["html"].read_text(encoding="utf-8")
