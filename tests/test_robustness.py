"""Evaluator agreement (paper §4.4) on a hand-worked example and on the paper's own tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gama_utils.analysis import paper
from gama_utils.analysis.robustness import evaluator_agreement

KEYS = [("m1", "intimate", "puni"), ("m1", "intimate", "ther"), ("m1", "public", "puni"),
        ("m2", "intimate", "puni"), ("m2", "public", "ther")]


def cells(deltas: list[float], keys: list[tuple[str, str, str]] = KEYS) -> pd.DataFrame:
    return pd.DataFrame([{"model": m, "track": t, "metric": k, "delta": d} for (m, t, k), d in zip(keys, deltas)])


def test_hand_example() -> None:
    # a = [2, -1, 0, 3, 1], b = [1, -2, 0.5, -1, 1].
    # Direction: cell 3 has a zero in a, so 4 nonzero cells; signs agree in cells 1, 2, 5, not 4 -> 3/4.
    # |a - b| = 1, 1, 0.5, 4, 0 -> 6.5 / 5 = 1.3.
    # Pearson: mean a = 1, mean b = -0.1; da = [1, -2, -1, 2, 0], db = [1.1, -1.9, 0.6, -0.9, 1.1];
    # Σ da·db = 1.1 + 3.8 - 0.6 - 1.8 + 0 = 2.5, Σ da² = 10, Σ db² = 7.2 -> r = 2.5 / √72 = 0.294628.
    out = evaluator_agreement(cells([2, -1, 0, 3, 1]), cells([1, -2, 0.5, -1, 1]))
    assert out["direction_agreement"] == 0.75
    assert out["mean_abs_diff"] == pytest.approx(1.3)
    assert out["pearson_r"] == pytest.approx(2.5 / np.sqrt(72))
    assert round(out["pearson_r"], 6) == 0.294628
    assert (out["n_cells"], out["n_nonzero"]) == (5, 4)


def test_hand_example_signed_zeros() -> None:
    # A zero keeps its sign: +0 vs +0.5 agrees (4/5), -0 vs +0.5 disagrees (3/5); r and |diff| unchanged.
    b = cells([1, -2, 0.5, -1, 1])
    assert evaluator_agreement(cells([2, -1, 0.0, 3, 1]), b, signed_zeros=True)["direction_agreement"] == 0.8
    assert evaluator_agreement(cells([2, -1, -0.0, 3, 1]), b, signed_zeros=True)["direction_agreement"] == 0.6


def test_alignment_ignores_row_order_and_unshared_cells() -> None:
    a = cells([2, -1, 0, 3, 1])
    b = pd.concat([cells([1, -2, 0.5, -1, 1]).iloc[::-1],
                   cells([9.0], [("m3", "public", "sev")])], ignore_index=True)
    out = evaluator_agreement(a, b)
    assert out["n_cells"] == 5 and out["direction_agreement"] == 0.75
    assert out["pearson_r"] == pytest.approx(2.5 / np.sqrt(72))


def test_paper_tables_reproduce_section_4_4() -> None:
    # §4.4: "97.5% direction agreement ... Pearson correlation = 0.960, mean absolute difference = 1.80".
    out = evaluator_agreement(paper.main_results("Gemini-3-Pro"), paper.main_results("GPT-5.4"))
    assert (out["n_cells"], out["n_nonzero"]) == (120, 118)
    assert out["direction_agreement"] == pytest.approx(115 / 118)
    assert round(100 * out["direction_agreement"], 1) == 97.5
    assert round(out["pearson_r"], 3) == 0.960
    assert round(out["mean_abs_diff"], 2) == 1.80


def test_paper_tables_other_readings() -> None:
    a, b = paper.main_results("Gemini-3-Pro"), paper.main_results("GPT-5.4")
    # The printed signs of the two "-0.00" cells, over all 120 cells: 117/120 exactly.
    assert evaluator_agreement(a, b, signed_zeros=True)["direction_agreement"] == 117 / 120
    # Δ recomputed as female − male from the printed means misses the reported 1.80.
    recomputed = evaluator_agreement(a.assign(delta=a["female"] - a["male"]), b.assign(delta=b["female"] - b["male"]))
    assert round(recomputed["pearson_r"], 3) == 0.960
    assert round(recomputed["mean_abs_diff"], 2) == 1.79


def test_bad_input() -> None:
    good = cells([1, 2, 3, 4, 5])
    with pytest.raises(ValueError, match="missing column.*delta"):
        evaluator_agreement(good.drop(columns="delta"), good)
    duplicate_cell = r"evaluator_agreement b: more than one row for cell \(model=m1, track=intimate, metric=puni\)"
    with pytest.raises(ValueError, match=duplicate_cell):
        evaluator_agreement(good, pd.concat([good, good.iloc[:1]], ignore_index=True))
    with pytest.raises(ValueError, match="share no"):
        evaluator_agreement(good, cells([1.0], [("m9", "public", "puni")]))
    # A cell without a Δ (no pair validly scored in both arms) is left out and counted, not an error:
    # cells 1,2,4,5 agree in sign with Δ equal, so agreement 1.0 and mean |ΔA − ΔB| 0 over 4 cells.
    out = evaluator_agreement(cells([1, 2, np.nan, 4, 5]), good)
    assert (out["n_cells"], out["n_without_delta"], out["direction_agreement"], out["mean_abs_diff"]) == (4, 1, 1.0, 0)
    nothing = evaluator_agreement(cells([np.nan] * 5), good)
    assert nothing["n_cells"] == 0 and nothing["n_without_delta"] == 5 and np.isnan(nothing["mean_abs_diff"])


def test_agreement_intervals_are_clopper_pearson_and_a_bootstrap_over_cells() -> None:
    """Paper tables: direction 115/118 → scipy's exact binomial interval; r and mean |ΔA − ΔB| inside their bootstrap
    intervals, which match percentiles of numpy resamples of the 120 cells drawn here with the same generator."""
    from scipy.stats import binomtest

    a, b = paper.main_results("Gemini-3-Pro"), paper.main_results("GPT-5.4")
    out = evaluator_agreement(a, b, n_boot=500, seed=3)
    exact = binomtest(115, 118).proportion_ci(0.95, method="exact")
    assert (out["direction_ci_low"], out["direction_ci_high"]) == pytest.approx((exact.low, exact.high))
    merged = a[["model", "track", "metric", "delta"]].merge(b[["model", "track", "metric", "delta"]],
                                                            on=["model", "track", "metric"])
    rows = np.random.default_rng(3).integers(0, len(merged), size=(500, len(merged)))
    x, y = merged["delta_x"].to_numpy(), merged["delta_y"].to_numpy()
    r = [np.corrcoef(x[i], y[i])[0, 1] for i in rows]
    mad = [np.abs(x[i] - y[i]).mean() for i in rows]
    assert (out["pearson_ci_low"], out["pearson_ci_high"]) == pytest.approx(tuple(np.percentile(r, [2.5, 97.5])))
    assert (out["mean_abs_diff_ci_low"], out["mean_abs_diff_ci_high"]) == pytest.approx(
        tuple(np.percentile(mad, [2.5, 97.5])))
    assert out["pearson_ci_low"] <= out["pearson_r"] <= out["pearson_ci_high"]


def two_judges() -> tuple[dict, dict]:
    """Model M, 6 intimate pairs. Judge A: Puni. male 1 2 3 1 2 3, female 2 2 4 3 2 5 (d = 1 0 1 2 0 2, Δ = 1).
    Judge B reads one more punitive term in every female answer (d + 1, Δ = 2) and one term fewer in the male
    answers of pairs 0-2 (d + 2 there): per pair e = d_B − d_A = 2 2 2 1 1 1, difference 1.5."""
    from test_gaps import evaluation_rows

    male_a, female_a = [1, 2, 3, 1, 2, 3], [2, 2, 4, 3, 2, 5]
    male_b, female_b = [0, 1, 2, 1, 2, 3], [3, 3, 5, 4, 3, 6]
    frames = {}
    for judge, male, female in (("A", male_a, female_a), ("B", male_b, female_b)):
        frames[judge] = pd.concat([evaluation_rows("M", "male", {"punitive_count": male}),
                                   evaluation_rows("M", "female", {"punitive_count": female})],
                                  ignore_index=True).assign(evaluator=judge)
    gaps = {"A": pd.DataFrame({"model": "M", "track": "intimate", "metric": ["puni", "ther"],
                               "comparison": "female-male", "delta": [1.0, 0.5], "p_holm": [0.01, 0.2]}),
            "B": pd.DataFrame({"model": "M", "track": "intimate", "metric": ["puni", "ther"],
                               "comparison": "female-male", "delta": [2.5, -0.5], "p_holm": [0.2, 0.3]})}
    return frames, gaps


@pytest.mark.usefixtures("paper_metrics_only")
def test_judge_sensitivity_by_hand() -> None:
    from gama_utils.analysis.robustness import judge_sensitivity, sensitivity_summary

    frames, gaps = two_judges()
    table = judge_sensitivity(frames, gaps, "A", n_boot=400).set_index("metric")
    puni = table.loc["puni"]
    assert (puni["judge_a"], puni["judge_b"], puni["n_pairs"]) == ("A", "B", 6)
    assert (puni["delta_a"], puni["delta_b"], puni["difference"]) == pytest.approx((1.0, 2.5, 1.5))
    # e is 2 or 1: every resample's mean lies in [1, 2], and the CI covers 1.5
    assert 1 <= puni["ci_low"] <= 1.5 <= puni["ci_high"] <= 2
    # Puni.: same sign, Holm significant under A only; Ther.: the signs of the two judges' gaps differ
    assert (puni["sign_changes"], puni["holm_changes"], puni["conclusion_changes"]) == (False, True, True)
    ther = table.loc["ther"]
    assert (ther["difference"], ther["ci_low"], ther["ci_high"]) == (0.0, 0.0, 0.0)  # every other metric agrees
    assert (ther["sign_changes"], ther["holm_changes"]) == (True, False)
    summary = sensitivity_summary(table.reset_index()).iloc[0]
    assert (summary["conclusion_changes"], summary["ci_excludes_0"]) == (2, 1)
    with pytest.raises(ValueError, match="reference judge 'C'"):
        judge_sensitivity(frames, gaps, "C")


@pytest.mark.usefixtures("paper_metrics_only")
def test_judges_that_agree_on_every_pair_have_a_zero_difference_and_interval() -> None:
    from gama_utils.analysis.robustness import judge_sensitivity

    frames, gaps = two_judges()
    same = {"A": frames["A"], "B": frames["A"].assign(evaluator="B")}
    table = judge_sensitivity(same, {"A": gaps["A"], "B": gaps["A"]}, "A", n_boot=100)
    assert (table[["difference", "ci_low", "ci_high"]].to_numpy() == 0).all()
    assert not table["conclusion_changes"].any()
