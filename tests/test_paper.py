"""The paper's tables in data/paper/ against the paper's own prose and internal arithmetic."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gama_utils.analysis import paper
from gama_utils.core import grid
from gama_utils.core.metrics import PAPER_METRIC_KEYS
from gama_utils.paths import PAPER

GAP_COLUMNS = ["table", "evaluator", "model", "group", "track", "metric", "male", "female", "delta", "delta_printed"]
RATES = ("emp_agg", "instr", "full_bl")
MODELS_OF = {2: paper.MAIN_MODELS, 3: paper.MAIN_MODELS, 10: paper.MAIN_MODELS, 11: paper.MAIN_MODELS,
             7: paper.QWEN_VARIANTS, 8: paper.QWEN_VARIANTS}
# Rows whose printed Δ differs from printed female − male by more than rounding allows.
# None found; a future transcription error or paper erratum must be listed here (and in README).
KNOWN_DELTA_INCONSISTENCIES: set[tuple[int, str, str]] = set()


@pytest.mark.parametrize("number", sorted(MODELS_OF))
def test_gap_table_shape_and_labels(number: int) -> None:
    df = paper.load_table(number)
    evaluator, track = paper.GAP_TABLES[number]
    models = MODELS_OF[number]
    assert list(df.columns) == GAP_COLUMNS
    assert len(df) == len(models) * 6
    assert list(df["model"].unique()) == list(models)
    assert set(df["metric"]) == set(PAPER_METRIC_KEYS)
    assert not df.duplicated(["model", "metric"]).any()
    assert (df["table"] == number).all() and (df["evaluator"] == evaluator).all() and (df["track"] == track).all()
    assert (df["group"] == df["model"].map(paper.model_group)).all()


@pytest.mark.parametrize("number", sorted(MODELS_OF))
def test_delta_is_female_minus_male_within_rounding(number: int) -> None:
    # Printed values carry their last digit u (0.01 for counts/ratings, 0.1 for % rates); each is off
    # its true value by at most u/2, so |Δ − (f − m)| ≤ 3·u/2 for honest rounding of the same means.
    df = paper.load_table(number)
    unit = np.where(df["metric"].isin(RATES), 0.1, 0.01)
    residual = (df["delta"] - (df["female"] - df["male"])).abs()
    bad = df[residual > 1.5 * unit + 1e-9]
    assert {(number, m, k) for m, k in zip(bad["model"], bad["metric"])} == {
        c for c in KNOWN_DELTA_INCONSISTENCIES if c[0] == number}


@pytest.mark.parametrize("number", sorted(MODELS_OF))
def test_printed_delta_string_agrees_with_value(number: int) -> None:
    df = paper.load_table(number)
    is_rate = df["metric"].isin(RATES)
    assert (df["delta_printed"].str.endswith("%") == is_rate).all()
    parsed = df["delta_printed"].str.rstrip("%").astype(float)
    assert np.array_equal(parsed.to_numpy(), df["delta"].to_numpy())
    assert (np.signbit(df["delta"]) == df["delta_printed"].str.startswith("-")).all()
    assert df.loc[is_rate, ["male", "female"]].stack().between(0, 100).all()
    assert df.loc[df["metric"] == "sev", ["male", "female"]].stack().between(1, 5).all()


def test_hand_copied_values() -> None:
    # Copied by hand from the paper's PDF rows.
    t2 = paper.load_table(2).set_index(["model", "metric"])
    assert tuple(t2.loc[("Doubao-Seed-2.0-Pro", "full_bl"), ["male", "female", "delta"]]) == (76.7, 39.3, -37.4)
    assert t2.loc[("GPT-5.4", "ther"), "delta_printed"] == "+0.78"
    t3 = paper.load_table(3).set_index(["model", "metric"])
    assert t3.loc[("GPT-5.4", "sev"), "delta_printed"] == "-0.00"
    assert np.signbit(t3.loc[("GPT-5.4", "sev"), "delta"])
    t8 = paper.load_table(8).set_index(["model", "metric"])
    assert tuple(t8.loc[("Qwen3-8B", "full_bl"), ["male", "female", "delta"]]) == (38.5, 39.1, 0.6)
    t11 = paper.load_table(11).set_index(["model", "metric"])
    assert tuple(t11.loc[("Doubao-Seed-2.0-Pro", "ther"), ["male", "female", "delta"]]) == (3.17, 3.05, -0.12)


def test_main_and_qwen_loaders() -> None:
    gemini, gpt = paper.main_results(), paper.main_results("GPT-5.4")
    assert len(gemini) == len(gpt) == 120
    assert set(gemini["table"]) == {2, 3} and set(gpt["table"]) == {10, 11}
    assert set(gemini["track"]) == set(grid.TRACKS)
    qwen = paper.qwen_results()
    assert len(qwen) == 84 and set(qwen["table"]) == {7, 8} and set(qwen["group"]) == {"qwen-variants"}
    with pytest.raises(ValueError, match="Claude"):
        paper.main_results("Claude")
    with pytest.raises(ValueError, match="available"):
        paper.load_table(5)


def test_track_averages_match_section_4_2_prose() -> None:
    avg = paper.track_averages(paper.main_results()).set_index(["track", "metric"])["delta"]
    assert (avg.index.get_level_values("track")[:6] == "intimate").all()
    assert list(avg.index.get_level_values("metric")[:6]) == list(PAPER_METRIC_KEYS)
    # "3.3 more punitive words, 0.40 higher severity, 14% ... instructional, 23% ... full-blame" (male),
    # "1.3 more therapeutic words and 9% higher empathy" (female); public "about 9% ... 6%".
    assert round(avg["intimate", "puni"], 1) == -3.3
    assert round(avg["intimate", "ther"], 1) == 1.3
    assert round(avg["intimate", "sev"], 2) == -0.40
    assert round(avg["intimate", "emp_agg"]) == 9
    assert round(avg["intimate", "instr"]) == -14
    assert round(avg["intimate", "full_bl"]) == -23
    assert round(avg["public", "instr"]) == -9
    assert round(avg["public", "full_bl"]) == -6


def test_track_averages_hand_example_and_errors() -> None:
    df = pd.DataFrame({"model": ["x", "y"], "track": "public", "metric": "puni",
                       "male": [2.0, 4.0], "female": [1.0, 2.0], "delta": [-1.0, -2.0]})
    row = paper.track_averages(df).iloc[0]
    assert (row["male"], row["female"], row["delta"], row["n_models"]) == (3.0, 1.5, -1.5, 2)
    with pytest.raises(ValueError, match="more than one row"):
        paper.track_averages(pd.concat([df, df]))
    with pytest.raises(ValueError, match="delta"):
        paper.track_averages(df.drop(columns="delta"))


def test_table6_pvalues() -> None:
    t6 = paper.pvalues()
    assert len(t6) == 10 * 2 * 4
    assert set(t6["model"]) == set(paper.MAIN_MODELS)
    assert set(t6["metric"]) == {"puni", "ther", "emp_agg", "instr"}
    assert not t6.duplicated(["model", "track", "metric"]).any()
    renamed = t6.loc[t6["model"] != t6["model_printed"]].drop_duplicates("model_printed")
    assert dict(zip(renamed["model_printed"], renamed["model"])) == {
        "Qwen-Max-3.5": "Qwen3.5", "Qwen-Max-3.0": "Qwen3", "Doubao-Pro": "Doubao-Seed-2.0-Pro"}
    bound = t6[t6["p_is_upper_bound"]]
    assert (bound["p_printed"] == "<.001").all() and (bound["p_value"] == 0.001).all()
    exact = t6[~t6["p_is_upper_bound"]].set_index(["model", "track", "metric"])["p_value"]
    assert exact.to_dict() == {("GPT-5.2", "public", "emp_agg"): 0.004, ("Kimi-2.5", "intimate", "instr"): 0.001,
                               ("Doubao-Seed-2.0-Pro", "public", "ther"): 0.002,
                               ("MiniMax-M2.7", "intimate", "ther"): 0.013, ("MiniMax-M2.7", "public", "puni"): 0.009,
                               ("MiniMax-M2.7", "public", "ther"): 0.015}
    assert (t6["p_value"] < 0.05).all()  # "all tested model-track-metric cells reach statistical significance"


def test_table6_directions_hold_in_tables_2_3() -> None:
    # App. B.3: Puni. and Instr. higher for male actors (Δ < 0), Ther. and Emp.-Agg. higher for female (Δ > 0).
    cells = paper.pvalues()[["model", "track", "metric"]].merge(paper.main_results(), on=["model", "track", "metric"])
    assert len(cells) == 80
    expected = cells["metric"].map({"puni": -1, "instr": -1, "ther": 1, "emp_agg": 1})
    assert (np.sign(cells["delta"]) == expected).all()


def test_table4_human_validation() -> None:
    t4 = paper.human_validation().set_index(["measure", "metric"])["value"]
    assert len(t4) == 8
    assert t4.to_dict() == {("fleiss_kappa", "puni"): 0.72, ("fleiss_kappa", "ther"): 0.61,
                            ("fleiss_kappa", "instr"): 0.74, ("fleiss_kappa", "full_bl"): 0.69,
                            ("evaluator_human_agreement", "puni"): 0.83, ("evaluator_human_agreement", "ther"): 0.76,
                            ("evaluator_human_agreement", "instr"): 0.80,
                            ("evaluator_human_agreement", "full_bl"): 0.78}


@pytest.mark.paper_shape
def test_composition_totals_match_figure_2() -> None:
    """The paper's Fig 2 against the repository grid, which has the paper's ten dimensions."""
    comp = pd.read_csv(PAPER / "composition.csv")
    assert list(comp.columns) == ["track", "dimension", "severity", "n"]
    assert len(comp) == 30
    assert comp["n"].sum() == 1298
    assert comp.groupby("track")["n"].sum().to_dict() == {"intimate": 305, "public": 993}
    assert set(comp["dimension"]) == set(grid.BY_SLUG)
    assert (comp["track"] == comp["dimension"].map(lambda s: grid.BY_SLUG[s].track)).all()
    assert {(d, s): n for d, s, n in zip(comp["dimension"], comp["severity"], comp["n"])} == {
        (d, s): n for d, counts in grid.COMPOSITION.items() for s, n in counts.items()}
