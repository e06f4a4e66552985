"""Variants of one model family compared along scale, post-training and reasoning mode (paper §4.3, Fig 9).

A variant's attributes come from its registry entry (or inline spec): family, size_b (billions of
parameters), post_training ("base" or "instruct"), thinking (on/off) and release. The comparisons
follow from them, so any family works, not only the paper's Qwen3:

- Scale: variants of one family, release, post-training and thinking setting, ordered by size.
- Post-training: base → instruct at one size (the instruct variant with thinking off, same release
  when there is one).
- Reasoning mode: thinking off → on at one size, same post-training (same release when there is one).

Beyond per-variant CIs, the claims that scale, post-training or thinking change the gap are tested:
`gap_differences` (Δ of each variant minus Δ of the one before it, paired over shared pairs) and
`size_trend` (the change in Δ per doubling of parameters).

Two questions, two units. "These variants differ" is a question about the pairs: the variants answered
the same prompts, so the paired differences and the pair-level bootstrap of the slope (p_pairs) test it.
"The gap changes with scale" is a question about models: with a handful of sizes the variants are the
units, so the trend is the least-squares slope of the variants' Δ on log2 size with its t test on
n_models − 2 degrees of freedom (p_value), beside a linearity check (the χ² of the variants' Δ around
the weighted line, on their own sampling variances: a straight line that misses the Δs by many SEs
fits badly, and then the variants differ without a trend along size). `claims` adjusts the §4.3
tests as one Holm family (the consecutive differences and the model-level trends together) and
reads each trend: "trend with size", "trend, not a straight line", "variants differ, no trend with
size" or "no evidence of a change".
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats
from statsmodels.regression.linear_model import OLS, WLS
from statsmodels.tools.tools import add_constant

from gama_utils import llm
from gama_utils.analysis import gaps, stats
from gama_utils.core.metrics import metric_keys

VARIANT_COLUMNS = ("model", "family", "size_b", "post_training", "thinking", "release")
DIFFERENCE_COLUMNS = ("axis", "comparison", "track", "metric", "from_model", "to_model", "n_pairs", "delta_from",
                      "delta_to", "difference", "ci_low", "ci_high", "se", "p_value")
TREND_COLUMNS = ("comparison", "track", "metric", "n_models", "sizes", "weighting", "slope", "ci_low", "ci_high", "se",
                 "p_pairs", "slope_models", "se_models", "ci_low_models", "ci_high_models", "df", "p_value",
                 "chi2_linearity", "p_linearity")


@dataclass(frozen=True)
class Comparison:
    """One panel of Fig 9: the models compared, in order, along one axis ("Scale", "Post-training", ...)."""

    axis: str
    models: tuple[str, ...]
    label: str = ""

    @property
    def title(self) -> str:
        """The panel title: the axis, with a qualifier when the axis has several panels."""
        return f"{self.axis} ({self.label})" if self.label else self.axis


def variant_table(models: Iterable[str | dict | llm.ModelSpec]) -> pd.DataFrame:
    """One row per model with its variant attributes (columns VARIANT_COLUMNS; None where not given)."""
    rows = []
    for model in models:
        spec = llm.resolve_model(model)
        rows.append({"model": spec.alias, "family": spec.family or spec.paper_name or spec.alias,
                     "size_b": spec.size_b, "post_training": spec.post_training, "thinking": spec.thinking,
                     "release": spec.release})
    return pd.DataFrame(rows, columns=list(VARIANT_COLUMNS))


def _known(value: object) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _records(variants: pd.DataFrame) -> list[dict]:
    return [{k: (v if _known(v) else None) for k, v in row.items()} for row in variants.to_dict("records")]


def _pick(candidates: list[dict], release: object) -> dict | None:
    """The first candidate of the same release, else the first one."""
    same = [c for c in candidates if c["release"] == release]
    pool = same or candidates
    return pool[0] if pool else None


def comparisons(variants: pd.DataFrame) -> list[Comparison]:
    """The scale, post-training and reasoning comparisons the variants allow (see the module docstring)."""
    rows = _records(variants)
    found: list[Comparison] = []
    scale: dict[tuple, list[dict]] = {}
    for row in rows:
        if row["size_b"] is not None:
            scale.setdefault((row["family"], row["release"], row["post_training"], row["thinking"]), []).append(row)
    qualifying = {key: group for key, group in scale.items() if len({r["size_b"] for r in group}) >= 2}
    for key, group in qualifying.items():
        ordered = sorted(group, key=lambda r: r["size_b"])
        label = _describe(key)
        found.append(Comparison("Scale", tuple(r["model"] for r in ordered), label))
    by_size: dict[tuple, list[dict]] = {}
    for row in rows:
        if row["size_b"] is not None:
            by_size.setdefault((row["family"], row["size_b"]), []).append(row)
    for (family, size), group in by_size.items():
        label = f"{family} {_size(size)}"
        for base in [r for r in group if r["post_training"] == "base"]:
            instruct = _pick([r for r in group if r["post_training"] == "instruct" and r["thinking"] is not True],
                             base["release"])
            if instruct is not None:
                found.append(Comparison("Post-training", (base["model"], instruct["model"]), label))
        for off in [r for r in group if r["post_training"] != "base" and r["thinking"] is False]:
            on = _pick([r for r in group if r["post_training"] == off["post_training"] and r["thinking"] is True],
                       off["release"])
            if on is not None:
                found.append(Comparison("Reasoning mode", (off["model"], on["model"]), label))
    order = {"Scale": 0, "Post-training": 1, "Reasoning mode": 2}
    panels = {axis: sum(c.axis == axis for c in found) for axis in order}
    found = [c if panels[c.axis] > 1 else Comparison(c.axis, c.models) for c in found]
    return sorted(found, key=lambda c: order[c.axis])


def _size(size: float) -> str:
    return f"{size:g}B"


def _describe(key: tuple) -> str:
    family, release, post_training, thinking = key
    parts = [str(p) for p in (family, release, post_training) if p is not None]
    if thinking is not None:
        parts.append("thinking on" if thinking else "thinking off")
    return ", ".join(parts)


def short_name(model: str, models: Iterable[str]) -> str:
    """A model's name without the prefix all compared models share (e.g. "Qwen3-" or "sim/Qwen3-")."""
    names = list(models)
    prefix = _common_prefix(names)
    rest = model[len(prefix):] if len(names) > 1 else model
    return rest or model


def _common_prefix(names: list[str]) -> str:
    if not names:
        return ""
    prefix = names[0]
    for name in names[1:]:
        while not name.startswith(prefix):
            prefix = prefix[:-1]
    cut = max(prefix.rfind("-"), prefix.rfind("/"))
    return prefix[:cut + 1] if cut >= 0 else ""


def pair_differences(evaluations: pd.DataFrame, metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """Per-pair d = female − male (paper units), rows track × metric × pair_id, one column per model (NaN: excluded)."""
    long = gaps.per_pair(evaluations, metrics=metrics)
    long["d"] = long["female"] - long["male"]
    return long.pivot_table(index=["track", "metric", "pair_id"], columns="model", values="d", aggfunc="first",
                            dropna=False)


def gap_differences(evaluations: pd.DataFrame, panels: Sequence[Comparison], n_boot: int = 2000, seed: int = 0,
                    level: float = 0.95, metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """§4.3 as tests: Δ(next variant) − Δ(variant) for consecutive variants of each comparison, per track × metric.

    Paired over the pairs both variants have valid in both arms: the per-pair e = d_next − d is
    resampled (percentile bootstrap CI of its mean, which is the difference of the two Δ over those
    pairs); p is the two-sided Wald test with the bootstrap SE, and p_holm is Holm over every row of
    the call (all comparisons × tracks × metrics). Columns: axis, comparison, track, metric, from_model,
    to_model, n_pairs, delta_from, delta_to, difference, ci_low, ci_high, se, p_value, p_holm, simulated.
    """
    metrics = tuple(metrics or metric_keys())
    wide = pair_differences(evaluations, metrics)
    simulated = bool(evaluations["simulated"].any())
    rows = []
    for panel in panels:
        for earlier, later in zip(panel.models, panel.models[1:]):
            if earlier not in wide.columns or later not in wide.columns:
                raise ValueError(f"{panel.title}: no evaluations of {earlier!r} or {later!r}")
            for track, frame in wide.groupby(level="track", sort=True):
                columns = [m for m in metrics if m in frame.index.get_level_values("metric")]
                both = {m: frame.xs(m, level="metric")[[earlier, later]].dropna() for m in columns}
                pair_ids = sorted(set().union(*(b.index for b in both.values())))
                e = np.column_stack([(both[m][later] - both[m][earlier]).reindex(pair_ids).to_numpy()
                                     for m in columns])
                means = stats.bootstrap_means(e, n_boot, stats.cell_seed(seed, (track, earlier, later)))
                low, high = stats.percentile_interval(means, level)
                estimate = np.array([both[m][later].mean() - both[m][earlier].mean() for m in columns])
                p_values = stats.bootstrap_wald_p(estimate, means) if len(means) else np.full(len(columns), np.nan)
                for j, key in enumerate(columns):
                    rows.append({"axis": panel.axis, "comparison": panel.title, "track": track, "metric": key,
                                 "from_model": earlier, "to_model": later, "n_pairs": len(both[key]),
                                 "delta_from": both[key][earlier].mean(), "delta_to": both[key][later].mean(),
                                 "difference": estimate[j], "ci_low": low[j], "ci_high": high[j],
                                 "se": float(np.nanstd(means[:, j], ddof=1)) if len(means) > 1 else np.nan,
                                 "p_value": p_values[j], "simulated": simulated})
    return _with_holm(pd.DataFrame(rows, columns=[*DIFFERENCE_COLUMNS, "simulated"]))


def size_trend(evaluations: pd.DataFrame, variants: pd.DataFrame, panels: Sequence[Comparison], n_boot: int = 2000,
               seed: int = 0, level: float = 0.95, metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """Trend of Δ over log2 model size per Scale comparison × track × metric: change in Δ per doubling of size.

    The slope is a weighted least-squares fit (statsmodels WLS) of each variant's Δ on log2(size_b),
    weights 1/SE² of each Δ (SE = sd(d)/√n; equal weights when some variant's d has no spread, as
    `weighting` says). Its CI and SE come from a bootstrap over pairs that recomputes every variant's
    Δ on the same resampled pairs (the variants answered the same prompts, so their Δ are correlated
    and WLS's own SE would be wrong); p_pairs is the Wald test with that SE: whether these variants'
    Δ differ along size, given the pairs. With few sizes that CI covers the sampling of pairs, not a
    departure from a straight line. At the level of models (the module docstring): slope_models, the
    OLS slope over the variants with se_models, its t interval and p_value on df = n_models − 2;
    chi2_linearity = Σ (Δ − fitted)² / SE² around the weighted line and p_linearity (χ² on df). p_holm is
    Holm over the model-level p of every row of the call (`claims` makes one family with the
    differences). Variants with fewer than two usable pairs are left out; a cell needs two sizes.
    Columns: TREND_COLUMNS, p_holm, simulated.
    """
    metrics = tuple(metrics or metric_keys())
    wide = pair_differences(evaluations, metrics)
    size = variants.set_index("model")["size_b"].astype(float)
    simulated = bool(evaluations["simulated"].any())
    present = set(zip(wide.index.get_level_values("track"), wide.index.get_level_values("metric")))
    cells = [(t, m) for t in sorted({t for t, _ in present}) for m in metrics if (t, m) in present]
    rows = []
    for panel in [p for p in panels if p.axis == "Scale"]:
        for track, key in cells:
            d = wide.reindex(columns=list(panel.models)).xs((track, key), level=["track", "metric"])
            d = d.loc[:, (d.notna().sum() >= 2).to_numpy()]
            if d.shape[1] >= 2 and size.loc[d.columns].nunique() >= 2:
                rows.append({"comparison": panel.title, "track": track, "metric": key,
                             **_trend(d, np.log2(size.loc[d.columns].to_numpy()), n_boot,
                                      stats.cell_seed(seed, (track, key, *d.columns)), level),
                             "simulated": simulated})
    return _with_holm(pd.DataFrame(rows, columns=[*TREND_COLUMNS, "simulated"]))


def _trend(d: pd.DataFrame, x: np.ndarray, n_boot: int, rng: np.random.Generator, level: float) -> dict:
    """WLS slope of the columns' mean over x, with its bootstrap CI, SE and Wald p (pairs resampled), and the
    model-level OLS slope with its t test and the linearity χ²."""
    values = d.to_numpy(float)
    spread = np.nanvar(values, axis=0, ddof=1)
    weighted = bool((spread > 0).all())
    weights = (~np.isnan(values)).sum(axis=0) / spread if weighted else np.ones(values.shape[1])
    deltas = np.nanmean(values, axis=0)
    wls = WLS(deltas, add_constant(x), weights=weights).fit()
    slope = float(wls.params[1])
    means = stats.bootstrap_means(values, n_boot, rng)
    centred = x - np.average(x, weights=weights)
    slopes = means @ (weights * centred) / np.sum(weights * centred ** 2)
    (low,), (high,) = stats.percentile_interval(slopes, level)
    resampled = len(slopes) > 1
    return {"n_models": d.shape[1], "sizes": ", ".join(f"{2 ** v:g}B" for v in x),
            "weighting": "1/SE²" if weighted else "equal (a variant's d has no spread)", "slope": slope,
            "ci_low": low, "ci_high": high, "se": float(np.nanstd(slopes, ddof=1)) if resampled else np.nan,
            "p_pairs": float(stats.bootstrap_wald_p(slope, slopes)[0]) if resampled else np.nan,
            **_model_level(deltas, x, wls.resid, weights if weighted else None, level)}


def _model_level(deltas: np.ndarray, x: np.ndarray, residuals: np.ndarray, weights: np.ndarray | None,
                 level: float) -> dict:
    """OLS slope of the variants' Δ on x with its t test on k − 2 df; χ² of the weighted residuals on k − 2 df."""
    df = len(deltas) - 2
    nan = float("nan")
    out = {"slope_models": nan, "se_models": nan, "ci_low_models": nan, "ci_high_models": nan, "df": df,
           "p_value": nan, "chi2_linearity": nan, "p_linearity": nan}
    if df < 1:
        return out
    fit = OLS(deltas, add_constant(x)).fit()
    interval = fit.conf_int(alpha=1 - level)
    out.update(slope_models=float(fit.params[1]), se_models=float(fit.bse[1]), ci_low_models=float(interval[1, 0]),
               ci_high_models=float(interval[1, 1]), p_value=float(fit.pvalues[1]))
    if weights is not None:
        chi2 = float(np.sum(weights * residuals ** 2))
        out.update(chi2_linearity=chi2, p_linearity=float(scipy_stats.chi2.sf(chi2, df)))
    return out


READINGS = ("trend with size", "trend, not a straight line", "variants differ, no trend with size",
            "no evidence of a change")


def claims(differences: pd.DataFrame, trend: pd.DataFrame, alpha: float = 0.05) -> tuple[pd.DataFrame, pd.DataFrame]:
    """§4.3 as one Holm family: p_holm over the consecutive differences' p and the trends' model-level p together.

    Returns both frames with that p_holm (and holm_family_size), and the trend with `reading` (READINGS):
    a trend with size when its model-level p_holm < alpha (a straight line when p_linearity ≥ alpha,
    otherwise not); "variants differ" when it is not, but a consecutive difference of its comparison ×
    track × metric is significant after Holm or the line misses the variants (p_linearity < alpha);
    otherwise no evidence. With few sizes (df 2 for four) the model-level test has little power.
    """
    p = np.concatenate([differences["p_value"].to_numpy(float), trend["p_value"].to_numpy(float)])
    adjusted = stats.holm(p)
    size = int(np.isfinite(p).sum())
    differences = differences.assign(p_holm=adjusted[:len(differences)], holm_family_size=size)
    trend = trend.assign(p_holm=adjusted[len(differences):], holm_family_size=size)
    differs = (differences.assign(significant=differences["p_holm"] < alpha)
               .groupby(["comparison", "track", "metric"])["significant"].any())

    def reading(row: pd.Series) -> str:
        if row["p_holm"] < alpha:
            return READINGS[0] if not row["p_linearity"] < alpha else READINGS[1]
        if differs.get((row["comparison"], row["track"], row["metric"]), False) or row["p_linearity"] < alpha:
            return READINGS[2]
        return READINGS[3]

    trend["reading"] = [reading(row) for _, row in trend.iterrows()] if len(trend) else []
    return differences, trend


def _with_holm(frame: pd.DataFrame) -> pd.DataFrame:
    frame.insert(frame.columns.get_loc("p_value") + 1, "p_holm", stats.holm(frame["p_value"].to_numpy(float)))
    return frame
