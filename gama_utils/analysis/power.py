"""Power of the paired design: the smallest gap a run can detect, and the pairs a target gap needs (DESIGN §7).

Both come from the paired t-test's exact power (noncentral t, statsmodels' TTestPower) on the SD of
the per-pair differences (`sd_diff` in the gaps). Why the t-test, when the tables test with Wilcoxon:
the signed-rank test has no closed-form power; its efficiency relative to the t-test is 3/π ≈ 0.955
for normal differences and higher for heavy tails, and on a 0/1 metric (zeros dropped, a sign test
on the pairs that differ) its power at these n is that of the t-test on the same differences. The
tests simulate both cases and find the Wilcoxon test's power within a few points of the target.
Count metrics are the exception: their per-pair differences are small integers with many zeros and
ties, and there the Wilcoxon test's power can run several points below the t-test's. So for the count
metrics `power_table` also simulates the Wilcoxon test itself (`wilcoxon_power`: the observed |d|
with signs biased toward the target gap, so that the values stay integer counts with their zeros and
ties) and, where its power at the t-test's threshold is off by more than `SIMULATION_TOLERANCE`
(2 points), gives the threshold found by simulation (mdd_wilcoxon, mdd_holm_wilcoxon). With the default
1,000 simulated runs a simulated power of 80% has a Monte Carlo SE of 1.3 points.

Thresholds are given at two-sided α (.05) and at α/m for the run's family of m tests, the Bonferroni
bound on Holm: Holm's first step tests at α/m, so a gap of mdd_holm has the stated power to survive
Holm whatever the other cells do; in a family where other cells have real gaps Holm's later, laxer
steps need less. mdd_holm is therefore an upper bound on the gap Holm needs, not a requirement.
Δ and SD are in the paper's units (rates in percentage points).

Sampling variance (`sampling_variance`, below): repeated samples (samples_per_prompt > 1): how much of the
spread is sampling noise within a prompt.
With temperature > 0 a prompt answered k times gives k different framings. The gaps average them
within pair × arm first (`gama_utils.analysis.gaps`), so Δ and its test are over pairs, never over samples.
This module splits each model × track × metric's variance into the part within a prompt (the same
pair and arm answered again) and the part between scenarios, by the one-way random-effects ANOVA
(method of moments, unbalanced form) with the prompt as the group and the arm as a fixed effect,
and says what share of the variance of the per-pair gap is sampling noise: the part more samples
per prompt would remove, where the rest only more pairs can.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import lru_cache

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats
from statsmodels.stats.power import TTestPower

from gama_utils.analysis import gaps as gap_stats
from gama_utils.core.metrics import metric, metric_keys, scale
from gama_utils.core.schema import Absent, require

# --- power ------------------------------------------------------------------------------------------

POWER = 0.8

ALPHA = 0.05

TRACK_KEYS = ["track", "metric"]


def minimum_detectable_delta(sd: float, n: int, alpha: float = ALPHA, power: float = POWER) -> float:
    """Smallest |Δ| a two-sided paired test of `n` pairs detects with `power` at `alpha`, given the SD of d."""
    if not (n >= 2 and sd > 0 and np.isfinite(sd)):
        return float("nan")
    return detectable_effect(int(n), float(alpha), float(power)) * float(sd)


@lru_cache(maxsize=4096)
def detectable_effect(n: int, alpha: float = ALPHA, power: float = POWER) -> float:
    """Smallest standardised effect |Δ|/SD detectable with `n` pairs (it does not depend on the SD itself)."""
    effect = TTestPower().solve_power(effect_size=None, nobs=n, alpha=alpha, power=power, alternative="two-sided")
    return float(np.atleast_1d(effect)[0])


def pairs_needed(delta: float, sd: float, alpha: float = ALPHA, power: float = POWER) -> int:
    """Pairs a two-sided paired test needs to detect |Δ| = `delta` with `power` at `alpha`, given the SD of d."""
    if not (delta != 0 and sd > 0 and np.isfinite(sd) and np.isfinite(delta)):
        raise ValueError(f"pairs_needed needs a nonzero target Δ and a positive SD; got Δ={delta}, sd={sd}")
    n = TTestPower().solve_power(effect_size=abs(delta) / sd, nobs=None, alpha=alpha, power=power,
                                 alternative="two-sided")
    return int(math.ceil(float(np.atleast_1d(n)[0])))


def detectable_gaps(gaps: pd.DataFrame, alpha: float = ALPHA, power: float = POWER,
                    family_size: int | None = None) -> pd.DataFrame:
    """Per gaps row: minimum detectable Δ at `alpha` (mdd) and at the Bonferroni bound α/m on Holm (mdd_holm).

    m is `family_size`, else the row's holm_family_size. Adds columns mdd, mdd_holm, holm_alpha and
    detectable (|Δ| ≥ mdd_holm: a gap of this size has at least `power` to survive Holm).
    """
    require(gaps, ("track", "metric", "delta", "n_pairs", "sd_diff"), "gaps")
    if family_size is None:
        require(gaps, ("holm_family_size",), "gaps (or pass family_size)")
    rows = gaps.copy()
    m = rows["holm_family_size"] if family_size is None else pd.Series(family_size, index=rows.index)
    rows["holm_alpha"] = alpha / m.clip(lower=1)
    rows["mdd"] = [minimum_detectable_delta(sd, n, alpha, power) for sd, n in zip(rows["sd_diff"], rows["n_pairs"])]
    rows["mdd_holm"] = [minimum_detectable_delta(sd, n, a, power)
                        for sd, n, a in zip(rows["sd_diff"], rows["n_pairs"], rows["holm_alpha"])]
    rows["detectable"] = rows["delta"].abs() >= rows["mdd_holm"]
    return rows


def _family(rows: pd.DataFrame) -> int:
    """The largest Holm family among the rows; 0 when no cell could be tested (a run of one pair per cell)."""
    largest = rows["holm_family_size"].max()
    return int(largest) if pd.notna(largest) else 0


def power_table(gaps: pd.DataFrame, reference: pd.DataFrame | None = None, alpha: float = ALPHA,
                power: float = POWER, family_size: int | None = None, differences: pd.DataFrame | None = None,
                n_sim: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Per track × metric: the run's n and spread and the minimum detectable Δ at α and at the Holm bound α/m.

    n_pairs and sd_diff are the medians over the models; mdd and mdd_holm are computed from them,
    mdd_min/mdd_max give the range over the models' own cells. run_below_mdd counts the run's cells
    whose |Δ| is below mdd. With `reference` (a gaps frame such as the paper's Tables 2-3,
    `tables.paper_gaps`), reference_below_mdd counts its cells below the run's mdd: gaps this design
    could not be expected to find. With `differences` (`gaps.per_pair` rows), the count metrics get
    the Wilcoxon test's simulated power at mdd and mdd_holm (wilcoxon_power, wilcoxon_power_holm, from
    the model whose sd_diff is nearest the median) and, where it is off the target by more than
    SIMULATION_TOLERANCE, the thresholds found by simulation (`count_thresholds`).
    """
    rows = _paper_rows(gaps)
    m = family_size or _family(rows)
    rows = detectable_gaps(rows, alpha, power, m)
    rows["below"] = rows["delta"].abs() < rows["mdd"]
    table = rows.groupby(TRACK_KEYS, sort=False).agg(
        n_models=("model", "nunique"), n_pairs=("n_pairs", "median"), sd_diff=("sd_diff", "median"),
        mdd_min=("mdd", "min"), mdd_max=("mdd", "max"), run_below_mdd=("below", "sum")).reset_index()
    table["holm_family_size"] = m
    table["mdd"] = [minimum_detectable_delta(sd, int(n), alpha, power) for sd, n in zip(table.sd_diff, table.n_pairs)]
    table["mdd_holm"] = [minimum_detectable_delta(sd, int(n), alpha / max(m, 1), power)
                         for sd, n in zip(table.sd_diff, table.n_pairs)]
    if reference is not None:
        ref = _paper_rows(reference).merge(table[TRACK_KEYS + ["mdd"]], on=TRACK_KEYS)
        below = ref.assign(below=ref["delta"].abs() < ref["mdd"]).groupby(TRACK_KEYS)["below"]
        table = table.merge(below.agg(reference_below_mdd="sum", reference_cells="size").reset_index(),
                            on=TRACK_KEYS, how="left")
    table.attrs["simulated"] = bool(gaps["simulated"].any()) if "simulated" in gaps.columns else False
    columns = ["track", "metric", "n_models", "n_pairs", "sd_diff", "mdd", "mdd_min", "mdd_max", "holm_family_size",
               "mdd_holm", "run_below_mdd"]
    columns += ["reference_below_mdd", "reference_cells"] if reference is not None else []
    if differences is not None:
        table = table.merge(count_thresholds(rows, differences, alpha, power, m, n_sim, seed), on=TRACK_KEYS,
                            how="left")
        table["mdd_wilcoxon"] = table["mdd"] * table["ratio"]
        table["mdd_holm_wilcoxon"] = table["mdd_holm"] * table["ratio_holm"]
        columns += list(COUNT_COLUMNS)
    return table[columns]


SIMULATION_TOLERANCE = 0.02
COUNT_COLUMNS = ("wilcoxon_power", "wilcoxon_power_holm", "mdd_wilcoxon", "mdd_holm_wilcoxon")


def sign_flip_sd(d: np.ndarray, delta: float) -> float:
    """SD of the per-pair difference under `wilcoxon_power`'s model at mean `delta`: √(mean(d²) − delta²)."""
    return float(np.sqrt(np.mean(np.asarray(d, dtype=float) ** 2) - delta ** 2))


def wilcoxon_power(d: np.ndarray, delta: float, n: int, alpha: float = ALPHA, n_sim: int = 1000,
                   seed: int | np.random.Generator = 0) -> float:
    """Simulated power of the two-sided Wilcoxon test (zeros dropped, normal approximation) at mean `delta`.

    Each of `n_sim` samples draws `n` of the observed |d| and gives each a + sign with probability
    q = (1 + delta / mean|d|) / 2, so the mean is `delta`: q = 1/2 is the test's own null (the arms
    exchangeable), and the values stay the counts' own (integers, zeros and ties as observed), which a
    shift by a fraction of a term would not. One vectorised test call.
    """
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    size = np.abs(np.asarray(d, dtype=float))
    q = (1 + delta / size.mean()) / 2
    if not 0 <= q <= 1:
        raise ValueError(f"a mean of {delta} is beyond the mean |d| of {size.mean()}: no sign pattern reaches it")
    draws = rng.choice(size, size=(n_sim, int(n)))
    draws = np.where(rng.random((n_sim, int(n))) < q, draws, -draws)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = scipy_stats.wilcoxon(draws, axis=1, zero_method="wilcox", method="approx").pvalue
    return float(np.mean(np.nan_to_num(p, nan=1.0) < alpha))


def t_threshold(d: np.ndarray, n: int, alpha: float = ALPHA, power: float = POWER) -> float:
    """The mean at which the paired t-test has `power` under `wilcoxon_power`'s model: δ / √(mean(d²) − δ²) = e."""
    e = detectable_effect(int(n), float(alpha), float(power))
    return float(e * np.sqrt(np.mean(np.asarray(d, dtype=float) ** 2) / (1 + e ** 2)))


def wilcoxon_threshold(d: np.ndarray, n: int, alpha: float = ALPHA, power: float = POWER, n_sim: int = 1000,
                       seed: int = 0, tolerance: float = 0.005) -> float:
    """The shift at which `wilcoxon_power` reaches `power` (within `tolerance`), bracketed from the t-test's threshold
    and then found by regula falsi (Illinois).

    Every evaluation uses the same seed (common random numbers), so the simulated curve is smooth in Δ.
    """
    limit = float(np.abs(d).mean())

    def gap(x: float) -> float:
        return wilcoxon_power(d, min(x, limit), n, alpha, n_sim, seed) - power

    low = high = t_threshold(d, n, alpha, power)
    f_low = f_high = gap(low)
    if abs(f_low) <= tolerance:
        return float(low)
    step = 1.1 if f_low < 0 else 1 / 1.1
    for _ in range(30):
        low, f_low = high, f_high
        high = min(high * step, limit)
        f_high = gap(high)
        if (f_low < 0) != (f_high < 0) or high == limit:
            break
    if (f_low < 0) == (f_high < 0):
        return float("nan")  # the power never reaches the target below mean |d|
    side = 0
    x = high
    for _ in range(12):
        x = high - f_high * (high - low) / (f_high - f_low)
        f = gap(x)
        if abs(f) <= tolerance:
            break
        if (f < 0) == (f_high < 0):
            high, f_high = x, f
            f_low = f_low / 2 if side == -1 else f_low
            side = -1
        else:
            low, f_low = x, f
            f_high = f_high / 2 if side == 1 else f_high
            side = 1
    return float(x)


def count_thresholds(rows: pd.DataFrame, differences: pd.DataFrame, alpha: float = ALPHA, power: float = POWER,
                     family_size: int = 1, n_sim: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Per track × count metric: the Wilcoxon test's simulated power where the t-test has `power` (at α and at
    α/m), and where it is more than SIMULATION_TOLERANCE off, the thresholds by simulation (else missing: the
    t-test's stand).

    `rows` are the gaps rows of `power_table` (mdd and mdd_holm per model), `differences` `gaps.per_pair`
    rows; the model used per track × metric is the one whose sd_diff is nearest the median over models,
    at its own n. Both tests are compared under `wilcoxon_power`'s model; mdd_wilcoxon is that model's
    ratio (ratio, ratio_holm) of the Wilcoxon to the t threshold, which `power_table` applies to its mdd.
    """
    require(differences, ("model", "track", "metric", "male", "female"), "per-pair differences")
    holm_alpha = alpha / max(family_size, 1)
    out = []
    for (track, key), cells in rows.groupby(TRACK_KEYS, sort=False):
        cells = cells.dropna(subset=["sd_diff", "mdd"])
        if metric(key).kind != "count" or cells.empty:
            continue
        chosen = cells.iloc[int(np.argmin(np.abs(cells["sd_diff"] - cells["sd_diff"].median())))]
        mine = differences[(differences["model"] == chosen["model"]) & (differences["track"] == track)
                           & (differences["metric"] == key)]
        d = (mine["female"] - mine["male"]).dropna().to_numpy(float)
        row: dict[str, object] = {"track": track, "metric": key}
        for suffix, a in (("", alpha), ("_holm", holm_alpha)):
            at_t = t_threshold(d, d.size, a, power) if d.size >= 2 and bool(np.any(d != 0)) else np.nan
            # beyond mean |d| no sign pattern has that mean (a tiny run at a strict α): no simulated power
            usable = bool(np.isfinite(at_t) and at_t < np.abs(d).mean())
            simulated = wilcoxon_power(d, at_t, d.size, a, n_sim, seed) if usable else np.nan
            row[f"wilcoxon_power{suffix}"] = simulated
            off = bool(np.isfinite(simulated) and abs(simulated - power) > SIMULATION_TOLERANCE)
            row[f"ratio{suffix}"] = wilcoxon_threshold(d, d.size, a, power, n_sim, seed) / at_t if off else np.nan
        out.append(row)
    return pd.DataFrame(out, columns=[*TRACK_KEYS, "wilcoxon_power", "wilcoxon_power_holm", "ratio", "ratio_holm"])


def plan(pilot: pd.DataFrame, target: float | Mapping[str, float] | pd.DataFrame, alpha: float = ALPHA,
         power: float = POWER, family_size: int | None = None) -> pd.DataFrame:
    """Pairs per model a full run needs to detect `target` Δ, from a pilot run's gaps (its sd_diff).

    `target`: one Δ for every metric, a mapping metric → Δ, or a frame with track, metric, delta (e.g.
    the paper's across-model averages). Per track × metric: the pilot's median and largest SD over
    models, and the pairs needed at α and at the Bonferroni bound α/m on Holm (enough whatever the other cells do;
    fewer may do; m = `family_size`, default the pilot's
    family) for the median model (pairs_needed) and for the noisiest one (pairs_needed_max); missing
    where the target is 0 or the pilot's differences have no spread.
    A pilot's SD is itself uncertain: with k pilot pairs its relative error is about 1/√(2k).
    """
    rows = _paper_rows(pilot)
    require(rows, ("sd_diff",), "pilot gaps")
    spread = rows.groupby(TRACK_KEYS, sort=False)["sd_diff"].agg(sd_diff="median", sd_diff_max="max").reset_index()
    spread = spread.merge(_targets(target, spread), on=TRACK_KEYS)
    m = family_size or _family(rows)
    holm_alpha = alpha / max(m, 1)  # a family of 0 tests nothing: the Holm bound is α itself
    for suffix, a in (("", alpha), ("_holm", holm_alpha)):
        columns = ((f"pairs_needed{suffix}", spread.sd_diff), (f"pairs_needed_max{suffix}", spread.sd_diff_max))
        for column, sds in columns:
            needed = [pairs_needed(t, sd, a, power) if t != 0 and sd > 0 else None
                      for t, sd in zip(spread.target_delta, sds)]
            spread[column] = pd.array(needed, dtype="Int64")
    spread["holm_family_size"] = m
    spread.attrs["simulated"] = bool(pilot["simulated"].any()) if "simulated" in pilot.columns else False
    return spread


def _targets(target: float | Mapping[str, float] | pd.DataFrame, cells: pd.DataFrame) -> pd.DataFrame:
    if isinstance(target, pd.DataFrame):
        require(target, ("track", "metric", "delta"), "target")
        return target[TRACK_KEYS + ["delta"]].rename(columns={"delta": "target_delta"})
    if isinstance(target, Mapping):
        unknown = set(target) - set(cells["metric"])
        if unknown:
            raise ValueError(f"target names metrics the pilot does not have: {', '.join(sorted(unknown))}")
        frame = cells[TRACK_KEYS].copy()
        frame["target_delta"] = frame["metric"].map(target)
        return frame.dropna()
    return cells[TRACK_KEYS].assign(target_delta=float(target))


def _paper_rows(gaps: pd.DataFrame) -> pd.DataFrame:
    """The paper's female-male rows without strata (the cells of Tables 2-3 and 6)."""
    strata = gap_stats.stratum_columns(gaps)
    if strata:
        raise ValueError(f"gaps are stratified by {', '.join(strata)}; power is computed on the unstratified cells")
    return gaps[gaps["comparison"] == gap_stats.PAPER_COMPARISON] if "comparison" in gaps.columns else gaps


# --- variance ------------------------------------------------------------------------------------------

COLUMNS = ("model", "track", "metric", "n_prompts", "n_samples", "mean_samples", "var_within", "var_between",
           "share_within", "gap_variance", "gap_sampling_share")


def one_way(values: np.ndarray, groups: np.ndarray, strata: np.ndarray | None = None) -> tuple[float, float, float]:
    """(σ²_within, σ²_between, n0) of a one-way random-effects ANOVA; `strata` are fixed effects (e.g. the arm).

    σ²_within = MSW; σ²_between = max(0, (MSB − MSW) / n0) with n0 = (N − Σ_s Σ_g n_g² / N_s) / (G − S),
    the unbalanced-design group size (Searle, Casella & McCulloch 1992, §3.6). NaN when no prompt has
    two samples.
    """
    frame = pd.DataFrame({"y": np.asarray(values, dtype=float), "g": np.asarray(groups),
                          "s": np.zeros(len(values)) if strata is None else np.asarray(strata)}).dropna()
    prompts = frame.groupby(["s", "g"], sort=False)["y"]
    sizes = prompts.size()
    n_total, n_groups, n_strata = len(frame), len(sizes), frame["s"].nunique()
    if n_total - n_groups < 1 or n_groups - n_strata < 1:
        return float("nan"), float("nan"), float("nan")
    prompt_mean, stratum_mean = prompts.transform("mean"), frame.groupby("s")["y"].transform("mean")
    msw = float(((frame["y"] - prompt_mean) ** 2).sum()) / (n_total - n_groups)
    msb = float(((prompt_mean - stratum_mean) ** 2).sum()) / (n_groups - n_strata)
    squares = (sizes ** 2).groupby(level="s").sum() / frame.groupby("s").size()
    n0 = float((n_total - squares.sum()) / (n_groups - n_strata))
    return msw, max(0.0, (msb - msw) / n0), n0


def sampling_variance(evaluations: pd.DataFrame, metrics: Sequence[str] | None = None,
                      arms: Sequence[str] = ("male", "female")) -> pd.DataFrame | Absent:
    """Per model × track × metric: within-prompt vs between-scenario variance and the gap's sampling share.

    Valid evaluations only, in the paper's units (variances of rates in pp²). Columns (COLUMNS):
    n_prompts (pair × arm), n_samples, mean_samples; var_within, var_between and share_within =
    var_within / (var_within + var_between); gap_variance = variance of the per-pair Δ of sample
    means, and gap_sampling_share = var_within · mean(1/k_female + 1/k_male) / gap_variance, the part
    of it that is sampling noise (capped at 1). Absent with one sample per prompt (nothing to separate).
    """
    if "sample" in evaluations.columns and evaluations["sample"].nunique() <= 1:
        return Absent("one sample per prompt: there is no sampling variance to separate from the scenarios")
    metrics = tuple(metrics or metric_keys())
    require(evaluations, ("model", "track", "pair_id", "arm", "valid", *(metric(m).column for m in metrics)),
            "evaluations")
    valid = evaluations[evaluations["valid"].isin([True, 1]) & evaluations["arm"].isin(arms)]
    rows = []
    for (model, track), cell in valid.groupby(["model", "track"], sort=True):
        for key in metrics:
            y = pd.to_numeric(cell[metric(key).column], errors="coerce").to_numpy(float) * scale(key)
            within, between, _ = one_way(y, cell["pair_id"].to_numpy(), cell["arm"].to_numpy())
            counts = cell.assign(y=y).dropna(subset=["y"]).groupby(["pair_id", "arm"])["y"].agg(["size", "mean"])
            wide = counts.unstack("arm").dropna()
            gap_variance, inverse_k = float("nan"), float("nan")
            if {"male", "female"} <= set(wide["mean"].columns) and len(wide) > 1:
                gap_variance = float((wide[("mean", "female")] - wide[("mean", "male")]).var(ddof=1))
                inverse_k = float((1 / wide[("size", "female")] + 1 / wide[("size", "male")]).mean())
            total = within + between
            rows.append({"model": model, "track": track, "metric": key, "n_prompts": len(counts),
                         "n_samples": int(counts["size"].sum()), "mean_samples": float(counts["size"].mean()),
                         "var_within": within, "var_between": between,
                         "share_within": within / total if total > 0 else float("nan"),
                         "gap_variance": gap_variance,
                         "gap_sampling_share": min(1.0, within * inverse_k / gap_variance) if gap_variance > 0
                         else float("nan")})
    result = pd.DataFrame(rows, columns=list(COLUMNS))
    result.attrs["simulated"] = bool(evaluations["simulated"].any()) if "simulated" in evaluations.columns else False
    return result
