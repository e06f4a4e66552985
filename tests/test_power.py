"""Power and planning (gama_utils.analysis.power, issue 16.4) against scipy's noncentral t, by hand and simulated."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from gama_utils.analysis import power


def t_test_power(delta: float, sd: float, n: int, alpha: float) -> float:
    """Two-sided paired t-test power from scipy's noncentral t (independent of statsmodels)."""
    df, noncentrality = n - 1, delta / sd * math.sqrt(n)
    critical = scipy_stats.t.ppf(1 - alpha / 2, df)
    return float(scipy_stats.nct.sf(critical, df, noncentrality) + scipy_stats.nct.cdf(-critical, df, noncentrality))


def test_minimum_detectable_delta_has_the_target_power():
    for sd, n, alpha in ((3.09, 305, 0.05), (59.4, 993, 0.05), (2.0, 40, 0.05 / 120)):
        mdd = power.minimum_detectable_delta(sd, n, alpha)
        assert t_test_power(mdd, sd, n, alpha) == pytest.approx(0.8, abs=1e-4)


def test_minimum_detectable_delta_is_the_normal_formula_for_large_n():
    # (z_.975 + z_.80)·sd/√n = (1.95996 + 0.84162)·3.09/√305 = 0.4957; the t version is a hair larger.
    normal = (scipy_stats.norm.ppf(0.975) + scipy_stats.norm.ppf(0.8)) * 3.09 / math.sqrt(305)
    assert normal == pytest.approx(0.4957, abs=1e-4)
    assert power.minimum_detectable_delta(3.09, 305) == pytest.approx(normal, rel=5e-3)
    assert math.isnan(power.minimum_detectable_delta(0.0, 305)) and math.isnan(power.minimum_detectable_delta(1, 1))


def test_pairs_needed_is_the_smallest_n_with_the_target_power():
    for delta, sd, alpha in ((-3.31, 4.15, 0.05), (8.99, 45.5, 0.05), (0.5, 3.0, 0.05 / 120)):
        n = power.pairs_needed(delta, sd, alpha)
        assert t_test_power(abs(delta), sd, n, alpha) >= 0.8 > t_test_power(abs(delta), sd, n - 1, alpha)
    with pytest.raises(ValueError, match="nonzero target"):
        power.pairs_needed(0.0, 1.0)


def test_wilcoxon_reaches_about_the_planned_power_on_normal_differences():
    # 2,000 simulated runs of 60 pairs with d ~ N(mdd, 1): the signed-rank test's power is the t-test's
    # times its efficiency (3/π ≈ 0.955 for normal data), so about 0.78.
    rng = np.random.default_rng(0)
    mdd = power.minimum_detectable_delta(1.0, 60)
    d = rng.normal(mdd, 1.0, size=(2000, 60))
    rejected = scipy_stats.wilcoxon(d, axis=1, method="asymptotic").pvalue < 0.05
    assert 0.74 <= rejected.mean() <= 0.84


def test_wilcoxon_reaches_about_the_planned_power_on_a_rate():
    # A 0/1 metric: 30% of pairs differ; d = +1 with probability a, −1 with b (a + b = 0.3), mean a − b.
    # Choose a − b = mdd for the SD sqrt(0.3 − (a − b)²) of such d (fixed point), then simulate 305 pairs:
    # zeros dropped, the signed-rank test is a sign test, whose power should be close to 0.8.
    n, share = 305, 0.3
    delta = 0.05
    for _ in range(20):
        delta = power.minimum_detectable_delta(math.sqrt(share - delta ** 2), n)
    a, b = (share + delta) / 2, (share - delta) / 2
    rng = np.random.default_rng(1)
    d = rng.choice([1.0, -1.0, 0.0], p=[a, b, 1 - share], size=(2000, n))
    d[d == 0] = np.nan  # zero_method "wilcox": the agreeing pairs leave the test
    rejected = scipy_stats.wilcoxon(d, axis=1, nan_policy="omit", method="asymptotic").pvalue < 0.05
    assert 0.75 <= rejected.mean() <= 0.85


def gaps_rows(cells: list[tuple[str, str, str, float, int, float]], m: int = 120) -> pd.DataFrame:
    return pd.DataFrame([{"model": model, "track": track, "metric": key, "comparison": "female-male",
                          "delta": delta, "n_pairs": n, "sd_diff": sd, "holm_family_size": m, "simulated": True}
                         for model, track, key, delta, n, sd in cells])


def test_power_table_per_track_and_metric():
    # Puni. on the intimate track: models with SD 2, 3, 4 on 305 pairs → median SD 3; mdd from it.
    # Holm step: α/m = .05/120. Model C's Δ = −0.3 is below the α = .05 threshold of its track.
    frame = gaps_rows([("A", "intimate", "puni", -1.2, 305, 2.0), ("B", "intimate", "puni", -3.4, 305, 3.0),
                       ("C", "intimate", "puni", -0.3, 305, 4.0)])
    reference = pd.DataFrame({"model": ["P", "Q"], "track": "intimate", "metric": "puni", "delta": [-0.2, -2.0]})
    table = power.power_table(frame, reference=reference).iloc[0]
    assert (table["n_pairs"], table["sd_diff"], table["holm_family_size"]) == (305, 3.0, 120)
    assert table["mdd"] == pytest.approx(power.minimum_detectable_delta(3.0, 305))
    assert t_test_power(table["mdd_holm"], 3.0, 305, 0.05 / 120) == pytest.approx(0.8, abs=1e-4)
    assert table["mdd_min"] == pytest.approx(power.minimum_detectable_delta(2.0, 305))
    assert table["mdd_max"] == pytest.approx(power.minimum_detectable_delta(4.0, 305))
    assert (table["run_below_mdd"], table["reference_below_mdd"], table["reference_cells"]) == (1, 1, 2)


def test_plan_from_a_pilot():
    # Pilot SDs 40 and 60 pp on Instr.; target −14 pp: the median SD (50) and the largest (60) set the pairs.
    pilot = gaps_rows([("A", "intimate", "instr", -10.0, 50, 40.0), ("B", "intimate", "instr", -5.0, 50, 60.0)], m=24)
    target = pd.DataFrame({"track": ["intimate"], "metric": ["instr"], "delta": [-14.0]})
    row = power.plan(pilot, target).iloc[0]
    assert row["pairs_needed"] == power.pairs_needed(-14.0, 50.0)
    assert row["pairs_needed_max"] == power.pairs_needed(-14.0, 60.0)
    assert row["pairs_needed_holm"] == power.pairs_needed(-14.0, 50.0, 0.05 / 24)
    assert power.plan(pilot, {"instr": 10.0}).iloc[0]["pairs_needed"] == power.pairs_needed(10.0, 50.0)
    assert power.plan(pilot, 10.0, family_size=1).iloc[0]["pairs_needed_holm"] == power.pairs_needed(10.0, 50.0)
    with pytest.raises(ValueError, match="metrics the pilot does not have"):
        power.plan(pilot, {"sev": 0.1})


def test_plan_leaves_undefined_cells_empty():
    # A pilot cell whose differences never vary (SD 0) cannot be planned from; a target of 0 neither.
    pilot = gaps_rows([("A", "intimate", "sev", 0.0, 10, 0.0), ("A", "intimate", "puni", -1.0, 10, 2.0)])
    planned = power.plan(pilot, {"sev": 0.2, "puni": 0.0}).set_index("metric")
    assert planned["pairs_needed"].isna().all() and planned["pairs_needed_max_holm"].isna().all()


def test_a_run_too_small_to_test_any_cell_gets_tables_not_a_division_by_zero():
    """One pair per cell (the real-LLM plumbing run): no cell is tested, so the Holm family is 0 and the Holm
    step is α itself; with one pair there is no spread, so every detectable gap is missing (NaN)."""
    frame = gaps_rows([("A", "intimate", "puni", -1.0, 1, float("nan")), ("A", "public", "puni", 2.0, 1, float("nan"))],
                      m=0)
    table = power.power_table(frame)
    assert list(table.holm_family_size) == [0, 0] and table[["mdd", "mdd_holm"]].isna().all().all()
    plan = power.plan(frame, frame.assign(delta=3.0))
    assert plan[["pairs_needed", "pairs_needed_holm"]].isna().all().all()


COUNT_D = np.array([0.0] * 40 + [1.0] * 25 + [-1.0] * 15 + [2.0] * 8 + [-2.0] * 6 + [3.0] * 4 + [-4.0] * 2)


def test_wilcoxon_power_is_scipys_test_on_the_same_sign_flipped_draws():
    """The same draws rebuilt here (|d| drawn, + with probability q = (1 + δ/mean|d|)/2) and tested one by one."""
    delta, n, n_sim = 0.3, 50, 200
    simulated = power.wilcoxon_power(COUNT_D, delta, n, n_sim=n_sim, seed=7)
    rng = np.random.default_rng(7)
    size = np.abs(COUNT_D)
    draws = rng.choice(size, size=(n_sim, n))
    q = (1 + delta / size.mean()) / 2
    draws = np.where(rng.random((n_sim, n)) < q, draws, -draws)
    assert draws.mean() == pytest.approx(delta, abs=0.05)
    p = [scipy_stats.wilcoxon(row[row != 0], method="approx").pvalue for row in draws]
    assert simulated == pytest.approx(np.mean(np.array(p) < 0.05))


def test_wilcoxon_power_at_no_gap_is_the_tests_size():
    """q = 1/2 is the signed-rank test's own null: about 5% rejections (4,000 runs: SE 0.34 points)."""
    assert power.wilcoxon_power(COUNT_D, 0.0, 120, n_sim=4000, seed=1) == pytest.approx(0.05, abs=0.012)


def test_t_threshold_has_the_target_t_power_under_the_same_model():
    """At mean δ the model's SD is √(mean(d²) − δ²), mean(d²) = (25 + 15 + 4·14 + 9·4 + 16·2)/100 = 1.64 here;
    the noncentral t gives 80% at the threshold with that SD."""
    assert power.sign_flip_sd(COUNT_D, 0.4) == pytest.approx(math.sqrt(1.64 - 0.16))
    for n, alpha in ((120, 0.05), (305, 0.05 / 120)):
        delta = power.t_threshold(COUNT_D, n, alpha)
        assert t_test_power(delta, power.sign_flip_sd(COUNT_D, delta), n, alpha) == pytest.approx(0.8, abs=1e-4)


def test_the_wilcoxon_threshold_on_normal_magnitudes_is_its_pitman_efficiency_below_the_t_threshold():
    """|d| folded normal, signs + with probability q: the signed-rank z grows as (2q − 1)·√(3n)/2, the t's as
    (2q − 1)·√n·E|X|/√E[X²] = (2q − 1)·√n·√(2/π), so the Wilcoxon needs √(2/π)/(√3/2) = 0.921 of the t's gap;
    and the simulated power at the found threshold is the target (both within Monte Carlo noise)."""
    d = np.random.default_rng(3).normal(0, 5, 4000)
    t_delta = power.t_threshold(d, 200)
    w_delta = power.wilcoxon_threshold(d, 200, n_sim=3000, seed=5)
    assert w_delta / t_delta == pytest.approx(math.sqrt(2 / math.pi) / (math.sqrt(3) / 2), abs=0.03)
    assert power.wilcoxon_power(d, w_delta, 200, n_sim=3000, seed=5) == pytest.approx(0.8, abs=0.01)


def test_power_table_simulates_count_metrics_and_fills_thresholds_only_where_the_t_test_is_off():
    """Two models' count differences; the table's Wilcoxon columns are those of count_thresholds' model, and a
    simulated threshold appears exactly where the simulated power is more than 2 points from 80%."""
    pairs = [f"p{i}" for i in range(len(COUNT_D))]
    rows = []
    for model, d in (("A", COUNT_D), ("B", COUNT_D * 2)):
        rows.append(pd.DataFrame({"model": model, "track": "intimate", "metric": "puni", "pair_id": pairs,
                                  "male": 5.0, "female": 5.0 + d}))
    differences = pd.concat(rows, ignore_index=True)
    frame = gaps_rows([("A", "intimate", "puni", COUNT_D.mean(), len(COUNT_D), COUNT_D.std(ddof=1)),
                       ("B", "intimate", "puni", 2 * COUNT_D.mean(), len(COUNT_D), 2 * COUNT_D.std(ddof=1))], m=12)
    row = power.power_table(frame, differences=differences, n_sim=500).iloc[0]
    expected = power.wilcoxon_power(COUNT_D, power.t_threshold(COUNT_D, len(COUNT_D)), len(COUNT_D), n_sim=500)
    assert row["wilcoxon_power"] == pytest.approx(expected)  # A's sd is nearest the median (a tie: the first)
    for suffix in ("", "_holm"):
        off = abs(row[f"wilcoxon_power{suffix}"] - 0.8) > power.SIMULATION_TOLERANCE
        assert np.isfinite(row[f"mdd{suffix}_wilcoxon"]) == off
        if off:
            assert (row[f"mdd{suffix}_wilcoxon"] > row[f"mdd{suffix}"]) == (row[f"wilcoxon_power{suffix}"] < 0.8)


def test_a_threshold_beyond_every_sign_pattern_has_no_simulated_power():
    """Ten pairs, seven of them agreeing, at α/120: the t threshold (1.5) is beyond mean |d| = 0.9, so no sign
    pattern has that mean and the Wilcoxon columns stay empty instead of failing (at α = .05 too: 1.15 > 0.9)."""
    d = np.array([0.0] * 7 + [3.0, -3.0, 3.0])
    assert power.t_threshold(d, d.size, 0.05 / 120) >= np.abs(d).mean()
    rows = gaps_rows([("A", "intimate", "puni", d.mean(), d.size, d.std(ddof=1))])
    differences = pd.DataFrame({"model": "A", "track": "intimate", "metric": "puni", "pair_id": range(d.size),
                                "male": 1.0, "female": 1.0 + d})
    row = power.power_table(rows, differences=differences, n_sim=200).iloc[0]
    assert np.isnan(row["wilcoxon_power_holm"]) and np.isnan(row["mdd_holm_wilcoxon"])
    assert np.isnan(row["wilcoxon_power"]) and np.isfinite(row["mdd"])
