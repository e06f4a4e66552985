"""Across models: the random-effects pooled Δ per track × metric behind any "consistent across models" claim.

Each model's Δ (06's gaps, female − male) is one study of a meta-analysis: its within-model variance
is v = sd_diff² / n_pairs (the paired SE squared). The models differ by more than that (the offline
run's I² is close to 1), so a plain average of the Δs, or a fixed-effect mean, understates how
uncertain the across-model mean is. Per track × metric:

- τ² by DerSimonian-Laird (method of moments): Q = Σ w (Δ − Δ_FE)², w = 1/v,
  τ² = max(0, (Q − (k − 1)) / (Σw − Σw² / Σw)); I² = max(0, (Q − (k − 1)) / Q). (statsmodels'
  combine_effects(method_re="chi2") leaves a negative τ² as it is; truncated, the fit is the fixed-effect one.)
- The pooled Δ = Σ w* Δ / Σ w* with w* = 1/(v + τ²), and its Hartung-Knapp-Sidik-Jonkman interval:
  SE² = Σ w* (Δ − Δ_pooled)² / ((k − 1) Σ w*), t quantile with k − 1 degrees of freedom (not truncated
  at the random-effects SE, as statsmodels' "random effect wls"); p is that t test, p_holm Holm over
  the rows of one call.
- The prediction interval for the Δ of a new model (Higgins, Thompson & Spiegelhalter 2009):
  Δ_pooled ± t_{k−2} √(τ² + SE_RE²), SE_RE² = 1/Σ w*; it needs three models.
- n_same_sign: the models whose Δ has the pooled Δ's sign.

The models answered the same prompts, so their Δs share the scenarios' sampling noise; the
within-model variances are small beside τ² here, so treating the models as independent studies
changes little, but the interval is about models, not prompts. A model whose Δ has no sampling
variance (every pair agrees) or whose cell has fewer than two pairs is left out (n_left_out).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from gama_utils.analysis import gaps as gap_stats
from gama_utils.analysis import stats
from gama_utils.core.metrics import metric, metric_keys
from gama_utils.core.schema import passes_absent, require

LEVEL = 0.95
POOLED_COLUMNS = ("track", "metric", "n_models", "n_left_out", "pooled_delta", "se", "ci_low", "ci_high", "p_value",
                  "p_holm", "tau2", "i2", "q", "pi_low", "pi_high", "n_same_sign", "mean_delta", "fixed_delta",
                  "fixed_se", "method", "simulated")
METHOD = ("random effects over models: DerSimonian-Laird τ², each model's Δ weighted by 1/(sd_diff²/n_pairs + τ²); "
          "ci_low/ci_high and p: Hartung-Knapp-Sidik-Jonkman (t with n_models − 1 df); pi_low/pi_high: prediction "
          "interval for a new model's Δ (t with n_models − 2 df, Higgins et al. 2009); p_holm over the "
          "{n} track × metric rows.")


def random_effects(delta: np.ndarray, variance: np.ndarray, level: float = LEVEL) -> dict[str, float]:
    """DerSimonian-Laird random-effects pooling of k estimates with their variances (see the module docstring)."""
    y, v = np.asarray(delta, dtype=float), np.asarray(variance, dtype=float)
    k = y.size
    nan = float("nan")
    if k == 0:
        return {"pooled_delta": nan, "se": nan, "ci_low": nan, "ci_high": nan, "p_value": nan, "tau2": nan,
                "i2": nan, "q": nan, "pi_low": nan, "pi_high": nan, "fixed_delta": nan, "fixed_se": nan}
    w = 1 / v
    fixed = float(np.sum(w * y) / np.sum(w))
    q = float(np.sum(w * (y - fixed) ** 2))
    df = k - 1
    tau2 = max(0.0, (q - df) / (np.sum(w) - np.sum(w ** 2) / np.sum(w))) if df > 0 else 0.0
    w_re = 1 / (v + tau2)
    pooled = float(np.sum(w_re * y) / np.sum(w_re))
    se_re = float(np.sqrt(1 / np.sum(w_re)))
    out = {"pooled_delta": pooled, "se": nan, "ci_low": nan, "ci_high": nan, "p_value": nan, "tau2": tau2,
           "i2": max(0.0, (q - df) / q) if q > 0 else 0.0, "q": q, "pi_low": nan, "pi_high": nan,
           "fixed_delta": fixed, "fixed_se": float(np.sqrt(1 / np.sum(w)))}
    if df >= 1:
        se = float(np.sqrt(np.sum(w_re * (y - pooled) ** 2) / (df * np.sum(w_re))))
        t = scipy_stats.t.ppf(0.5 + level / 2, df)
        out.update(se=se, ci_low=pooled - t * se, ci_high=pooled + t * se,
                   p_value=float(2 * scipy_stats.t.sf(abs(pooled) / se, df)) if se > 0 else nan)
    if k >= 3:
        half = scipy_stats.t.ppf(0.5 + level / 2, k - 2) * np.sqrt(tau2 + se_re ** 2)
        out.update(pi_low=pooled - half, pi_high=pooled + half)
    return out


@passes_absent
def pooled_gaps(gaps: pd.DataFrame, level: float = LEVEL) -> pd.DataFrame:
    """Random-effects pooled Δ over the models per track × metric of a gaps frame (columns POOLED_COLUMNS).

    Uses the paper's female − male rows without strata; mean_delta is the plain average of the
    models' Δ (what Tables 2-3's averages show), fixed_delta/fixed_se the fixed-effect mean.
    """
    cells = gap_stats.PAPER_COMPARISON
    rows = gaps[gaps["comparison"] == cells] if "comparison" in gaps.columns else gaps
    strata = gap_stats.stratum_columns(rows)
    if strata:
        raise ValueError(f"gaps are stratified by {', '.join(strata)}; pooling is over the unstratified cells")
    require(rows, ("model", "track", "metric", "delta", "n_pairs", "sd_diff"), "gaps")
    variance = rows["sd_diff"].astype(float) ** 2 / rows["n_pairs"].astype(float)
    usable = (rows["n_pairs"] >= 2) & np.isfinite(variance) & (variance > 0) & rows["delta"].notna()
    rows = rows.assign(variance=variance, usable=usable)
    order = {key: i for i, key in enumerate(metric_keys())}
    out = []
    for (track, key), cell in rows.groupby(["track", "metric"], sort=False):
        kept = cell[cell["usable"]]
        fit = random_effects(kept["delta"].to_numpy(float), kept["variance"].to_numpy(float), level)
        sign = np.sign(fit["pooled_delta"]) if np.isfinite(fit["pooled_delta"]) else np.nan
        out.append({"track": track, "metric": key, "n_models": len(kept), "n_left_out": int(len(cell) - len(kept)),
                    **fit, "n_same_sign": int((np.sign(kept["delta"]) == sign).sum()),
                    "mean_delta": float(kept["delta"].mean()) if len(kept) else float("nan"),
                    "simulated": bool(cell["simulated"].any()) if "simulated" in cell.columns else False})
    table = pd.DataFrame(out)
    table = table.sort_values(["track", "metric"], key=lambda s: s.map(order) if s.name == "metric" else s,
                              ignore_index=True)
    table["p_holm"] = stats.holm(table["p_value"].to_numpy(float))
    table["method"] = METHOD.format(n=int(table["p_value"].notna().sum()))
    table.attrs["simulated"] = bool(table["simulated"].any())
    return table[list(POOLED_COLUMNS)]


def _value(key: str, value: float) -> str:
    """A Δ as the tables show it: counts and ratings with two decimals, rates in percentage points."""
    return f"{value:+.1f} pp" if metric(key).is_rate else f"{value:+.2f}"


def pooled_summary(pooled: pd.DataFrame, alpha: float = 0.05) -> dict[str, str]:
    """One sentence per track on the pooled Δ: which metrics' pooled Δ excludes 0 and which hold for a new model.

    `pooled` is `pooled_gaps` output; a metric counts when its Holm-adjusted p is below `alpha`, and as
    holding for a new model when its prediction interval also excludes 0.
    """
    require(pooled, ("track", "metric", "n_models", "pooled_delta", "ci_low", "ci_high", "p_holm", "pi_low",
                     "pi_high", "i2", "n_same_sign"), "pooled gaps")
    sentences = {}
    for track, rows in pooled.groupby("track", sort=False):
        k = int(rows["n_models"].max())
        found = rows[rows["p_holm"] < alpha]
        if found.empty:
            sentences[track] = (f"{track.capitalize()} track, random effects over {k} models: no metric's pooled Δ "
                                f"(female − male) differs from 0 after Holm at {alpha:g}.")
            continue
        parts = [f"{metric(r.metric).label} {_value(r.metric, r.pooled_delta)} (95% CI {_value(r.metric, r.ci_low)} "
                 f"to {_value(r.metric, r.ci_high)}; {r.n_same_sign}/{r.n_models} models same sign)"
                 for r in found.itertuples()]
        general = [metric(r.metric).label for r in found.itertuples() if r.pi_low > 0 or r.pi_high < 0]
        new_model = (f"; the prediction interval for a new model excludes 0 for {', '.join(general)}"
                     if general else "; no prediction interval for a new model excludes 0")
        sentences[track] = (f"{track.capitalize()} track, random effects over {k} models (I² "
                            f"{rows['i2'].min():.0%}-{rows['i2'].max():.0%}): the pooled Δ (female − male) differs "
                            f"from 0 after Holm for {len(found)} of {len(rows)} metrics, {', '.join(parts)}"
                            f"{new_model}".rstrip(".") + ".")
    return sentences
