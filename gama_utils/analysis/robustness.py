"""Robustness of the gender gaps to the choice of evaluator (paper §4.4, Fig 10, Tables 10-11).

`evaluator_agreement` compares two judges' Δ over the model × track × metric cells, each figure with a
95% interval (Clopper-Pearson for the direction agreement, a bootstrap over the cells for r and the
mean |ΔA − ΔB|; the cells share models and prompts, so these are a guide, not exact coverage).
`judge_sensitivity` puts the judge's uncertainty into each gap: the cell's Δ under each judge over
the pairs both scored, their difference with a paired bootstrap CI, and whether the conclusion (the
sign, or the Holm decision) changes with the judge.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from scipy.stats import pearsonr

from gama_utils.analysis import gaps as gap_stats
from gama_utils.analysis import stats
from gama_utils.core.metrics import metric_keys
from gama_utils.core.schema import require
from gama_utils.judge.lexicon_agreement import exact_interval, resamples, rowwise_pearson

CELL_KEYS = ("model", "track", "metric")


def _cells(df: pd.DataFrame, name: str) -> pd.DataFrame:
    """The (model, track, metric, delta) cells of one evaluator, checked for duplicates (a missing Δ is kept)."""
    require(df, (*CELL_KEYS, "delta"), f"evaluator_agreement {name}")
    cells = df[[*CELL_KEYS, "delta"]]
    duplicated = cells.duplicated(list(CELL_KEYS), keep=False)
    if duplicated.any():
        row = cells[duplicated].iloc[0]
        raise ValueError(f"evaluator_agreement {name}: more than one row for cell "
                         f"({', '.join(f'{k}={row[k]}' for k in CELL_KEYS)}), first at row {row.name}")
    return cells


def evaluator_agreement(a: pd.DataFrame, b: pd.DataFrame, *, signed_zeros: bool = False, n_boot: int = 2000,
                        seed: int = 0, level: float = 0.95) -> dict[str, float | int]:
    """Agreement of two evaluators' gaps Δ over their shared (model, track, metric) cells.

    Returns direction_agreement (share of cells whose two Δs have the same sign, over the
    n_nonzero cells where neither Δ is zero), pearson_r and mean_abs_diff (over all n_cells
    aligned cells; Δ in the paper's units, rates in percentage points), n_cells, n_nonzero, and
    n_without_delta: shared cells left out because an evaluator has no Δ there (no pair it scored validly in
    both arms, as in a small run on a weak judge).
    With signed_zeros=True a zero Δ keeps the sign it was printed with (-0.0 from "-0.00")
    and direction agreement is taken over all cells.

    On the paper's printed Δ (Tables 2-3 vs 10-11, 120 cells) the default reading gives
    115/118 = 0.9746, r = 0.9598, mean |ΔA − ΔB| = 1.8028, the reported 97.5%, 0.960, 1.80;
    signed_zeros gives 117/120 = 0.975 exactly. Recomputing Δ as female − male from the printed
    means instead gives 0.9746, 0.9601 and 1.7939, which misses the reported 1.80 (see
    data/paper/README.md), so the paper's figures come from the printed Δ column.

    Intervals (`level`): direction_ci_low/high are Clopper-Pearson on the agreeing cells; pearson_ci_low/high
    and mean_abs_diff_ci_low/high the percentile bootstrap over the aligned cells (`n_boot` resamples, 0: none).
    """
    shared = _cells(a, "a").merge(_cells(b, "b"), on=list(CELL_KEYS), suffixes=("_a", "_b"))
    if shared.empty:
        raise ValueError("evaluator_agreement: a and b share no (model, track, metric) cell")
    merged = shared.dropna(subset=["delta_a", "delta_b"])
    delta_a = merged["delta_a"].to_numpy(dtype=float)
    delta_b = merged["delta_b"].to_numpy(dtype=float)
    nonzero = (delta_a != 0) & (delta_b != 0)
    if signed_zeros:
        same_direction = np.signbit(delta_a) == np.signbit(delta_b)
    else:
        same_direction = (np.sign(delta_a) == np.sign(delta_b))[nonzero]
    direction = exact_interval(int(same_direction.sum()), int(same_direction.size), level) or [np.nan, np.nan]
    pearson, mad = [np.nan, np.nan], [np.nan, np.nan]
    if n_boot and len(merged) >= 2:
        rows = resamples(len(merged), n_boot, seed)
        tail = 100 * (1 - level) / 2
        r = rowwise_pearson(delta_a[rows], delta_b[rows])
        pearson = list(np.nanpercentile(r, [tail, 100 - tail])) if np.isfinite(r).any() else pearson
        mad = list(np.percentile(np.abs(delta_a - delta_b)[rows].mean(axis=1), [tail, 100 - tail]))
    return {
        "direction_agreement": float(same_direction.mean()) if same_direction.size else float("nan"),
        "direction_ci_low": float(direction[0]), "direction_ci_high": float(direction[1]),
        "pearson_r": float(pearsonr(delta_a, delta_b).statistic) if len(merged) >= 2 else float("nan"),
        "pearson_ci_low": float(pearson[0]), "pearson_ci_high": float(pearson[1]),
        "mean_abs_diff": float(np.abs(delta_a - delta_b).mean()) if len(merged) else float("nan"),
        "mean_abs_diff_ci_low": float(mad[0]), "mean_abs_diff_ci_high": float(mad[1]),
        "n_cells": int(len(merged)),
        "n_nonzero": int(nonzero.sum()),
        "n_without_delta": int(len(shared) - len(merged)),
    }


SENSITIVITY_COLUMNS = ("judge_a", "judge_b", "model", "track", "metric", "n_pairs", "delta_a", "delta_b", "difference",
                       "ci_low", "ci_high", "p_holm_a", "p_holm_b", "sign_changes", "holm_changes",
                       "conclusion_changes", "simulated")


def judge_sensitivity(evaluations: Mapping[str, pd.DataFrame], gaps: Mapping[str, pd.DataFrame], reference: str,
                      n_boot: int = 2000, seed: int = 0, level: float = 0.95, alpha: float = 0.05) -> pd.DataFrame:
    """How much each cell's Δ moves when the judge changes: every other judge against `reference`.

    `evaluations` maps a judge's name to the (sighted) evaluations it gave the same answers, `gaps` to its
    `paired_gaps` (female − male rows used). Per judge × model × track × metric, over the pairs both
    judges scored validly in both arms (n_pairs): delta_a and delta_b (the reference's and the other
    judge's Δ on those pairs), difference = delta_b − delta_a with a percentile bootstrap CI resampling
    those pairs (paired: both judges read the same answers), the two judges' Holm p from their own gaps,
    and the flags: sign_changes (the two gaps' Δ have opposite signs, neither 0), holm_changes (one is
    significant at `alpha` after Holm and the other not), conclusion_changes (either). Columns
    SENSITIVITY_COLUMNS.
    """
    if reference not in evaluations:
        raise ValueError(f"judge_sensitivity: no evaluations of the reference judge {reference!r}; judges: "
                         f"{', '.join(evaluations)}")
    metrics = metric_keys()
    keys = ["model", "track", "pair_id", "metric"]

    def per_pair(name: str) -> pd.DataFrame:
        rows = gap_stats.per_pair(evaluations[name], metrics=metrics)
        return rows.assign(d=rows["female"] - rows["male"])[[*keys, "d", "simulated"]]

    def tested(name: str) -> pd.DataFrame:
        if name not in gaps:
            raise ValueError(f"judge_sensitivity: no gaps of judge {name!r}")
        rows = gaps[name]
        rows = rows[rows["comparison"] == gap_stats.PAPER_COMPARISON] if "comparison" in rows.columns else rows
        return rows.set_index(["model", "track", "metric"])[["delta", "p_holm"]]

    reference_pairs, reference_gaps = per_pair(reference), tested(reference)
    out = []
    for name in [n for n in evaluations if n != reference]:
        both = reference_pairs.merge(per_pair(name), on=keys, suffixes=("_a", "_b"))
        both["e"] = both["d_b"] - both["d_a"]
        both["simulated"] = both["simulated_a"] | both["simulated_b"]
        decisions = reference_gaps.merge(tested(name), left_index=True, right_index=True, suffixes=("_a", "_b"))
        for (model, track), cell in both.groupby(["model", "track"], sort=True):
            wide = cell.pivot(index="pair_id", columns="metric", values=["e", "d_a", "d_b"])
            present = [m for m in metrics if m in wide["e"].columns]
            e, d_a, d_b = (wide[part][present].to_numpy(float) for part in ("e", "d_a", "d_b"))
            shared = ~np.isnan(e)
            if np.nanmax(np.abs(e), initial=0.0) == 0:  # the judges agree on every pair: every resample's mean is 0
                low = high = np.where(shared.any(axis=0) & (n_boot > 0), 0.0, np.nan)
            else:
                low, high = stats.bootstrap_ci(e, n_boot, stats.cell_seed(seed, (name, model, track)), level)
            simulated = bool(cell["simulated"].any())
            for j, key in enumerate(present):
                found = (model, track, key) in decisions.index
                gap = decisions.loc[(model, track, key)] if found else None
                delta_a, delta_b = (gap["delta_a"], gap["delta_b"]) if gap is not None else (np.nan, np.nan)
                p_a, p_b = (gap["p_holm_a"], gap["p_holm_b"]) if gap is not None else (np.nan, np.nan)
                sign = bool(delta_a * delta_b < 0)
                holm = bool(np.isfinite(p_a) and np.isfinite(p_b) and (p_a < alpha) != (p_b < alpha))
                rows = shared[:, j]
                out.append({"judge_a": reference, "judge_b": name, "model": model, "track": track, "metric": key,
                            "n_pairs": int(rows.sum()), "delta_a": float(d_a[rows, j].mean()),
                            "delta_b": float(d_b[rows, j].mean()), "difference": float(e[rows, j].mean()),
                            "ci_low": low[j], "ci_high": high[j], "p_holm_a": p_a, "p_holm_b": p_b,
                            "sign_changes": sign, "holm_changes": holm, "conclusion_changes": sign or holm,
                            "simulated": simulated})
    table = pd.DataFrame(out, columns=list(SENSITIVITY_COLUMNS))
    table.attrs["simulated"] = bool(table["simulated"].any()) if len(table) else False
    return table


def sensitivity_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per judge pair and track: cells, how many change their conclusion (sign, Holm decision) with the judge,
    and how many differences' CIs exclude 0."""
    require(table, ("judge_a", "judge_b", "track", "difference", "ci_low", "ci_high", "sign_changes",
                    "holm_changes", "conclusion_changes"), "judge sensitivity")
    rows = table.assign(moved=(table["ci_low"] > 0) | (table["ci_high"] < 0))
    summary = rows.groupby(["judge_a", "judge_b", "track"], sort=False).agg(
        cells=("difference", "size"), sign_changes=("sign_changes", "sum"), holm_changes=("holm_changes", "sum"),
        conclusion_changes=("conclusion_changes", "sum"), ci_excludes_0=("moved", "sum")).reset_index()
    summary.attrs["simulated"] = table.attrs.get("simulated", False)
    return summary
