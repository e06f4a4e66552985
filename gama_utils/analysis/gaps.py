"""Paired gender gaps Δ = female − male per model × track × metric (paper §4.2, Tables 2-3, 6, App. B).

Input: evaluations (`gama_utils.core.schema.evaluations_columns`) of one evaluator (or pass "evaluator" in
`by`). Output: gaps (`gama_utils.core.schema.GAPS`) plus

- `comparison`: which arms the row compares, "<arm>-<reference>", Δ = arm − reference.
  "female-male" is the paper's gap and is always present. When a neutral arm was run the
  default also gives "neutral-male" and "neutral-female" (the neutral baseline against each
  gender); with reference_arm="neutral" it gives "female-neutral" and "male-neutral" instead.
  `male`, `female` and `neutral` hold each compared arm's mean over the row's pairs (NaN for
  the arm the row does not compare; `neutral` only when that arm exists).
- one column per stratum in `by` (e.g. dimension, severity).

Pairing and exclusion. Samples (samples_per_prompt > 1) are averaged within pair × arm over
the valid evaluations first. A pair enters a metric's row only when both compared arms have a
valid value for that metric; `n_pairs` counts those pairs and `n_excluded` the other pairs of the
cell (an invalid or missing evaluation on either side). Means, Δ, test, effect size and CI use
exactly the `n_pairs` pairs, so delta == female − male.

Units: counts and the severity rating as is, rates in % and their Δ in percentage points
(`gama_utils.core.metrics.scale`).

Statistics per row: two-sided paired Wilcoxon signed-rank p-value (zeros dropped), matched-pairs
rank-biserial effect size (positive when the first arm is higher), percentile bootstrap CI of Δ
resampling pairs (one seed per model × track × stratum cell, see `stats.cell_seed`). The Holm
family is every model × track × metric × stratum row of one call with the same comparison, so
the paper's female-male p_holm does not change when a neutral arm is added. Beside them
(TEST_COLUMNS): n_nonzero (the pairs the test ranks), sd_diff (SD of the per-pair differences,
for `gama_utils.analysis.power`), the zsplit sensitivity test and its Holm p, the rank-biserial with ties,
holm_family_size and `method`, which states all of this in every row of the saved gaps.jsonl.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from gama_utils.analysis import stats, strata
from gama_utils.core.metrics import continuous_keys, metric, metric_keys, scale
from gama_utils.core.schema import ARMS, GAPS, Absent, evaluations_columns, passes_absent, require

PAPER_COMPARISON = "female-male"
TEST_COLUMNS = ("n_nonzero", "sd_diff", "p_zsplit", "p_holm_zsplit", "effect_size_ties", "holm_family_size",
                "method")
METHOD = ("p_value: two-sided paired Wilcoxon signed-rank test on the n_pairs per-pair differences with zero "
          "differences dropped (zero_method 'wilcox'; for a 0/1 metric this is a sign test on the pairs that "
          "differ); p_zsplit: the same test with the zeros ranked and their ranks split evenly between both signs "
          "(zero_method 'zsplit'), a sensitivity check; p_holm, p_holm_zsplit: Holm step-down over the "
          "holm_family_size p-values of {family}; effect_size: matched-pairs rank-biserial (T+ - T-)/(T+ + T-) "
          "over the n_nonzero pairs that differ (Kerby 2014); effect_size_ties: (R+ - R-)/(n(n+1)/2) with all "
          "n_pairs ranked, zeros included; ci_low, ci_high: percentile bootstrap of the mean difference "
          "resampling pairs; sd_diff: SD of the per-pair differences.")
PAIR_ATTRIBUTES = strata.evaluation_keys()  # carried per pair: dimension, severity, style


def comparisons(arms: Sequence[str], reference_arm: str = "male") -> list[tuple[str, str]]:
    """The (arm, reference) pairs compared for the arms present; see the module docstring."""
    if reference_arm not in ("male", "neutral"):
        raise ValueError("reference_arm must be 'male' (the paper's Δ = female − male) or 'neutral'; "
                         f"got {reference_arm!r}")
    pairs = [("female", "male")]
    if "neutral" in arms:
        pairs += [("female", "neutral"), ("male", "neutral")] if reference_arm == "neutral" else \
                 [("neutral", "male"), ("neutral", "female")]
    return pairs


def per_pair(evaluations: pd.DataFrame, by: Sequence[str] = (), metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per model × track × pair × metric with each arm's value (samples averaged, paper units).

    `metrics`: metric keys (default: every registered metric).
    Columns: model, track, *by, pair_id, dimension, severity, style, metric, male, female
    [, neutral], simulated. An arm's value is NaN when it has no valid evaluation for the metric.
    """
    wide, attributes = _pair_means(evaluations, tuple(by), tuple(metrics or metric_keys()))
    long = wide.stack(level="metric").reset_index()
    long = long.merge(attributes.reset_index(), on=list(wide.index.names))
    arms = [a for a in ARMS if a in long.columns]
    keys = list(wide.index.names)
    front = keys + [c for c in PAIR_ATTRIBUTES if c in long.columns and c not in keys]
    return long[front + ["metric", *arms, "simulated"]]


@passes_absent
def paired_gaps(evaluations: pd.DataFrame, by: Sequence[str] = (), n_boot: int = 2000, seed: int = 0,
                reference_arm: str = "male", metrics: Sequence[str] | None = None,
                level: float = 0.95) -> pd.DataFrame:
    """Gaps per model × track × metric (× `by` strata × comparison) with CI, Wilcoxon p, Holm p, effect size.

    `metrics`: metric keys (default: every registered metric). Columns, pairing, units and the Holm
    family: see the module docstring.
    """
    by, metrics = tuple(by), tuple(metrics or metric_keys())
    wide, attributes = _pair_means(evaluations, by, metrics)
    arms = [a for a in ARMS if a in wide.columns.get_level_values("arm")]
    compared = comparisons(arms, reference_arm)
    cell_keys = ["model", "track", *by]
    present = _arms_present(evaluations, cell_keys)
    rows = []
    for key, frame in wide.groupby(level=cell_keys, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        cell = dict(zip(cell_keys, key))
        here = [(a, b) for a, b in compared if present.get((*key, a)) and present.get((*key, b))]
        columns = [(m, a, b) for m in metrics for a, b in here]
        if not columns:
            warnings.warn(f"{cell} lacks the male or the female arm; left out of the gaps", stacklevel=2)
            continue
        values = frame.to_numpy(dtype=float)
        position = {column: j for j, column in enumerate(frame.columns)}
        differences = np.column_stack([values[:, position[(m, a)]] - values[:, position[(m, b)]]
                                       for m, a, b in columns])
        low, high = stats.bootstrap_ci(differences, n_boot, stats.cell_seed(seed, key), level)
        simulated = bool(attributes.loc[frame.index, "simulated"].any())
        for j, (m, a, b) in enumerate(columns):
            d = differences[:, j]
            included = ~np.isnan(d)
            means = {arm: (values[included, position[(m, arm)]].mean() if arm in (a, b) and included.any() else np.nan)
                     for arm in arms}
            rows.append({
                **cell, "metric": m, "comparison": f"{a}-{b}", **means,
                "delta": d[included].mean() if included.any() else np.nan,
                "n_pairs": int(included.sum()), "n_excluded": int((~included).sum()),
                "ci_low": low[j], "ci_high": high[j], **_tests(d[included]),
                "simulated": simulated,
            })
    gaps = pd.DataFrame(rows)
    if gaps.empty:
        raise ValueError("evaluations gave no model × track cell with both compared arms")
    gaps = with_groups(with_holm(gaps, by), evaluations)
    return gaps[["model", *(["group"] if "group" in gaps.columns else []), "track", *by, "metric", "comparison",
                 "male", "female", *(["neutral"] if "neutral" in arms else []), "delta", "n_pairs", "n_excluded",
                 "ci_low", "ci_high", "p_value", "p_holm", "effect_size", *TEST_COLUMNS, "simulated"]]


def _tests(d: np.ndarray) -> dict[str, float]:
    """Test, sensitivity test and effect sizes of one cell's per-pair differences (excluded pairs removed)."""
    if d.size == 0:
        return {"p_value": np.nan, "effect_size": np.nan, "n_nonzero": 0, "sd_diff": np.nan,
                "p_zsplit": np.nan, "effect_size_ties": np.nan}
    return {"p_value": stats.wilcoxon(d), "effect_size": stats.rank_biserial(d),
            "n_nonzero": int((d != 0).sum()), "sd_diff": float(d.std(ddof=1)) if d.size > 1 else np.nan,
            "p_zsplit": stats.wilcoxon(d, zero_method="zsplit"), "effect_size_ties": stats.rank_biserial_with_ties(d)}


def with_holm(gaps: pd.DataFrame, by: Sequence[str] = ()) -> pd.DataFrame:
    """`gaps` with p_holm and p_holm_zsplit over each comparison's rows, the family size and the method text."""
    gaps = gaps.copy()
    cells = " × ".join(["model", "track", "metric", *by])
    for comparison, index in gaps.groupby("comparison").groups.items():
        gaps.loc[index, "p_holm"] = stats.holm(gaps.loc[index, "p_value"])
        gaps.loc[index, "p_holm_zsplit"] = stats.holm(gaps.loc[index, "p_zsplit"])
        gaps.loc[index, "holm_family_size"] = int(gaps.loc[index, "p_value"].notna().sum())
        gaps.loc[index, "method"] = METHOD.format(family=f"the {comparison} rows of every {cells} of the run")
    gaps["holm_family_size"] = gaps["holm_family_size"].astype(int)
    return gaps


def method_notes(cells: pd.DataFrame, alpha: float = 0.05) -> list[str]:
    """What a p-value table must state: the test and its zero handling, the Holm family, the effect sizes.

    `cells` are gaps rows of one comparison; the Holm family and the zsplit flips are counted over all
    of them (every metric, not only the ones a table shows).
    """
    rates = ", ".join(metric(k).label for k in metric_keys() if metric(k).is_rate)
    notes = ["Two-sided paired Wilcoxon signed-rank tests on the per-pair differences (female − male). Zero "
             "differences are dropped before ranking (zero_method 'wilcox'), so for the 0/1 metrics "
             f"({rates}) the test is a sign test on the pairs whose two answers differ."]
    if "p_holm" in cells.columns and cells["p_holm"].notna().any():
        m = (int(cells["holm_family_size"].max()) if "holm_family_size" in cells.columns
             else int(cells["p_value"].notna().sum()))
        notes.append(f"Holm-adjusted p-values (gaps.jsonl, p_holm) adjust over all {m} model × track × metric cells "
                     f"of the {cells['comparison'].iloc[0] if 'comparison' in cells.columns else PAPER_COMPARISON} "
                     "comparison, every metric included, also those a table does not show.")
    if {"p_holm", "p_holm_zsplit"} <= set(cells.columns):
        flips = int(((cells["p_holm"] < alpha) != (cells["p_holm_zsplit"] < alpha)).sum())
        notes.append(f"Sensitivity: keeping the zero differences in the ranks with their ranks split evenly "
                     f"(zero_method 'zsplit', p_zsplit) changes {flips} of {len(cells)} Holm decisions at "
                     f"{alpha:g}.")
    notes.append("Effect size (effect_size): matched-pairs rank-biserial r = (T+ − T−)/(T+ + T−) over the pairs "
                 "that differ (Kerby 2014); effect_size_ties keeps the zero differences in the ranks and the "
                 "denominator, r = (R+ − R−)/(n(n + 1)/2) over all n pairs, so agreeing pairs pull it toward 0.")
    return notes


def with_groups(frame: pd.DataFrame, evaluations: pd.DataFrame) -> pd.DataFrame:
    """`frame` with each model's row group from the evaluations' optional `group` column (unchanged without it)."""
    if "group" not in evaluations.columns or evaluations["group"].isna().all():
        return frame
    groups = evaluations.dropna(subset=["group"]).groupby("model")["group"].first()
    return frame.assign(group=frame["model"].map(groups))


@passes_absent
def stratified_gaps(evaluations: pd.DataFrame, stratum: str, track: str | None = None,
                    **kwargs) -> pd.DataFrame | Absent:
    """`paired_gaps` within each level of a declared pair attribute (`gama_utils.analysis.strata`).

    Dimension (App. B.1), severity (B.2) and style ride on every evaluation; the scenario metadata
    (setting region and language, partner occupation and its stereotype, affected third party) is
    merged from the benchmark first (`selections.with_pair_metadata`). Pairs without a value form
    the stratum's `missing` level. `track` keeps that track's pairs. Absent when no pair (of the track)
    records the stratum.
    """
    rows = evaluations if track is None else evaluations[evaluations["track"] == track]
    declared = strata.stratum(stratum)
    source = declared.derived_from or stratum
    if declared.source == "benchmark" and source in rows.columns and not rows[source].notna().any():
        where = f" {track}-track" if track else ""
        return Absent(f"no{where} pair of this benchmark records its {declared.label.lower()}")
    return paired_gaps(strata.with_levels(rows, stratum), by=(stratum,), **kwargs)


def stratum_columns(gaps: pd.DataFrame) -> list[str]:
    """The columns of a gaps frame that split cells beyond model × track × metric: declared strata
    (`gama_utils.analysis.strata`) and evaluation columns used in `by` (evaluator, ...); other columns are ignored."""
    columns = set(evaluations_columns()) | set(strata.STRATA)
    return [c for c in gaps.columns if c in columns and c not in GAPS and c != "arm"]


@passes_absent
def model_average(gaps: pd.DataFrame) -> pd.DataFrame:
    """Mean over models of male, female and Δ per track × metric (× comparison × strata), as App. B's heatmaps.

    Columns: track, metric, [comparison], strata..., male, female, delta, n_models, simulated.
    """
    require(gaps, ("model", "track", "metric", "male", "female", "delta"), "gaps")
    keys = ["track", "metric", *[c for c in ("comparison",) if c in gaps.columns], *stratum_columns(gaps)]
    grouped = gaps.groupby(keys, sort=False)
    averages = grouped[["male", "female", "delta"]].mean()
    averages["n_models"] = grouped["model"].nunique()
    averages["simulated"] = grouped["simulated"].any() if "simulated" in gaps.columns else False
    return averages.reset_index()


def exclusions(evaluations: pd.DataFrame) -> pd.DataFrame:
    """Invalid evaluations per model × track × arm × reason (reported, never silently dropped).

    Columns: model, track, arm, invalid_reason, n_invalid, n_evaluations (all of that model × track × arm).
    """
    require(evaluations, ("model", "track", "arm", "valid", "invalid_reason"), "evaluations")
    totals = evaluations.groupby(["model", "track", "arm"]).size().rename("n_evaluations")
    invalid = evaluations[~_valid(evaluations)].assign(
        invalid_reason=lambda e: e["invalid_reason"].fillna("unspecified").astype(str))
    counts = invalid.groupby(["model", "track", "arm", "invalid_reason"]).size().rename("n_invalid").reset_index()
    return counts.merge(totals.reset_index(), on=["model", "track", "arm"])


def mixed_effects_gaps(evaluations: pd.DataFrame, metrics: Sequence[str] | None = None,
                       by: Sequence[str] = ()) -> pd.DataFrame:
    """Beyond the paper: female − male effect per model from a MixedLM with scenario random intercepts.

    One fit per model × track × metric (× `by`): value ~ 1 + female, random intercept per pair (the
    scenario), on the per-pair arm means (male and female arms), so each model has its own residual
    and scenario variance (see `stats.mixed_effects`). Meant for the continuous metrics (counts and
    ratings: Puni., Ther., Sev.; the default). Columns: model, track, metric, *by, estimate (≈ Δ), se,
    paired_se (sd(d)/√n over the complete pairs), ci_low, ci_high, p_value, n_obs, converged, note (every fit
    warning), simulated.
    """
    metrics = tuple(metrics or continuous_keys())
    for key in metrics:
        if metric(key).is_rate:
            raise ValueError(f"mixed_effects_gaps is for the continuous metrics; {key!r} is a rate")
    by = tuple(by)
    long = per_pair(evaluations, by=by, metrics=metrics)
    long = long.melt(id_vars=["model", "track", *by, "pair_id", "metric", "simulated"],
                     value_vars=["male", "female"], var_name="arm", value_name="value")
    long["female"] = (long["arm"] == "female").astype(float)
    frames = []
    for key, frame in long.groupby(["track", "metric", *by], sort=True):
        fit = stats.mixed_effects(frame, value="value", treated="female", scenario="pair_id", by="model")
        simulated = frame.groupby("model")["simulated"].any()
        frames.append(fit.assign(**dict(zip(["track", "metric", *by], key)),
                                 simulated=fit["model"].map(simulated).astype(bool)))
    result = with_groups(pd.concat(frames, ignore_index=True), evaluations)
    group = ["group"] if "group" in result.columns else []
    return result[["model", *group, "track", "metric", *by, "estimate", "se", "paired_se", "ci_low", "ci_high",
                   "p_value", "n_obs", "converged", "note", "simulated"]]


def _valid(evaluations: pd.DataFrame) -> pd.Series:
    """True only for valid == True (or 1); missing counts as invalid."""
    valid = evaluations["valid"]
    return valid if valid.dtype == bool else valid.isin([True, 1])


def _pair_means(evaluations: pd.DataFrame, by: tuple[str, ...], metrics: tuple[str, ...]
                ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(wide, attributes): per pair, columns (metric, arm) in paper units; attributes per pair."""
    columns = [metric(m).column for m in metrics]
    require(evaluations, ("pair_id", "track", "model", "arm", "valid", "simulated", *columns, *by), "evaluations")
    _check(evaluations, by)
    keys = ["model", "track", *by, "pair_id"]
    values = pd.DataFrame({m: _numeric(evaluations, metric(m).column) * scale(m) for m in metrics})
    values.loc[~_valid(evaluations).to_numpy(), :] = np.nan
    values[keys + ["arm"]] = evaluations[keys + ["arm"]]
    wide = values.groupby(keys + ["arm"], sort=True)[list(metrics)].mean().unstack("arm")
    wide.columns = wide.columns.set_names(["metric", "arm"])
    carried = [c for c in PAIR_ATTRIBUTES if c in evaluations.columns and c not in by]
    grouped = evaluations.groupby(keys, sort=True)
    attributes = grouped[carried].first() if carried else pd.DataFrame(index=wide.index)
    attributes["simulated"] = grouped["simulated"].any().astype(bool)
    return wide, attributes.loc[wide.index]


def _check(evaluations: pd.DataFrame, by: tuple[str, ...]) -> None:
    bad = ~evaluations["arm"].isin(ARMS)
    if bad.any():
        row = evaluations.index[bad.to_numpy()][0]
        raise ValueError(f"evaluations row {row}: arm={evaluations.at[row, 'arm']!r}; "
                         f"expected one of {', '.join(ARMS)}")
    for arm in ("male", "female"):
        if not (evaluations["arm"] == arm).any():
            raise ValueError(f"evaluations have no {arm!r} arm rows; a gap needs both mirrored arms")
    if "evaluator" in evaluations.columns and "evaluator" not in by and evaluations["evaluator"].nunique() > 1:
        raise ValueError(f"evaluations mix evaluators {sorted(evaluations['evaluator'].unique())}; "
                         "filter to one or pass by=('evaluator',)")


def _numeric(evaluations: pd.DataFrame, column: str) -> pd.Series:
    values = pd.to_numeric(evaluations[column], errors="coerce")
    bad = values.isna() & evaluations[column].notna() & _valid(evaluations)
    if bad.any():
        row = evaluations.index[bad.to_numpy()][0]
        raise ValueError(f"evaluations row {row} (pair {evaluations.at[row, 'pair_id']!r}, model "
                         f"{evaluations.at[row, 'model']!r}, arm {evaluations.at[row, 'arm']!r}): "
                         f"{column}={evaluations.at[row, column]!r} is not a number")
    return values.astype(float)


def _arms_present(evaluations: pd.DataFrame, cell_keys: list[str]) -> dict[tuple, bool]:
    counts = evaluations.groupby([*cell_keys, "arm"], sort=False).size()
    return {key: n > 0 for key, n in counts.items()}


@passes_absent
def blind_vs_sighted(sighted: pd.DataFrame, blind: pd.DataFrame) -> pd.DataFrame:
    """Δ as scored sighted and blinded per model × track × metric, and their difference.

    Blinding hides the actor's gender from the evaluator, so sighted − blind estimates the part
    of Δ the evaluator adds by knowing the gender; the blind Δ is the target's own.
    Both inputs are `paired_gaps` output (the paper's female-male rows are used).
    """
    keys = ["model", "track", "metric"]
    pick = lambda g: g[g["comparison"] == PAPER_COMPARISON] if "comparison" in g.columns else g  # noqa: E731
    merged = pick(sighted)[keys + ["delta", "simulated"]].merge(
        pick(blind)[keys + ["delta"]], on=keys, suffixes=("_sighted", "_blind"))
    merged["evaluator_part"] = merged["delta_sighted"] - merged["delta_blind"]
    return merged
