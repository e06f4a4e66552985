"""§4.3 as tests (gama_utils.analysis.ablation, issue 16.6): gap differences between variants, the size trend."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats
from statsmodels.stats.multitest import multipletests

from gama_utils.analysis import ablation, stats
from tests.test_gaps import evaluation_rows

SCALE = ablation.Comparison("Scale", ("toy-1b", "toy-4b", "toy-16b"))
SIZES = {"toy-1b": 1.0, "toy-4b": 4.0, "toy-16b": 16.0}


def variants() -> pd.DataFrame:
    return pd.DataFrame([{"model": m, "family": "Toy", "size_b": s, "post_training": "instruct", "thinking": False,
                          "release": None} for m, s in SIZES.items()], columns=list(ablation.VARIANT_COLUMNS))


def toy_evaluations(n: int, slope: float, seed: int, invalid: dict[str, tuple[int, ...]] | None = None) -> pd.DataFrame:
    """Puni. per model: male ~ Poisson(6); female = male + (slope · log2 size) + noise, rounded."""
    rng = np.random.default_rng(seed)
    ids = [f"q{i:03d}" for i in range(n)]
    frames = []
    for model, size in SIZES.items():
        male = rng.poisson(6, n)
        female = np.rint(male + slope * np.log2(size) + rng.normal(0, 1.5, n))
        frames.append(evaluation_rows(model, "male", {"punitive_count": male}, pair_ids=ids))
        frames.append(evaluation_rows(model, "female", {"punitive_count": female}, pair_ids=ids,
                                      invalid=(invalid or {}).get(model, ())))
    return pd.concat(frames, ignore_index=True)


def per_pair_d(evaluations: pd.DataFrame, model: str) -> pd.Series:
    rows = evaluations[(evaluations["model"] == model) & evaluations["valid"]]
    wide = rows.pivot(index="pair_id", columns="arm", values="punitive_count").dropna()
    return (wide["female"] - wide["male"]).astype(float)


def test_difference_of_gaps_is_paired_over_shared_pairs():
    # toy-4b's female evaluations of pairs 0-4 are invalid, so 1b → 4b and 4b → 16b use the 35 other pairs.
    evaluations = toy_evaluations(40, slope=-0.5, seed=1, invalid={"toy-4b": (0, 1, 2, 3, 4)})
    result = ablation.gap_differences(evaluations, [SCALE], n_boot=1000, seed=3, metrics=("puni",))
    assert list(zip(result["from_model"], result["to_model"])) == [("toy-1b", "toy-4b"), ("toy-4b", "toy-16b")]
    first = result.iloc[0]
    d_from, d_to = per_pair_d(evaluations, "toy-1b"), per_pair_d(evaluations, "toy-4b")
    shared = sorted(set(d_from.index) & set(d_to.index))
    e = (d_to[shared] - d_from[shared]).to_numpy()
    assert first["n_pairs"] == 35 == len(shared)
    assert first["difference"] == pytest.approx(e.mean()) == pytest.approx(first["delta_to"] - first["delta_from"])
    # The same resamples drawn here with numpy: n pairs with replacement, 1000 times, from the cell's generator.
    draws = stats.cell_seed(3, ("intimate", "toy-1b", "toy-4b")).integers(0, e.size, size=(1000, e.size))
    means = e[draws].mean(axis=1)
    assert [first["ci_low"], first["ci_high"]] == pytest.approx(list(np.percentile(means, [2.5, 97.5])))
    assert first["se"] == pytest.approx(means.std(ddof=1))
    assert first["p_value"] == pytest.approx(2 * scipy_stats.norm.sf(abs(e.mean()) / means.std(ddof=1)))
    assert result["p_holm"].to_numpy() == pytest.approx(multipletests(result["p_value"], method="holm")[1])


def test_bootstrap_p_is_close_to_the_paired_t_test():
    # With many resamples the bootstrap SE is sd(e)/√n·√((n−1)/n), so the Wald p is near the paired t-test's.
    evaluations = toy_evaluations(200, slope=-0.15, seed=2)
    row = ablation.gap_differences(evaluations, [SCALE], n_boot=4000, seed=0, metrics=("puni",)).iloc[1]
    d_from, d_to = per_pair_d(evaluations, "toy-4b"), per_pair_d(evaluations, "toy-16b")
    t_test = scipy_stats.ttest_rel(d_to, d_from)
    assert row["p_value"] == pytest.approx(t_test.pvalue, rel=0.25)
    assert row["se"] == pytest.approx(np.std(d_to - d_from, ddof=1) / np.sqrt(200), rel=0.05)


def test_size_trend_is_weighted_least_squares_with_a_bootstrap_ci():
    # Δ falls by 0.5 terms per doubling of size (slope −0.5 on log2 size); the CI over 400 pairs covers it.
    evaluations = toy_evaluations(400, slope=-0.5, seed=4)
    trend = ablation.size_trend(evaluations, variants(), [SCALE], n_boot=1000, seed=0, metrics=("puni",))
    row = trend.iloc[0]
    d = [per_pair_d(evaluations, m) for m in SIZES]
    deltas = np.array([x.mean() for x in d])
    weights = np.array([x.size / x.var(ddof=1) for x in d])
    expected = np.polyfit(np.log2(list(SIZES.values())), deltas, 1, w=np.sqrt(weights))[0]
    assert row["slope"] == pytest.approx(expected, rel=1e-10)
    assert row["ci_low"] < -0.5 < row["ci_high"] and row["p_pairs"] < 1e-6
    assert (row["n_models"], row["sizes"]) == (3, "1B, 4B, 16B")


def test_no_scale_comparison_gives_no_trend():
    evaluations = toy_evaluations(30, slope=0.0, seed=5)
    post_training = ablation.Comparison("Post-training", ("toy-1b", "toy-4b"))
    assert ablation.size_trend(evaluations, variants(), [post_training], n_boot=50, metrics=("puni",)).empty
    with pytest.raises(ValueError, match="no evaluations of 'toy-1b' or 'missing'"):
        ablation.gap_differences(evaluations, [ablation.Comparison("Scale", ("toy-1b", "missing"))], n_boot=10)


def test_trend_on_a_tiny_run_falls_back_to_equal_weights():
    # Four pairs; toy-1b's female answers equal its male ones shifted by 2 on every pair (no spread in d):
    # 1/SE² is undefined, so the slope is ordinary least squares of the three Δ (by np.polyfit).
    ids = ["a", "b", "c", "d"]
    frames = []
    for model, female in (("toy-1b", [3, 4, 5, 6]), ("toy-4b", [1, 5, 4, 4]), ("toy-16b", [0, 2, 3, 5])):
        frames.append(evaluation_rows(model, "male", {"punitive_count": [1, 2, 3, 4]}, pair_ids=ids))
        frames.append(evaluation_rows(model, "female", {"punitive_count": female}, pair_ids=ids))
    row = ablation.size_trend(pd.concat(frames, ignore_index=True), variants(), [SCALE], n_boot=200,
                              metrics=("puni",)).iloc[0]
    # Δ: 2, (0 + 3 + 1 + 0)/4 = 1, (−1 + 0 + 0 + 1)/4 = 0 over log2 sizes 0, 2, 4 → slope −0.5.
    assert row["weighting"].startswith("equal") and row["slope"] == pytest.approx(-0.5)


def test_the_trend_at_the_level_of_models_is_a_regression_over_the_variants_with_a_linearity_check():
    """scipy's linregress over the three variants' Δ (t on 3 − 2 = 1 df), and χ² = Σ w (Δ − WLS fit)² on 1 df."""
    evaluations = toy_evaluations(300, slope=-0.5, seed=6)
    row = ablation.size_trend(evaluations, variants(), [SCALE], n_boot=200, seed=0, metrics=("puni",)).iloc[0]
    d = [per_pair_d(evaluations, m) for m in SIZES]
    deltas = np.array([x.mean() for x in d])
    x = np.log2(list(SIZES.values()))
    fit = scipy_stats.linregress(x, deltas)
    assert (row["slope_models"], row["se_models"], row["p_value"]) == pytest.approx((fit.slope, fit.stderr,
                                                                                     fit.pvalue), rel=1e-9)
    half = scipy_stats.t.ppf(0.975, 1) * fit.stderr
    assert (row["ci_low_models"], row["ci_high_models"]) == pytest.approx((fit.slope - half, fit.slope + half))
    weights = np.array([v.size / v.var(ddof=1) for v in d])
    line = np.polyfit(x, deltas, 1, w=np.sqrt(weights))
    chi2 = float(np.sum(weights * (deltas - np.polyval(line, x)) ** 2))
    assert row["df"] == 1 and row["chi2_linearity"] == pytest.approx(chi2, rel=1e-9)
    assert row["p_linearity"] == pytest.approx(scipy_stats.chi2.sf(chi2, 1))


def test_claims_are_one_holm_family_and_say_which_claim_each_trend_supports():
    """Made-up p: the family is the four differences and the three trends together (statsmodels' Holm over all
    seven); a trend significant after Holm on a line reads as a trend, off the line as not straight; a trend
    that is not, with a significant difference in its cell or a bad line, reads as variants differing."""
    cell = {"comparison": "Scale", "track": "intimate"}
    differences = pd.DataFrame([{**cell, "metric": m, "p_value": p}
                                for m, p in (("puni", 0.001), ("ther", 0.4), ("sev", 0.5), ("instr", 0.3))])
    trend = pd.DataFrame([{**cell, "metric": "puni", "p_value": 0.2, "p_linearity": 0.5},
                          {**cell, "metric": "ther", "p_value": 0.0001, "p_linearity": 0.6},
                          {**cell, "metric": "sev", "p_value": 0.0002, "p_linearity": 0.001},
                          {**cell, "metric": "instr", "p_value": 0.3, "p_linearity": 0.01},
                          {**cell, "metric": "full_bl", "p_value": 0.3, "p_linearity": 0.4}])
    d, t = ablation.claims(differences, trend)
    expected = multipletests([0.001, 0.4, 0.5, 0.3, 0.2, 0.0001, 0.0002, 0.3, 0.3], method="holm")[1]
    assert list(d["p_holm"]) + list(t["p_holm"]) == pytest.approx(list(expected))
    assert set(d["holm_family_size"]) == set(t["holm_family_size"]) == {9}
    differ, trend_, bent, nothing = ("variants differ, no trend with size", "trend with size",
                                     "trend, not a straight line", "no evidence of a change")
    assert list(t["reading"]) == [differ, trend_, bent, differ, nothing]
