"""Paired statistics for the gender gap (paper §4.2, App. B.3; DESIGN §7).

Every function takes per-pair differences d = female − male (or any arm − reference)
as plain numbers; pairing, exclusion and units are decided by `gama_utils.gaps`.
"""

from __future__ import annotations

import warnings
import zlib
from dataclasses import dataclass
from typing import Hashable

import numpy as np
import pandas as pd
import statsmodels.api as sm
from scipy import stats as scipy_stats
from statsmodels.stats.multitest import multipletests
from statsmodels.tools.sm_exceptions import ConvergenceWarning


@dataclass(frozen=True)
class SignedRanks:
    """Wilcoxon signed-rank sums over the nonzero differences (zeros dropped, ties get mid-ranks)."""

    t_plus: float
    t_minus: float
    n_nonzero: int


def signed_ranks(differences: np.ndarray) -> SignedRanks:
    """T+ and T− of the nonzero differences, ranked by absolute value with mid-ranks for ties."""
    d = _finite(differences)
    d = d[d != 0]
    ranks = scipy_stats.rankdata(np.abs(d))
    return SignedRanks(float(ranks[d > 0].sum()), float(ranks[d < 0].sum()), int(d.size))


EXACT_WITH_TIES_MAX_N = 13  # above this, scipy's "auto" uses the normal approximation for tied samples


def wilcoxon(differences: np.ndarray) -> float:
    """Two-sided p-value of the paired Wilcoxon signed-rank test (zeros dropped, scipy's "auto" method).

    scipy "auto": exact null distribution for up to 50 nonzero differences without ties; with ties,
    all 2^n sign patterns for n <= 13, else the tie-corrected normal approximation. The tied small
    case is enumerated here with numpy (`exact_signed_rank_p`, same p as scipy) because scipy's
    permutation machinery takes seconds per call at n = 13, and small tied cells are common
    (rates, strata, short runs). With no nonzero difference there is no evidence of a gap: p = 1.0.
    """
    d = _finite(differences)
    d = d[d != 0]
    if d.size == 0:
        return 1.0
    if d.size <= EXACT_WITH_TIES_MAX_N and np.unique(np.abs(d)).size < d.size:
        return exact_signed_rank_p(d)
    return float(scipy_stats.wilcoxon(d, zero_method="wilcox", alternative="two-sided").pvalue)


def exact_signed_rank_p(differences: np.ndarray) -> float:
    """Two-sided p of T+ against all 2^n equally likely sign patterns of the (mid-)ranks; for small n."""
    d = _finite(differences)
    d = d[d != 0]
    ranks = scipy_stats.rankdata(np.abs(d))
    patterns = (np.arange(2 ** d.size)[:, None] >> np.arange(d.size)) & 1
    null = patterns @ ranks
    observed = ranks[d > 0].sum()
    tolerance = 1e-9 * max(1.0, ranks.sum())
    less, greater = np.mean(null <= observed + tolerance), np.mean(null >= observed - tolerance)
    return float(min(1.0, 2 * min(less, greater)))


def rank_biserial(differences: np.ndarray) -> float:
    """Matched-pairs rank-biserial correlation r = (T+ − T−) / (T+ + T−); 0.0 when every difference is 0.

    Ranges from −1 (every pair favours the reference arm) to +1; same ranking as `wilcoxon`.
    """
    ranks = signed_ranks(differences)
    total = ranks.t_plus + ranks.t_minus
    return 0.0 if total == 0 else (ranks.t_plus - ranks.t_minus) / total


def cell_seed(seed: int, key: Hashable) -> np.random.Generator:
    """A generator determined by `seed` and a cell key only, so a cell's CI does not depend on the other cells."""
    return np.random.default_rng([seed, zlib.crc32(repr(key).encode())])


def bootstrap_counts(n: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """How often each of `n` pairs is drawn in each of `n_boot` resamples of size n (shape n_boot × n)."""
    draws = rng.integers(0, n, size=(n_boot, n))
    flat = (draws + (np.arange(n_boot) * n)[:, None]).ravel()
    return np.bincount(flat, minlength=n_boot * n).reshape(n_boot, n).astype(float)


def bootstrap_ci(differences: np.ndarray, n_boot: int = 2000, seed: int | np.random.Generator = 0,
                 level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap CI of the mean difference, resampling pairs (rows); vectorised.

    `differences` is one column per quantity (n pairs × k, or a 1-d array). NaN marks a pair
    excluded from that column: each resample draws n rows from all pairs, and a column's mean
    is taken over the drawn rows where it is not NaN, so all columns share the same resampled
    pairs. Returns (low, high), arrays of length k (scalars' arrays of length 1 for 1-d input).
    """
    d = np.asarray(differences, dtype=float)
    d = d[:, None] if d.ndim == 1 else d
    n, k = d.shape
    if n == 0 or n_boot == 0:
        return np.full(k, np.nan), np.full(k, np.nan)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    counts = bootstrap_counts(n, n_boot, rng)
    included = ~np.isnan(d)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = (counts @ np.where(included, d, 0.0)) / (counts @ included.astype(float))
    tail = 100 * (1 - level) / 2
    low, high = np.full(k, np.nan), np.full(k, np.nan)
    usable = included.any(axis=0)
    if usable.any():
        low[usable], high[usable] = np.nanpercentile(means[:, usable], [tail, 100 - tail], axis=0)
    return low, high


def holm(p_values: np.ndarray | pd.Series) -> np.ndarray:
    """Holm step-down adjusted p-values (statsmodels) over the non-NaN entries; NaN stays NaN."""
    p = np.asarray(p_values, dtype=float)
    adjusted = np.full(p.shape, np.nan)
    tested = ~np.isnan(p)
    if tested.any():
        adjusted[tested] = multipletests(p[tested], method="holm")[1]
    return adjusted


def mixed_effects(long: pd.DataFrame, value: str = "value", treated: str = "female",
                  scenario: str = "pair_id", by: str | None = None) -> pd.DataFrame:
    """Arm effect from a linear mixed model with a random intercept per scenario (statsmodels MixedLM, REML).

    `long` has one row per scenario × arm: `value`, `treated` (1 for the compared arm, 0 for the
    reference) and `scenario`. With `by` (e.g. "model") the fixed effects are a level and an arm
    effect per `by` group while the scenario intercept is shared by all groups; one fit serves all.
    Scenarios observed in one arm only still inform the fit (unlike the paired tests).
    Returns one row per group: estimate, se, ci_low, ci_high, p_value, n_obs, converged, note
    (statsmodels' convergence warnings, e.g. a scenario variance on the boundary, "" when none).
    """
    data = long[[value, treated, scenario] + ([by] if by else [])].dropna()
    if by:
        groups = pd.Categorical(data[by])
        levels = pd.get_dummies(groups, dtype=float).to_numpy()
        design = np.hstack([levels, levels * data[treated].to_numpy(float)[:, None]])
        names = list(groups.categories)
        effect_columns = list(range(len(names), 2 * len(names)))
    else:
        design = np.column_stack([np.ones(len(data)), data[treated].to_numpy(float)])
        names, effect_columns = [None], [1]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        fit = sm.MixedLM(data[value].to_numpy(float), design, groups=data[scenario].to_numpy()).fit(reml=True)
    note = "; ".join(dict.fromkeys(str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)))
    interval = fit.conf_int()
    rows = []
    for name, column in zip(names, effect_columns):
        rows.append({
            **({by: name} if by else {}),
            "estimate": float(fit.fe_params[column]),
            "se": float(fit.bse_fe[column]),
            "ci_low": float(interval[column, 0]),
            "ci_high": float(interval[column, 1]),
            "p_value": float(fit.pvalues[column]),
            "n_obs": int(len(data) if not by else (data[by] == name).sum()),
            "converged": bool(fit.converged),
            "note": note,
        })
    return pd.DataFrame(rows)


def _finite(values: np.ndarray) -> np.ndarray:
    v = np.asarray(values, dtype=float).ravel()
    return v[~np.isnan(v)]
