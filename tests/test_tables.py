"""Tables in the paper's layout (gama_utils.report.tables), checked against the paper's printed tables."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from gama_utils.analysis import gaps, paper
from gama_utils.analysis.paper import MAIN_MODELS
from gama_utils.core import run_folders
from gama_utils.core.schema import Absent
from gama_utils.report import tables


def gaps_frame(rows: list[tuple], simulated: bool = False, **columns) -> pd.DataFrame:
    """A gaps frame from (model, track, metric, male, female) rows; Δ = female − male."""
    frame = pd.DataFrame(rows, columns=["model", "track", "metric", "male", "female"])
    frame["comparison"] = "female-male"
    frame["delta"] = frame["female"] - frame["male"]
    for column in ("n_pairs", "n_excluded", "ci_low", "ci_high", "p_value", "p_holm", "effect_size"):
        frame[column] = columns.get(column, np.nan)
    frame["simulated"] = simulated
    return frame


@pytest.fixture(scope="module")
def paper_gaps() -> pd.DataFrame:
    return tables.paper_gaps(paper.main_results())


def test_paper_layout_reproduces_table_2(paper_gaps):
    table = tables.paper_layout(paper_gaps, "intimate")
    assert list(table.index.get_level_values("Model")) == list(MAIN_MODELS)
    assert list(table.index.get_level_values("Group")) == ["Proprietary models"] * 5 + ["Open-source models"] * 5
    assert list(table.columns[:3]) == [("Puni.", "Male"), ("Puni.", "Female"), ("Puni.", "Δ")]
    assert table.loc[("Proprietary models", "GPT-5.4"), ("Puni.", "Male")] == pytest.approx(4.98)
    shown = tables.format_table(table)
    # Table 2, GPT-5.4 row: Ther. 1.20 1.98 +0.78; Emp.-Agg. 9.6% 15.5% +5.9%; Full-Bl. 90.2% 67.9% -22.3%.
    gpt = shown.loc[("Proprietary models", "GPT-5.4")]
    assert [gpt[("Ther.", p)] for p in ("Male", "Female", "Δ")] == ["1.20", "1.98", "+0.78"]
    assert [gpt[("Emp.-Agg.", p)] for p in ("Male", "Female", "Δ")] == ["9.6%", "15.5%", "+5.9%"]
    assert gpt[("Full-Bl.", "Δ")] == "-22.3%"
    # Table 3, Kimi-2.5 row: Puni. 11.46 9.55 -1.90.
    kimi = tables.format_table(tables.paper_layout(paper_gaps, "public")).loc[("Open-source models", "Kimi-2.5")]
    assert [kimi[("Puni.", p)] for p in ("Male", "Female", "Δ")] == ["11.46", "9.55", "-1.90"]


def test_across_model_averages_reproduce_the_papers_statements(paper_gaps):
    # §4.2 / DESIGN §7. By hand for intimate Puni. (Table 2 Δ column):
    # −1.14 −1.60 −5.09 −6.39 −4.16 −1.23 −3.75 −2.72 −3.51 −3.51 = −33.10 → mean −3.31 → "3.3 more" for male.
    averages = gaps.model_average(paper_gaps)
    intimate_puni = averages[(averages["track"] == "intimate") & (averages["metric"] == "puni")]["delta"].item()
    assert intimate_puni == pytest.approx(-3.31)
    check = tables.check_paper_statements(averages)
    assert len(check) == 8 and check["agrees"].all(), check
    assert check.set_index(["track", "metric"]).loc[("intimate", "instr"), "average"] == pytest.approx(-14.25)


def test_statement_check_flags_a_disagreement(paper_gaps):
    averages = gaps.model_average(paper_gaps)
    averages.loc[(averages["track"] == "public") & (averages["metric"] == "full_bl"), "delta"] = -7.0
    check = tables.check_paper_statements(averages).set_index(["track", "metric"])
    assert not check.loc[("public", "full_bl"), "agrees"] and check["agrees"].sum() == 7


def test_other_models_come_after_the_papers_groups():
    frame = gaps_frame([("Mine", "intimate", "puni", 2.0, 1.0), ("gpt-5.2", "intimate", "puni", 3.0, 1.0),
                        ("Kimi-2.5", "intimate", "puni", 4.0, 1.0), ("Qwen3-8B", "intimate", "puni", 1.0, 1.5)])
    table = tables.paper_layout(frame, "intimate")
    assert list(table.index) == [("Proprietary models", "gpt-5.2"), ("Open-source models", "Kimi-2.5"),
                                 ("Qwen variants", "Qwen3-8B"), ("Other models", "Mine")]
    assert table[("Puni.", "Δ")].tolist() == [-2.0, -3.0, 0.5, -1.0]


def test_paper_layout_refuses_stratified_gaps():
    frame = gaps_frame([("A", "intimate", "puni", 2.0, 1.0)]).assign(dimension="financial_control")
    with pytest.raises(ValueError, match="stratified by dimension"):
        tables.paper_layout(frame, "intimate")


def test_pvalue_table_prints_like_table_6():
    # Table 6 prints p < .001 as "<.001" and others with three decimals and no leading zero.
    pvalues = paper.pvalues()
    frame = pvalues.assign(male=np.nan, female=np.nan, delta=np.nan, p_holm=np.nan, simulated=False,
                           comparison="female-male")
    table = tables.format_table(tables.pvalue_table(frame))
    printed = pvalues[~pvalues["p_is_upper_bound"]]
    assert len(printed) == 6  # .004 (GPT-5.2), .001 (Kimi), .002 (Doubao), .013 .009 .015 (MiniMax)
    for row in printed.itertuples():
        group = tables.model_rows([row.model])[0][0]
        column = (tables.TRACK_LABELS[row.track], tables.metric(row.metric).label)
        assert table.loc[(group, row.model), column] == row.p_printed
    tiny = tables.format_table(tables.pvalue_table(frame.assign(p_value=0.0004)))
    assert (tiny.to_numpy() == "<.001").all()


def test_pvalue_table_adjusted_uses_holm():
    frame = gaps_frame([("A", "intimate", "puni", 2.0, 1.0), ("A", "public", "ther", 2.0, 1.0)])
    frame["p_value"], frame["p_holm"] = [0.01, 0.2], [0.02, 0.2]
    table = tables.pvalue_table(frame, adjusted=True)
    assert table.loc[("Other models", "A"), ("Intimate Track", "Puni.")] == 0.02
    assert table.loc[("Other models", "A"), ("Public Track", "Ther.")] == 0.2
    assert np.isnan(table.loc[("Other models", "A"), ("Public Track", "Puni.")])


def test_stratified_table_averages_over_models():
    # Δ puni: A financial −2, privacy −1; B financial −4, privacy +1 → averages −3 and 0.
    rows = [("A", "intimate", "puni", 5.0, 3.0, "financial_control"),
            ("A", "intimate", "puni", 5.0, 4.0, "privacy_violation"),
            ("B", "intimate", "puni", 6.0, 2.0, "financial_control"),
            ("B", "intimate", "puni", 1.0, 2.0, "privacy_violation")]
    frame = gaps_frame([r[:5] for r in rows]).assign(dimension=[r[5] for r in rows])
    table = tables.stratified_table(frame, "dimension")
    assert list(table.index) == [("Intimate Track", "Financial control"), ("Intimate Track", "Privacy violation")]
    assert table["Puni."].tolist() == [-3.0, 0.0]
    per_model = tables.stratified_table(frame, "dimension", per_model=True)
    assert per_model.loc[("Intimate Track", "B", "Privacy violation"), "Puni."] == 1.0
    assert tables.format_table(table)["Puni."].tolist() == ["-3.00", "+0.00"]
    with pytest.raises(ValueError, match="also stratified by severity"):
        tables.stratified_table(frame.assign(severity="L1"), "dimension")


def test_side_by_side_with_paper():
    # Paper Table 2: GPT-5.4 Puni. −1.14, Ther. +0.78; Kimi-2.5 Puni. −3.51, Ther. +1.05.
    # Run: gpt-5.4 Puni. +0.5 (opposite), Ther. +0.2 (same); Kimi-2.5 Puni. −1 (same), Ther. 0 (undecided).
    # Direction agreement over decided cells: 2/3. "Mine" is not a paper model and is left out.
    run = gaps_frame([("gpt-5.4", "intimate", "puni", 1.0, 1.5), ("gpt-5.4", "intimate", "ther", 1.0, 1.2),
                      ("Kimi-2.5", "intimate", "puni", 3.0, 2.0), ("Kimi-2.5", "intimate", "ther", 2.0, 2.0),
                      ("Mine", "intimate", "puni", 3.0, 2.0)])
    table = tables.side_by_side_with_paper(run, paper.main_results())
    assert list(table.index) == [("Intimate Track", "Proprietary models", "gpt-5.4"),
                                 ("Intimate Track", "Open-source models", "Kimi-2.5")]
    gpt = table.loc[("Intimate Track", "Proprietary models", "gpt-5.4")]
    assert (gpt[("Puni.", "Run Δ")], gpt[("Puni.", "Paper Δ")], gpt[("Puni.", "Same sign")]) == (
        pytest.approx(0.5), pytest.approx(-1.14), False)
    assert pd.isna(table.loc[("Intimate Track", "Open-source models", "Kimi-2.5"), ("Ther.", "Same sign")])
    assert table.attrs["direction_agreement"] == pytest.approx(2 / 3)
    shown = tables.format_table(table)
    assert shown.loc[("Intimate Track", "Proprietary models", "gpt-5.4"), ("Ther.", "Same sign")] == "yes"


def test_side_by_side_is_absent_without_a_paper_model():
    side = tables.side_by_side_with_paper(gaps_frame([("Mine", "intimate", "puni", 3.0, 2.0)]), paper.main_results())
    assert isinstance(side, Absent) and "none of this run's models is one of the paper's" in side.reason


def test_paper_gaps_accepts_labels_and_printed_track_names():
    printed = pd.DataFrame({"model": ["GPT-5.4"], "track": ["Intimate Track"], "metric": ["Full-Bl."],
                            "male": [90.2], "female": [67.9], "delta": [-22.3]})
    converted = tables.paper_gaps(printed)
    assert converted[["track", "metric", "delta"]].values.tolist() == [["intimate", "full_bl", -22.3]]
    with pytest.raises(ValueError, match="row 0: metric='Blame'"):
        tables.paper_gaps(printed.assign(metric="Blame"))


def test_write_table_files_and_simulated_caption(tmp_path, paper_gaps):
    table = tables.paper_layout(paper_gaps, "intimate")
    paths = tables.write_table(table, tmp_path, "table2", "Table 2: Intimate Track, Δ = female − male.")
    assert sorted(p.name for p in paths.values()) == ["table2.csv", "table2.md", "table2.tex"]
    csv = pd.read_csv(paths["csv"])
    assert csv.loc[0, "Model"] == "GPT-5.4" and csv.loc[0, "Puni. Male"] == pytest.approx(4.98)
    assert csv.loc[0, "Full-Bl. Δ"] == pytest.approx(-22.3)
    markdown = paths["md"].read_text()
    assert "SIMULATED" not in markdown and "| GPT-5.4" in markdown and "+0.78" in markdown
    tex = paths["tex"].read_text()
    assert r"\caption{Table 2: Intimate Track, $\Delta$ = female - male.}" in tex
    assert r"-22.3\%" in tex and r"\multicolumn{3}{c}{Puni.}" in tex

    simulated = tables.paper_layout(paper_gaps.assign(simulated=[True] + [False] * (len(paper_gaps) - 1)), "intimate")
    paths = tables.write_table(simulated, tmp_path, "sim", "Table 2.")
    assert paths["md"].read_text().startswith("SIMULATED") and "SIMULATED" in paths["tex"].read_text()


def test_rows_are_grouped_by_the_registry_group_with_other_models_last():
    rows = tables.model_rows(["mine-b", "GPT-5.2", "imported", "mine-a", "gpt-5.4", "Qwen3-8B"],
                             {"mine-b": "My lab", "mine-a": "My lab", "GPT-5.2": "proprietary", "imported": "other"})
    assert list(rows) == [("Proprietary models", "gpt-5.4"), ("Proprietary models", "GPT-5.2"),
                          ("Qwen variants", "Qwen3-8B"), ("My lab", "mine-b"), ("My lab", "mine-a"),
                          ("Other models", "imported")]


def test_tables_in_a_plumbing_check_run_say_so(tmp_path):

    run = tmp_path / "run"
    run_folders.update_manifest(run, "04_respond", models=["smollm2"])
    frame = pd.DataFrame({"model": ["smollm2"], "n": [2]})
    caption = tables.write_table(frame, run / "tables", "x", "Responses")["md"].read_text().splitlines()[0]
    assert caption.startswith("PLUMBING CHECK") and caption.endswith("Responses")
    assert tables.write_table(frame, tmp_path / "elsewhere" / "tables", "x", "Responses")["md"].read_text(
    ).splitlines()[0] == "Responses"


# ---------------------------------------------------------------- what the table files state (issue 16.3, 16.8)

def gaps_with_tests() -> pd.DataFrame:
    """Two models × Puni./Instr. on the intimate track with tests; B's Instr. flips under zsplit."""
    frame = gaps_frame([("A", "intimate", "puni", 5.0, 3.0), ("A", "intimate", "instr", 60.0, 50.0),
                        ("B", "intimate", "puni", 6.0, 5.5), ("B", "intimate", "instr", 70.0, 61.0)], simulated=True)
    frame["n_pairs"], frame["n_nonzero"] = 305, [280, 60, 250, 40]
    frame["p_value"], frame["p_holm"] = [1e-20, 0.002, 0.03, 0.004], [4e-20, 0.006, 0.03, 0.008]
    frame["p_zsplit"], frame["p_holm_zsplit"] = [1e-19, 0.003, 0.04, 0.03], [4e-19, 0.009, 0.04, 0.06]
    frame["effect_size"], frame["effect_size_ties"] = [-0.9, -0.5, -0.2, -0.6], [-0.85, -0.1, -0.15, -0.08]
    frame["holm_family_size"] = 4
    return frame


def test_table6_notes_state_family_zero_handling_and_effect_sizes(tmp_path):
    table = tables.pvalue_table(gaps_with_tests())
    notes = " ".join(table.attrs["notes"])
    assert "all 4 model × track × metric cells" in notes and "changes 1 of 4 Holm decisions" in notes
    assert "Zero differences are dropped" in notes and "rank-biserial" in notes
    paths = tables.write_table(table, tmp_path, "table6_pvalues", "Paired Wilcoxon signed-rank p-values")
    markdown = paths["md"].read_text(encoding="utf-8")
    assert markdown.startswith("SIMULATED") and "\n\nNotes. Two-sided paired Wilcoxon" in markdown
    tex = paths["tex"].read_text(encoding="utf-8")
    assert r"\footnotesize Notes. Two-sided" in tex and tex.rstrip().endswith(r"\end{table}")
    assert "changes 1 of 4 Holm decisions" in tex


def test_pvalue_details_puts_the_sensitivity_and_both_effect_sizes_beside_the_test():
    details = tables.pvalue_details(gaps_with_tests(), metrics=("puni", "instr"))
    b_instr = details.loc[("Intimate Track", "Other models", "B", "Instr.")]
    assert (b_instr["p Holm"], b_instr["p Holm zsplit"], b_instr["Holm decision changes"]) == (0.008, 0.06, True)
    assert (b_instr["r"], b_instr["r with ties"], b_instr["n differing"]) == (-0.6, -0.08, 40)
    assert details["Holm decision changes"].sum() == 1
    shown = tables.format_table(details)
    assert shown.loc[("Intimate Track", "Other models", "A", "Puni."), "p"] == "<.001"
    assert shown.loc[("Intimate Track", "Other models", "B", "Instr."), "p Holm zsplit"] == ".060"


def test_every_csv_says_whether_it_is_simulated(tmp_path):
    # The dimension table had no mark at all: its CSV now carries a simulated column, True for simulated
    # cells and False for real ones; a table's own per-row column is kept as it is.
    rows = [("A", "intimate", "puni", 5.0, 3.0, "financial_control"), ("A", "intimate", "puni", 5.0, 4.0,
                                                                       "privacy_violation")]
    for simulated in (True, False):
        frame = gaps_frame([r[:5] for r in rows], simulated=simulated).assign(dimension=[r[5] for r in rows])
        path = tables.write_table(tables.stratified_table(frame, "dimension"), tmp_path, "dimension_gaps", "Δ")["csv"]
        assert pd.read_csv(path)["simulated"].tolist() == [simulated, simulated]
    own = pd.DataFrame({"model": ["a", "b"], "simulated": [True, False]})
    paths = tables.write_table(own, tmp_path, "own", "x")
    assert pd.read_csv(paths["csv"])["simulated"].tolist() == [True, False]
    # A table whose only mark is its own column (07's ablation tables) gets the caption from it too.
    assert paths["md"].read_text().startswith("SIMULATED")
    real = tables.write_table(own.assign(simulated=False), tmp_path, "real", "x")
    assert not real["md"].read_text().startswith("SIMULATED")


# ---------------------------------------------------------------- escaping for every format (issue 15.6)

HOSTILE = ['=HYPERLINK("http://x","y")', "<script>alert(1)</script>", "a|b", "first line\nsecond line",
           r"\textbf{x}", "100%", "$5", "@SUM(A1)", "\tTAB", "\rCR", "-1+1", "-3.2", "+0.78"]
# What a spreadsheet would run as a formula gets an apostrophe; numbers, and text that is a plain number, do not.
CSV_EXPECTED = ["'" + HOSTILE[0], *HOSTILE[1:7], "'@SUM(A1)", "'\tTAB", "'\rCR", "'-1+1", "-3.2", "+0.78"]
LATEX_ESCAPES = (r"\textbackslash{}", r"\&", r"\%", r"\$", r"\#", r"\_", r"\{", r"\}", r"\textasciitilde{}",
                 r"\textasciicircum{}", r"$\Delta$", r"$<$", r"$>$", r"$\times$", r"\textbar{}")


def hostile_table() -> pd.DataFrame:
    return pd.DataFrame({"Model": HOSTILE, "Answer": list(reversed(HOSTILE)), "Δ": -3.2})


def test_csv_cells_cannot_run_as_formulas_and_numbers_stay_numbers(tmp_path):
    path = tables.write_table(hostile_table(), tmp_path, "hostile", "c")["csv"]
    import csv as csv_module

    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv_module.reader(f))
    assert rows[0] == ["Model", "Answer", "Δ", "simulated"] and len(rows) == len(HOSTILE) + 1
    assert [r[0] for r in rows[1:]] == CSV_EXPECTED and [r[1] for r in rows[1:]] == CSV_EXPECTED[::-1]
    raw = path.read_text(encoding="utf-8")
    assert raw.count(",-3.2,") == len(HOSTILE), "numbers are written unquoted, as numbers"
    back = pd.read_csv(path)
    assert back["Δ"].dtype == float and (back["Δ"] == -3.2).all()
    assert back.loc[3, "Model"] == "first line\nsecond line" and back.loc[9, "Model"] == "'\rCR"


def test_markdown_cells_show_as_written_and_keep_the_table_shape(tmp_path):
    import html

    import mistune

    markdown = tables.write_table(hostile_table(), tmp_path, "hostile", "Caption with <b>html</b> | pipe")["md"]
    text = markdown.read_text(encoding="utf-8")
    caption, _, body = text.partition("\n\n")
    assert caption == r"Caption with \<b\>html\</b\> \| pipe"
    lines = body.strip().splitlines()
    assert len(lines) == len(HOSTILE) + 2, "a line break inside a cell does not break the row"
    assert all(len(re.findall(r"(?<!\\)\|", line)) == 4 for line in lines), "no unescaped pipe inside a cell"
    page = mistune.create_markdown(escape=True, plugins=["table"])(body)
    assert "<script" not in page and "<b>" not in page
    cells = [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", page, re.S)]
    shown = [v.replace("\n", " ").replace("\r", " ") for v in HOSTILE]
    assert cells[0::3] == [v.strip() for v in shown] and cells[2::3] == ["-3.20"] * len(HOSTILE)


def test_latex_escapes_its_specials(tmp_path):
    tex = tables.write_table(hostile_table(), tmp_path, "hostile", r"Caption 100% $ \emph{x}")["tex"].read_text()
    assert r"\caption{Caption 100\% \$ \textbackslash{}emph\{x\}}" in tex
    assert r"\textbackslash{}textbf\{x\}" in tex and r"a\textbar{}b" in tex and r"$<$script$>$" in tex
    body = tex.split("\\midrule\n", 1)[1].split("\\bottomrule", 1)[0].splitlines()
    assert len(body) == len(HOSTILE), "a line break inside a cell does not break the row"
    for row in body:
        assert row.endswith(r" \\")
        bare = row[:-3]
        for escape in LATEX_ESCAPES:
            bare = bare.replace(escape, "")
        assert bare.count("&") == 2 and not re.search(r"[\\%$#_{}~^]", bare), row


# ---------------------------------------------------------------- scenario metadata strata (issue 17.6)

def test_stratified_table_by_occupation_stereotype_names_levels_and_counts_pairs():
    frame = gaps_frame([("A", "intimate", "puni", 5.0, 3.0), ("A", "intimate", "puni", 4.0, 4.5),
                        ("B", "intimate", "puni", 6.0, 2.0), ("B", "intimate", "puni", 4.0, 3.5),
                        ("A", "intimate", "puni", 3.0, 3.0), ("B", "intimate", "puni", 2.0, 3.0)])
    frame["occupation_stereotype"] = ["female", "male", "female", "male", "no occupation named", "no occupation named"]
    frame["n_pairs"] = [7, 8, 7, 8, 280, 280]
    table = tables.stratified_table(frame, "occupation_stereotype")
    # Averages over models by hand: female (−2 − 4)/2 = −3.0; male (0.5 − 0.5)/2 = 0.0; none (0 + 1)/2 = 0.5.
    assert list(table.index) == [("Intimate Track", "female-stereotyped"), ("Intimate Track", "male-stereotyped"),
                                 ("Intimate Track", "no occupation named")]
    assert table["Puni."].tolist() == [-3.0, 0.0, 0.5]
    assert table.index.names == ["Track", "Partner occupation stereotype"]
    assert table.attrs["notes"] == ["Pairs per level (the most any model has; a level with few pairs gives a wide, "
                                    "unstable Δ): Intimate Track: female-stereotyped 7, male-stereotyped 8, "
                                    "no occupation named 280."]


def test_an_undeclared_stratum_is_refused_with_the_declared_ones():
    from gama_utils.analysis import gaps as gap_stats

    evaluations = pd.DataFrame({"pair_id": ["p"], "occupation": ["cook"]})
    with pytest.raises(ValueError,
                       match="'occupation' is not a declared stratum; the attributes declared in gama_utils"):
        gap_stats.stratified_gaps(evaluations, "occupation")
    with pytest.raises(ValueError, match="no 'setting_language' column: merge the benchmark's pairs first"):
        gap_stats.stratified_gaps(evaluations, "setting_language")


def test_pooled_table_shows_the_pooled_gaps_with_the_method_and_the_sentence_as_notes():
    from gama_utils.analysis import pooling

    rows = pd.DataFrame({"model": ["a", "b", "c"], "track": "intimate", "metric": "full_bl",
                         "comparison": "female-male", "delta": [-20.0, -25.0, -10.0], "n_pairs": 100,
                         "sd_diff": [50.0, 40.0, 45.0], "simulated": True})
    pooled = pooling.pooled_gaps(rows)
    table = tables.pooled_table(pooled)
    row = table.loc[("Intimate Track", "Full-Bl.")]
    assert (row["Pooled Δ"], row["CI low"], row["PI high"], row["Same sign"]) == (
        pooled.loc[0, "pooled_delta"], pooled.loc[0, "ci_low"], pooled.loc[0, "pi_high"], 3)
    assert table.attrs["notes"] == [pooled.loc[0, "method"], pooling.pooled_summary(pooled)["intimate"]]
    assert table.attrs["simulated"]
