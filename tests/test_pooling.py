"""Random-effects pooling of the models' Δ (gama_utils.analysis.pooling) against statsmodels and hand-worked numbers."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats
from statsmodels.stats.meta_analysis import combine_effects

from gama_utils.analysis import pooling, stats

pytestmark = pytest.mark.usefixtures("paper_metrics_only")

DELTA = np.array([-1.0, -2.0, -0.5, -3.0, -1.5])
VARIANCE = np.array([0.04, 0.09, 0.05, 0.1, 0.02])


def statsmodels_fit(delta: np.ndarray, variance: np.ndarray) -> pd.DataFrame:
    """statsmodels' DerSimonian-Laird ("chi2") pooling with t intervals; its 'random effect wls' row is HKSJ."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # statsmodels warns that the per-sample CIs are normal without nobs
        result = combine_effects(delta, variance, method_re="chi2", use_t=True)
        return result, result.summary_frame()


def test_random_effects_equals_statsmodels_dersimonian_laird_with_hksj():
    result, frame = statsmodels_fit(DELTA, VARIANCE)
    fit = pooling.random_effects(DELTA, VARIANCE)
    assert fit["tau2"] == pytest.approx(result.tau2, rel=1e-10)
    assert fit["i2"] == pytest.approx(result.i2, rel=1e-10)
    assert fit["q"] == pytest.approx(result.q, rel=1e-10)
    hksj = frame.loc["random effect wls"]
    assert fit["pooled_delta"] == pytest.approx(hksj["eff"], rel=1e-10)
    assert fit["se"] == pytest.approx(hksj["sd_eff"], rel=1e-10)
    assert (fit["ci_low"], fit["ci_high"]) == pytest.approx((hksj["ci_low"], hksj["ci_upp"]), rel=1e-10)
    assert fit["fixed_delta"] == pytest.approx(frame.loc["fixed effect", "eff"], rel=1e-10)
    assert fit["fixed_se"] == pytest.approx(frame.loc["fixed effect", "sd_eff"], rel=1e-10)


def test_prediction_interval_and_test_worked_by_hand():
    """Higgins et al. (2009): μ ± t_{k−2} √(τ² + SE_RE²), SE_RE² = 1/Σ 1/(v + τ²); p from t_{k−1} with the HKSJ SE."""
    result, frame = statsmodels_fit(DELTA, VARIANCE)
    fit = pooling.random_effects(DELTA, VARIANCE)
    se_re = frame.loc["random effect", "sd_eff"]
    half = scipy_stats.t.ppf(0.975, len(DELTA) - 2) * np.sqrt(result.tau2 + se_re ** 2)
    assert (fit["pi_low"], fit["pi_high"]) == pytest.approx((fit["pooled_delta"] - half, fit["pooled_delta"] + half))
    t = fit["pooled_delta"] / frame.loc["random effect wls", "sd_eff"]
    assert fit["p_value"] == pytest.approx(2 * scipy_stats.t.sf(abs(t), len(DELTA) - 1))


def test_a_negative_moment_estimate_of_tau2_is_truncated_to_the_fixed_effect_fit():
    """Δ closer together than their SEs imply: Q < k − 1, statsmodels' "chi2" τ² is negative (it does not
    truncate); truncated at 0, the pooled Δ and its HKSJ interval are statsmodels' fixed-effect (wls) ones."""
    delta = np.array([20.0, 20, 10, 20, 10, 20, 20, 10, -10])  # the 20-pair test run's intimate Emp.-Agg.
    variance = np.array([177.78, 177.78, 100, 177.78, 100, 177.78, 177.78, 100, 100])
    result, frame = statsmodels_fit(delta, variance)
    assert result.tau2 < 0
    fit = pooling.random_effects(delta, variance)
    fixed = frame.loc["fixed effect wls"]
    assert (fit["tau2"], fit["i2"]) == (0.0, 0.0)
    assert (fit["pooled_delta"], fit["ci_low"], fit["ci_high"]) == pytest.approx((fixed["eff"], fixed["ci_low"],
                                                                                  fixed["ci_upp"]))


def test_homogeneous_estimates_give_no_between_model_variance():
    """Equal Δ: Q = 0, so τ² = 0 and I² = 0, and the pooled Δ is that value; the HKSJ SE is 0 too."""
    fit = pooling.random_effects(np.array([2.0, 2.0, 2.0]), np.array([0.1, 0.2, 0.3]))
    assert (fit["tau2"], fit["i2"], fit["pooled_delta"], fit["se"]) == (0.0, 0.0, 2.0, 0.0)


def gaps_frame(track: str = "intimate") -> pd.DataFrame:
    """Five models' Δ and variances as gaps rows: v = sd_diff²/n_pairs with n_pairs = 100, so sd_diff = 10√v."""
    return pd.DataFrame({"model": [f"m{i}" for i in range(len(DELTA))], "track": track, "metric": "puni",
                         "comparison": "female-male", "delta": DELTA, "n_pairs": 100,
                         "sd_diff": 10 * np.sqrt(VARIANCE), "simulated": False})


def test_pooled_gaps_pools_each_track_and_counts_models_sharing_the_sign():
    rows = pd.concat([gaps_frame("intimate"), gaps_frame("public").assign(delta=-DELTA)], ignore_index=True)
    rows.loc[rows.index[-1], "delta"] = -5.0  # public: four positive Δ and one negative
    # a model whose pairs all agree (sd_diff 0) has no sampling variance and is left out
    rows = pd.concat([rows, gaps_frame().iloc[:1].assign(model="m_flat", sd_diff=0.0, delta=0.0)], ignore_index=True)
    pooled = pooling.pooled_gaps(rows).set_index("track")
    _, frame = statsmodels_fit(DELTA, VARIANCE)
    intimate = pooled.loc["intimate"]
    assert intimate["pooled_delta"] == pytest.approx(frame.loc["random effect wls", "eff"])
    assert (intimate["n_models"], intimate["n_left_out"], intimate["n_same_sign"]) == (5, 1, 5)
    assert intimate["mean_delta"] == pytest.approx(DELTA.mean())
    public = pooled.loc["public"]
    assert public["pooled_delta"] > 0 and public["n_same_sign"] == 4
    assert list(pooled["p_holm"]) == pytest.approx(list(stats.holm(pooled["p_value"].to_numpy())))


def test_pooled_summary_names_the_metrics_that_hold_and_those_that_do_not():
    rows = gaps_frame()
    pooled = pooling.pooled_gaps(rows)
    sentence = pooling.pooled_summary(pooled)["intimate"]
    fit = pooled.iloc[0]
    assert sentence.startswith("Intimate track, random effects over 5 models")
    assert f"Puni. {fit['pooled_delta']:+.2f} (95% CI {fit['ci_low']:+.2f} to {fit['ci_high']:+.2f}; 5/5" in sentence
    assert fit["pi_high"] > 0 and "no prediction interval for a new model excludes 0" in sentence
    tight = pooling.pooled_summary(pooled.assign(pi_high=-0.1))["intimate"]
    assert tight.endswith("the prediction interval for a new model excludes 0 for Puni.")
    nothing = pooling.pooled_summary(pooled.assign(p_holm=0.5))["intimate"]
    assert "no metric's pooled Δ" in nothing


def test_stratified_gaps_are_refused():
    with pytest.raises(ValueError, match="stratified by dimension"):
        pooling.pooled_gaps(gaps_frame().assign(dimension="financial_control"))
