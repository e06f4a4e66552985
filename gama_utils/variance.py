"""Repeated samples (samples_per_prompt > 1): how much of the spread is sampling noise within a prompt.

With temperature > 0 a prompt answered k times gives k different framings. The gaps average them
within pair × arm first (`gama_utils.gaps`), so Δ and its test are over pairs, never over samples.
This module splits each model × track × metric's variance into the part within a prompt (the same
pair and arm answered again) and the part between scenarios, by the one-way random-effects ANOVA
(method of moments, unbalanced form) with the prompt as the group and the arm as a fixed effect,
and says what share of the variance of the per-pair gap is sampling noise: the part more samples
per prompt would remove, where the rest only more pairs can.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from gama_utils.metrics import metric, metric_keys, scale
from gama_utils.schema import require

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
                      arms: Sequence[str] = ("male", "female")) -> pd.DataFrame:
    """Per model × track × metric: within-prompt vs between-scenario variance and the gap's sampling share.

    Valid evaluations only, in the paper's units (variances of rates in pp²). Columns (COLUMNS):
    n_prompts (pair × arm), n_samples, mean_samples; var_within, var_between and share_within =
    var_within / (var_within + var_between); gap_variance = variance of the per-pair Δ of sample
    means, and gap_sampling_share = var_within · mean(1/k_female + 1/k_male) / gap_variance, the part
    of it that is sampling noise (capped at 1).
    """
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
