"""Power of the paired design: the smallest gap a run can detect, and the pairs a target gap needs (DESIGN §7).

Both come from the paired t-test's exact power (noncentral t, statsmodels' TTestPower) on the SD of
the per-pair differences (`sd_diff` in the gaps). Why the t-test, when the tables test with Wilcoxon:
the signed-rank test has no closed-form power; its efficiency relative to the t-test is 3/π ≈ 0.955
for normal differences and higher for heavy tails, and on a 0/1 metric (zeros dropped, a sign test
on the pairs that differ) its power at these n is that of the t-test on the same differences. The
tests simulate both cases and find the Wilcoxon test's power within a few points of the target.

Thresholds are given at two-sided α (.05) and at the strictest Holm step, α/m for the run's family
of m tests (a gap must clear that bar to be significant after Holm whatever the other cells do).
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
    """Per gaps row: minimum detectable Δ at `alpha` (mdd) and at the strictest Holm step α/m (mdd_holm).

    m is `family_size`, else the row's holm_family_size. Adds columns mdd, mdd_holm, holm_alpha and
    detectable (|Δ| ≥ mdd_holm: a gap of this size has `power` to survive Holm).
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
                power: float = POWER, family_size: int | None = None) -> pd.DataFrame:
    """Per track × metric: the run's n and spread and the minimum detectable Δ at α and at the Holm step.

    n_pairs and sd_diff are the medians over the models; mdd and mdd_holm are computed from them,
    mdd_min/mdd_max give the range over the models' own cells. run_below_mdd counts the run's cells
    whose |Δ| is below mdd. With `reference` (a gaps frame such as the paper's Tables 2-3,
    `tables.paper_gaps`), reference_below_mdd counts its cells below the run's mdd: gaps this design
    could not be expected to find.
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
    return table[columns]


def plan(pilot: pd.DataFrame, target: float | Mapping[str, float] | pd.DataFrame, alpha: float = ALPHA,
         power: float = POWER, family_size: int | None = None) -> pd.DataFrame:
    """Pairs per model a full run needs to detect `target` Δ, from a pilot run's gaps (its sd_diff).

    `target`: one Δ for every metric, a mapping metric → Δ, or a frame with track, metric, delta (e.g.
    the paper's across-model averages). Per track × metric: the pilot's median and largest SD over
    models, and the pairs needed at α and at the Holm step α/m (m = `family_size`, default the pilot's
    family) for the median model (pairs_needed) and for the noisiest one (pairs_needed_max); missing
    where the target is 0 or the pilot's differences have no spread.
    A pilot's SD is itself uncertain: with k pilot pairs its relative error is about 1/√(2k).
    """
    rows = _paper_rows(pilot)
    require(rows, ("sd_diff",), "pilot gaps")
    spread = rows.groupby(TRACK_KEYS, sort=False)["sd_diff"].agg(sd_diff="median", sd_diff_max="max").reset_index()
    spread = spread.merge(_targets(target, spread), on=TRACK_KEYS)
    m = family_size or _family(rows)
    holm_alpha = alpha / max(m, 1)  # a family of 0 tests nothing: the Holm step is α itself
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
