"""Known answers for the paired statistics (gama_utils.analysis.stats), worked out by hand in the comments."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from gama_utils.analysis import stats

# Seven pairs, no ties, no zeros.
#   d         : 1.5  -0.5  2.0  3.5  2.5  4.0  -1.0
#   |d| rank  : 3     1    4    6    5    7     2
#   T− = 1 + 2 = 3, T+ = 28 − 3 = 25 (1 + … + 7 = 28)
#   Under H0 each of the 2^7 = 128 sign patterns is equally likely. Subsets of {1..7} with
#   rank sum ≤ 3: {}, {1}, {2}, {3}, {1,2} → 5, so P(T− ≤ 3) = 5/128 and the two-sided exact
#   p = 2 · 5/128 = 10/128 = 0.078125.   r = (25 − 3) / 28 = 22/28.
SEVEN = np.array([1.5, -0.5, 2.0, 3.5, 2.5, 4.0, -1.0])

# Eight pairs, only the smallest |d| negative: T− = 1, T+ = 36 − 1 = 35.
#   Subsets of {1..8} with sum ≤ 1: {}, {1} → 2 of 256; p = 2 · 2/256 = 0.015625; r = 34/36.
EIGHT = np.array([-0.2, 0.5, 0.9, 1.3, 1.7, 2.1, 2.6, 3.0])


def test_signed_rank_sums_by_hand():
    ranks = stats.signed_ranks(SEVEN)
    assert (ranks.t_plus, ranks.t_minus, ranks.n_nonzero) == (25.0, 3.0, 7)


def test_wilcoxon_exact_p_seven_pairs():
    assert stats.wilcoxon(SEVEN) == pytest.approx(10 / 128, abs=1e-12)


def test_wilcoxon_exact_p_eight_pairs():
    assert stats.wilcoxon(EIGHT) == pytest.approx(4 / 256, abs=1e-12)


def test_wilcoxon_drops_zero_differences_and_nans():
    # Zeros carry no sign and NaN marks an excluded pair: both leave the seven-pair answer unchanged.
    assert stats.wilcoxon(np.r_[SEVEN, 0.0, 0.0, np.nan]) == pytest.approx(10 / 128, abs=1e-12)


def test_wilcoxon_all_zero_is_no_evidence():
    assert stats.wilcoxon(np.zeros(12)) == 1.0


def test_wilcoxon_with_ties_exact_by_hand():
    # d = 1, 1, −1, 2 → mid-ranks 2, 2, 2, 4; T+ = 2 + 2 + 4 = 8.
    # Null T+ over the 16 sign patterns: 0:1, 2:3, 4:4, 6:4, 8:3, 10:1 → P(T+ ≥ 8) = 4/16; p = 2·4/16 = 0.5.
    assert stats.wilcoxon(np.array([1.0, 1.0, -1.0, 2.0])) == pytest.approx(0.5)


def test_wilcoxon_thirteen_tied_pairs_fast_and_exact():
    # Twelve +1 and one −1: all |d| tied (mid-rank 7), so T+ = 7 · (number of + signs) ~ 7 · Binomial(13, ½).
    # P(≥ 12 plus signs) = (1 + 13)/8192 → p = 28/8192. scipy's own permutation path takes seconds here.
    assert stats.wilcoxon(np.r_[np.ones(12), -1.0]) == pytest.approx(28 / 8192, abs=1e-15)


def test_exact_tied_path_agrees_with_scipy():
    rng = np.random.default_rng(4)
    for n in (3, 6, 9):
        d = rng.integers(-2, 3, n).astype(float)
        d[d == 0] = 1.0
        assert stats.exact_signed_rank_p(d) == pytest.approx(scipy_stats.wilcoxon(d).pvalue, abs=1e-12)


def test_wilcoxon_normal_approximation_large_sample():
    # d = 1..60 with 1..10 negative: T− = 55, T+ = 1830 − 55 = 1775 (no ties, so no tie correction).
    # E[T] = n(n+1)/4 = 915; Var[T] = n(n+1)(2n+1)/24 = 60·61·121/24 = 18452.5.
    # z = (55 − 915)/sqrt(18452.5) = −6.3310; two-sided p = erfc(|z|/√2) ≈ 2.44e-10.
    d = np.arange(1, 61, dtype=float)
    d[:10] *= -1
    z = (55 - 915) / math.sqrt(18452.5)
    assert stats.wilcoxon(d) == pytest.approx(math.erfc(abs(z) / math.sqrt(2)), rel=1e-9)


def test_rank_biserial_by_hand():
    assert stats.rank_biserial(SEVEN) == pytest.approx(22 / 28)
    assert stats.rank_biserial(EIGHT) == pytest.approx(34 / 36)


def test_rank_biserial_with_ties_and_zero():
    # d = 1, 1, −1, 2, 0: the zero is dropped; |d| = 1, 1, 1, 2 → mid-ranks 2, 2, 2, 4.
    # T+ = 2 + 2 + 4 = 8, T− = 2 → r = 6/10.
    assert stats.rank_biserial(np.array([1, 1, -1, 2, 0.0])) == pytest.approx(0.6)


def test_rank_biserial_extremes():
    assert stats.rank_biserial(np.array([-1.0, -2.0, -3.0])) == -1.0
    assert stats.rank_biserial(np.array([1.0, -1.0])) == 0.0
    assert stats.rank_biserial(np.zeros(5)) == 0.0


def test_bootstrap_all_differences_equal():
    # Every resample of a constant sample has the same mean, so the CI collapses onto it.
    low, high = stats.bootstrap_ci(np.full(9, 2.5), n_boot=500, seed=3)
    assert low[0] == pytest.approx(2.5) and high[0] == pytest.approx(2.5)


def test_bootstrap_binomial_quantiles():
    # Five 0s and five 1s: a resample's mean is X/10 with X ~ Binomial(10, 1/2).
    # P(X ≤ 1) = 11/1024 = 0.011 < 0.025 < P(X ≤ 2) = 56/1024 = 0.055, so the 2.5% quantile is 0.2;
    # by symmetry the 97.5% quantile is 0.8. 20,000 resamples pin both far from the boundaries.
    low, high = stats.bootstrap_ci(np.array([0, 1] * 5, dtype=float), n_boot=20_000, seed=1)
    assert (low[0], high[0]) == (pytest.approx(0.2), pytest.approx(0.8))


def test_bootstrap_is_the_percentile_formula_over_resampled_pairs():
    # Same generator, same draws: resample n pairs B times, mean each, take the 2.5/97.5 percentiles.
    d = np.array([0.3, -1.2, 2.2, 0.0, 1.1, 0.7, -0.4, 1.9, 0.2, 0.8])
    expected_rng = np.random.default_rng(11)
    draws = expected_rng.integers(0, d.size, size=(1000, d.size))
    expected = np.percentile(d[draws].mean(axis=1), [2.5, 97.5])
    low, high = stats.bootstrap_ci(d, n_boot=1000, seed=np.random.default_rng(11))
    assert [low[0], high[0]] == pytest.approx(list(expected))


def test_bootstrap_columns_share_pairs_and_skip_excluded():
    # Column 2 repeats column 1 where present; its NaN pairs are left out of each resample's mean,
    # so a constant column stays constant even with exclusions, and the shape follows the columns.
    d = np.column_stack([np.full(20, 4.0), np.r_[np.full(15, -1.0), np.full(5, np.nan)], np.full(20, np.nan)])
    low, high = stats.bootstrap_ci(d, n_boot=300, seed=0)
    assert low[:2] == pytest.approx([4.0, -1.0]) and high[:2] == pytest.approx([4.0, -1.0])
    assert np.isnan(low[2]) and np.isnan(high[2])


def test_cell_seed_depends_only_on_seed_and_key():
    a = stats.cell_seed(0, ("GPT-5.4", "intimate")).integers(0, 10**9, 3)
    b = stats.cell_seed(0, ("GPT-5.4", "intimate")).integers(0, 10**9, 3)
    c = stats.cell_seed(0, ("GPT-5.4", "public")).integers(0, 10**9, 3)
    assert list(a) == list(b) and list(a) != list(c)


def test_holm_by_hand():
    # Sorted: .005·4 = .02, .01·3 = .03, .03·2 = .06, .04·1 = .04 → running max .02, .03, .06, .06.
    adjusted = stats.holm(np.array([0.01, 0.04, 0.03, 0.005]))
    assert adjusted == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_holm_keeps_nan_out_of_the_family():
    adjusted = stats.holm(np.array([0.01, np.nan, 0.02]))
    # Family of two: .01·2 = .02, .02·1 = .02.
    assert adjusted[0] == pytest.approx(0.02) and np.isnan(adjusted[1]) and adjusted[2] == pytest.approx(0.02)


@pytest.mark.parametrize("seed", range(5))
def test_holm_equals_statsmodels_with_ties_ones_and_nan(seed):
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(seed)
    p = np.round(rng.uniform(0, 0.6, 40), 2)  # rounding makes ties; large families push products past 1
    p[rng.choice(40, 5, replace=False)] = np.nan
    tested = ~np.isnan(p)
    adjusted = stats.holm(p)
    assert np.array_equal(adjusted[tested], multipletests(p[tested], method="holm")[1])
    assert np.isnan(adjusted[~tested]).all() and adjusted[tested].max() == 1.0


def _paired_long(male: list[float], female: list[float], model: str | None = None) -> pd.DataFrame:
    n = len(male)
    frame = pd.DataFrame({"value": male + female, "female": [0] * n + [1] * n, "pair_id": list(range(n)) * 2})
    return frame.assign(model=model) if model else frame


def test_mixed_effects_balanced_pairs_match_paired_t():
    # male 2,4,6,8,10; female 3,4,8,9,13 → d = 1,0,2,1,3, mean 1.4.
    # Deviations −.4, −1.4, .6, −.4, 1.6; squares sum 5.2; var = 5.2/4 = 1.3; SE = sqrt(1.3/5) = 0.50990.
    # With two observations per scenario and a positive scenario variance, REML gives the arm effect
    # the paired-t estimate and standard error.
    fit = stats.mixed_effects(_paired_long([2, 4, 6, 8, 10], [3, 4, 8, 9, 13]))
    assert fit.loc[0, "estimate"] == pytest.approx(1.4, abs=1e-6)
    assert fit.loc[0, "se"] == pytest.approx(math.sqrt(1.3 / 5), rel=1e-3)
    assert fit.loc[0, "n_obs"] == 10


def test_mixed_effects_one_fit_per_group_level():
    # Two models on the same five scenarios; each model's arm effect is its own mean difference:
    # model a: d = 1,0,2,1,3 → 1.4; model b: d = −2,−1,−3,−2,−2 → −2.0.
    long = pd.concat([_paired_long([2, 4, 6, 8, 10], [3, 4, 8, 9, 13], "a"),
                      _paired_long([5, 7, 9, 11, 13], [3, 6, 6, 9, 11], "b")])
    fit = stats.mixed_effects(long, by="model").set_index("model")
    assert fit.loc["a", "estimate"] == pytest.approx(1.4, abs=1e-5)
    assert fit.loc["b", "estimate"] == pytest.approx(-2.0, abs=1e-5)


def test_mixed_effects_with_too_little_data_says_so_instead_of_failing():
    # Model a: one pair (2 observations, as a run of one pair per track has); model b: one arm only (a run whose
    # other answers were not validly scored); model c: five pairs, fitted as usual (d = 1,0,2,1,3 → 1.4).
    long = pd.concat([_paired_long([2], [3], "a"), _paired_long([2, 4], [3, 5], "b").query("female == 0"),
                      _paired_long([2, 4, 6, 8, 10], [3, 4, 8, 9, 13], "c")])
    fit = stats.mixed_effects(long, by="model").set_index("model")
    assert fit.loc[["a", "b"], ["estimate", "se", "p_value"]].isna().all().all()
    assert fit.loc["a", "note"] == ("not fitted: 2 observation(s) in 2 arm(s); the model needs both arms and more "
                                    "than 2 observations")
    assert fit.loc["b", "note"].startswith("not fitted: 2 observation(s) in 1 arm(s)")
    assert fit.loc["c", "estimate"] == pytest.approx(1.4, abs=1e-5) and fit.loc["c", "note"] == ""


# ---------------------------------------------------------------- zero handling and effect sizes (issue 16.3)

def test_zsplit_agrees_with_scipy_called_directly():
    # Small samples with zeros and ties go through the exact enumeration, larger ones through scipy's
    # normal approximation; both must equal scipy.stats.wilcoxon(zero_method="zsplit") itself.
    rng = np.random.default_rng(7)
    for n in (5, 9, 13, 40, 305):
        d = rng.integers(-2, 3, n).astype(float)
        expected = scipy_stats.wilcoxon(d, zero_method="zsplit").pvalue
        assert stats.wilcoxon(d, zero_method="zsplit") == pytest.approx(expected, rel=1e-12), n


def test_wilcox_zero_method_is_scipy_on_the_nonzero_differences():
    # zero_method "wilcox" drops zeros before ranking, so 40 untied nonzero differences get scipy's exact
    # null distribution even beside 25 zeros (scipy's "auto" on all 65 would switch to the normal approximation).
    rng = np.random.default_rng(3)
    d = np.r_[rng.normal(0.4, 1, 40), np.zeros(25)]
    assert stats.wilcoxon(d) == pytest.approx(scipy_stats.wilcoxon(d[d != 0], method="exact").pvalue, rel=1e-12)
    assert stats.wilcoxon(d) != pytest.approx(scipy_stats.wilcoxon(d, method="auto").pvalue, rel=1e-6)


def test_zsplit_pulls_a_sign_test_toward_the_null():
    # A 0/1 metric on 305 pairs: 20 pairs favour the female arm, 6 the male arm, 279 agree.
    # Normal approximation with tie correction, Var = (N(N+1)(2N+1) − Σ(t³ − t)/2)/24 over the N ranked values.
    # "wilcox" is the sign test on the N = 26 discordant pairs (one tie group of 26):
    #   T+ = 20·13.5 = 270, E = 26·27/4 = 175.5, Var = (37206 − 17550/2)/24 = 1184.625,
    #   z = 94.5/34.418 = 2.7456 → p = 0.00604.
    # "zsplit" ranks all N = 305 (tie groups of 279 zeros and 26 ones): zeros mid-rank 140, ones 292.5;
    #   R+ = 20·292.5 + 279·140/2 = 25380, E = 305·306/4 = 23332.5,
    #   Var = (57024630 − (21717360 + 17550)/2)/24 = 1923215.625, z = 2047.5/1386.80 = 1.4764 → p = 0.1398.
    d = np.r_[np.ones(20), -np.ones(6), np.zeros(279)]
    z_wilcox = (270 - 175.5) / math.sqrt(1184.625)
    z_zsplit = (25380 - 23332.5) / math.sqrt(1923215.625)
    assert stats.wilcoxon(d) == pytest.approx(math.erfc(z_wilcox / math.sqrt(2)), rel=1e-9)
    assert stats.wilcoxon(d, zero_method="zsplit") == pytest.approx(math.erfc(z_zsplit / math.sqrt(2)), rel=1e-9)
    with pytest.raises(ValueError, match="zero_method"):
        stats.wilcoxon(d, zero_method="pratt")


def test_rank_biserial_with_ties_by_hand():
    # d = 1, 1, −1, 2, 0 (n = 5): |d| ranked together: 0 → 1; the three 1s → ranks 2, 3, 4 → mid-rank 3; 2 → 5.
    # R+ = 3 + 3 + 5 = 11, R− = 3; denominator 5·6/2 = 15 → r = 8/15. Without the zero (Kerby): 6/10.
    d = np.array([1, 1, -1, 2, 0.0])
    assert stats.rank_biserial_with_ties(d) == pytest.approx(8 / 15)
    assert stats.rank_biserial(d) == pytest.approx(0.6)


def test_rank_biserial_with_ties_on_a_mostly_agreeing_rate():
    # The 305-pair 0/1 example: untied r = (20 − 6)/26 = 0.538 although only 26 pairs differ. With ties:
    # the 279 zeros take ranks 1..279, the 26 ones mid-rank 279 + 13.5 = 292.5;
    # (R+ − R−) = 14·292.5 = 4095 over 305·306/2 = 46665 → 0.0878.
    d = np.r_[np.ones(20), -np.ones(6), np.zeros(279)]
    assert stats.rank_biserial(d) == pytest.approx(14 / 26)
    assert stats.rank_biserial_with_ties(d) == pytest.approx(4095 / 46665)
    # It is the zsplit signed-rank statistic rescaled: scipy reports min(R+, R−) with the zero ranks split.
    low = scipy_stats.wilcoxon(d, zero_method="zsplit").statistic
    assert stats.rank_biserial_with_ties(d) == pytest.approx((46665 - 2 * low) / 46665)
    assert stats.rank_biserial_with_ties(np.zeros(4)) == 0.0
    assert stats.rank_biserial_with_ties(np.array([0.5, 1.5, 2.5])) == stats.rank_biserial(np.array([0.5, 1.5, 2.5]))


# ---------------------------------------------------------------- mixed model per model (issue 16.2)

def _model_long(rng: np.random.Generator, model: str, n: int, noise: float, shift: float) -> pd.DataFrame:
    scenario = rng.normal(0, 2, n)
    male = 5 + scenario + rng.normal(0, noise, n)
    female = 5 + shift + scenario + rng.normal(0, noise, n)
    return _paired_long(list(male), list(female), model)


def test_each_model_gets_its_own_standard_error_equal_to_the_paired_one():
    # Two models on complete pairs with different answer noise: each model's REML SE is its paired
    # SE sd(d)/√n computed here with numpy; a shared residual variance would give both the same SE.
    rng = np.random.default_rng(12)
    long = pd.concat([_model_long(rng, "calm", 80, 0.5, -1.0), _model_long(rng, "noisy", 80, 2.0, -1.0)])
    fit = stats.mixed_effects(long, by="model").set_index("model")
    for model in ("calm", "noisy"):
        rows = long[long["model"] == model].sort_values(["pair_id", "female"])
        d = rows["value"].to_numpy()[1::2] - rows["value"].to_numpy()[0::2]
        assert fit.loc[model, "estimate"] == pytest.approx(d.mean(), abs=1e-8)
        assert fit.loc[model, "se"] == pytest.approx(d.std(ddof=1) / math.sqrt(d.size), rel=1e-6)
        assert fit.loc[model, "paired_se"] == pytest.approx(d.std(ddof=1) / math.sqrt(d.size), rel=1e-12)
        assert fit.loc[model, "note"] == ""
    assert fit.loc["noisy", "se"] > 2 * fit.loc["calm", "se"]


def test_mixed_fit_matches_statsmodels_mixedlm_with_incomplete_pairs():
    # Scenarios seen in one arm only: REML estimates equal statsmodels' MixedLM fitted on the same
    # model; SEs agree to 0.5% (statsmodels takes them from the observed information, this fit from
    # σ²(X'V⁻¹X)⁻¹ as lme4 does; the two are equal for complete pairs).
    import statsmodels.api as sm

    rng = np.random.default_rng(5)
    long = _model_long(rng, "m", 70, 1.0, 0.6).reset_index(drop=True)
    long = long.drop(rng.choice(len(long), 25, replace=False))
    fit = stats.mixed_effects(long).iloc[0]
    reference = sm.MixedLM(long["value"].to_numpy(), np.column_stack([np.ones(len(long)), long["female"]]),
                           groups=long["pair_id"].to_numpy()).fit(reml=True)
    assert fit["estimate"] == pytest.approx(reference.fe_params[1], abs=1e-5)
    assert fit["se"] == pytest.approx(reference.bse_fe[1], rel=5e-3)
    assert fit["p_value"] == pytest.approx(reference.pvalues[1], rel=2e-2)
    assert fit["n_obs"] == len(long)


def test_mixed_fit_on_the_boundary_says_so_and_uses_the_unpaired_error():
    # Female answers vary against the male ones (negative within-pair correlation): the scenario
    # variance is estimated at 0, the model is ordinary least squares (statsmodels OLS gives the SE),
    # and the note tells the reader.
    import statsmodels.api as sm

    rng = np.random.default_rng(2)
    u = rng.normal(0, 1, 60)
    long = _paired_long(list(5 + u + rng.normal(0, 0.3, 60)), list(6 - u + rng.normal(0, 0.3, 60)))
    fit = stats.mixed_effects(long).iloc[0]
    ols = sm.OLS(long["value"].to_numpy(), sm.add_constant(long["female"].to_numpy(float))).fit()
    assert fit["se"] == pytest.approx(ols.bse[1], rel=1e-4)
    assert "boundary" in fit["note"]
    assert fit["se"] < fit["paired_se"]
