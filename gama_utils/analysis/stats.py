"""Paired statistics for the gender gap (paper §4.2, App. B.3; DESIGN §7).

Every function takes per-pair differences d = female − male (or any arm − reference)
as plain numbers; pairing, exclusion and units are decided by `gama_utils.analysis.gaps`.

The mixed model (`fit_random_intercept`, below): a linear mixed model with one random intercept per scenario,
fitted by REML (vectorised).
y = Xβ + u_scenario + e with u ~ N(0, τ²), e ~ N(0, σ²). Why not statsmodels' MixedLM: it gives the
same estimates (the tests check it) but loops over scenarios in Python, one to three seconds per
model on the public track's 993 scenarios, so fitting each model on its own (`stats.mixed_effects`)
took 71 s for the offline run instead of 1.8 s here. Every scenario enters through group sums,
because with V = σ²(I + γJ) per scenario (γ = τ²/σ²) the inverse and determinant have closed forms,
so the restricted likelihood is one bounded search over γ with β and σ² profiled out. Standard
errors are σ²(X'V⁻¹X)⁻¹ as lme4 reports them; statsmodels takes them from the observed information,
which is the same for complete pairs and within 0.5% in the tests' incomplete ones.
"""

from __future__ import annotations

import warnings
import zlib
from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize
from scipy import stats as scipy_stats

# --- stats ------------------------------------------------------------------------------------------


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

ZERO_METHODS = ("wilcox", "zsplit")


def wilcoxon(differences: np.ndarray, zero_method: str = "wilcox") -> float:
    """Two-sided p-value of the paired Wilcoxon signed-rank test (scipy's "auto" method).

    zero_method "wilcox" (the paper's test) drops zero differences before ranking; "zsplit" ranks
    them with the rest and splits their ranks evenly between T+ and T− (the sensitivity analysis:
    for a 0/1 metric most pairs agree, and "wilcox" then is a sign test on the discordant pairs).
    scipy "auto": exact null distribution for up to 50 ranked differences without ties or zeros;
    with ties or zeros, all 2^n sign patterns for n <= 13, else the tie-corrected normal
    approximation. The small tied case is enumerated here with numpy (`exact_signed_rank_p`, same
    p as scipy) because scipy's permutation machinery takes seconds per call at n = 13, and small
    tied cells are common (rates, strata, short runs). With no nonzero difference p = 1.0.
    """
    if zero_method not in ZERO_METHODS:
        raise ValueError(f"zero_method must be one of {', '.join(ZERO_METHODS)}; got {zero_method!r}")
    d = _finite(differences)
    if not (d != 0).any():
        return 1.0
    ranked = d[d != 0] if zero_method == "wilcox" else d
    if ranked.size <= EXACT_WITH_TIES_MAX_N and ((ranked == 0).any() or np.unique(np.abs(ranked)).size < ranked.size):
        return exact_signed_rank_p(ranked, zero_method)
    return float(scipy_stats.wilcoxon(ranked, zero_method=zero_method, alternative="two-sided").pvalue)


def exact_signed_rank_p(differences: np.ndarray, zero_method: str = "wilcox") -> float:
    """Two-sided p of T+ against all 2^k equally likely sign patterns of the k nonzero (mid-)ranks; for small n.

    With zero_method "zsplit" the zeros are ranked too (they keep their sign-less half ranks, a constant).
    """
    d = _finite(differences)
    d = d[d != 0] if zero_method == "wilcox" else d
    ranks = scipy_stats.rankdata(np.abs(d))[d != 0]
    signs = d[d != 0]
    patterns = (np.arange(2 ** signs.size)[:, None] >> np.arange(signs.size)) & 1
    null = patterns @ ranks
    observed = ranks[signs > 0].sum()
    tolerance = 1e-9 * max(1.0, ranks.sum())
    less, greater = np.mean(null <= observed + tolerance), np.mean(null >= observed - tolerance)
    return float(min(1.0, 2 * min(less, greater)))


def rank_biserial(differences: np.ndarray) -> float:
    """Matched-pairs rank-biserial correlation r = (T+ − T−) / (T+ + T−) on the nonzero differences.

    Kerby's (2014) simple difference formula: the share of the rank sum favouring the first arm minus
    the share favouring the reference; −1 to +1, 0.0 when every difference is 0. Zero differences
    are left out, as in `wilcoxon`, so r describes the pairs that differ.
    """
    ranks = signed_ranks(differences)
    total = ranks.t_plus + ranks.t_minus
    return 0.0 if total == 0 else (ranks.t_plus - ranks.t_minus) / total


def rank_biserial_with_ties(differences: np.ndarray) -> float:
    """Rank-biserial over all n pairs, zero differences included: (R+ − R−) / (n(n + 1) / 2).

    The |d| of all n pairs are ranked together (mid-ranks for ties, zeros lowest); R+ and R− sum the
    ranks of the positive and negative differences, and the zeros' ranks count in the denominator
    only (as zero_method "zsplit" splits them evenly between both sides). Equal to
    `rank_biserial` when no difference is zero, and pulled toward 0 by the pairs that agree.
    """
    d = _finite(differences)
    if not (d != 0).any():
        return 0.0
    ranks = scipy_stats.rankdata(np.abs(d))
    return float((ranks[d > 0].sum() - ranks[d < 0].sum()) / (d.size * (d.size + 1) / 2))


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
    return percentile_interval(bootstrap_means(differences, n_boot, seed), level)


def percentile_interval(means: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) percentiles of bootstrap means per column (n_boot × k); NaN for a column without any."""
    means = np.asarray(means, dtype=float)
    means = means[:, None] if means.ndim == 1 else means
    k = means.shape[1]
    low, high = np.full(k, np.nan), np.full(k, np.nan)
    usable = ~np.isnan(means).all(axis=0) if means.shape[0] else np.zeros(k, dtype=bool)
    if usable.any():
        tail = 100 * (1 - level) / 2
        low[usable], high[usable] = np.nanpercentile(means[:, usable], [tail, 100 - tail], axis=0)
    return low, high


def bootstrap_means(differences: np.ndarray, n_boot: int = 2000,
                    seed: int | np.random.Generator = 0) -> np.ndarray:
    """Column means of `n_boot` resamples of the rows (n_boot × k); NaN cells are left out of a column's mean.

    The resamples behind `bootstrap_ci`; an empty array (0 × k) when there are no rows or no resamples.
    """
    d = np.asarray(differences, dtype=float)
    d = d[:, None] if d.ndim == 1 else d
    n, k = d.shape
    if n == 0 or n_boot == 0:
        return np.empty((0, k))
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    counts = bootstrap_counts(n, n_boot, rng)
    included = ~np.isnan(d)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (counts @ np.where(included, d, 0.0)) / (counts @ included.astype(float))


def bootstrap_wald_p(estimate: np.ndarray | float, means: np.ndarray) -> np.ndarray:
    """Two-sided p of estimate / SE with the SE the SD of the bootstrap means (per column; NaN without spread)."""
    means = np.asarray(means, dtype=float)
    se = np.nanstd(means[:, None] if means.ndim == 1 else means, axis=0, ddof=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.abs(np.asarray(estimate, dtype=float)) / se
    return np.where(se > 0, 2 * scipy_stats.norm.sf(z), np.nan)


def holm(p_values: np.ndarray | pd.Series) -> np.ndarray:
    """Holm step-down adjusted p-values over the non-NaN entries; NaN stays NaN.

    The same arithmetic as statsmodels' multipletests(method="holm") (tests compare the two), written
    out because that function runs gc.collect() on every call: 0.1-2 s each in a notebook's heap,
    and 06 adjusts dozens of families.
    """
    p = np.asarray(p_values, dtype=float)
    adjusted = np.full(p.shape, np.nan)
    tested = np.flatnonzero(~np.isnan(p))
    if tested.size:
        order = tested[np.argsort(p[tested])]
        stepped = np.maximum.accumulate(p[order] * np.arange(tested.size, 0, -1))
        adjusted[order] = np.minimum(stepped, 1.0)
    return adjusted


EFFECT_COLUMNS = ("estimate", "se", "paired_se", "ci_low", "ci_high", "p_value", "n_obs", "converged", "note")


def mixed_effects(long: pd.DataFrame, value: str = "value", treated: str = "female",
                  scenario: str = "pair_id", by: str | None = None) -> pd.DataFrame:
    """Arm effect from a linear mixed model with a random intercept per scenario (REML, `gama_utils.analysis.stats`).

    `long` has one row per scenario × arm: `value`, `treated` (1 for the compared arm, 0 for the
    reference) and `scenario`. With `by` (e.g. "model") each group is fitted on its own, so every
    model has its own residual and scenario variance. Why not one fit for all groups: a mixed model
    has a single residual variance, so a shared fit gave every model the same standard error
    (offline run, intimate Puni.: 0.186 for all ten models, while their paired SEs sd(d)/√n range
    0.129-0.237), and a shared scenario intercept buys nothing for a within-scenario arm effect.
    For complete pairs with a positive scenario variance the REML effect and its SE equal the
    paired mean difference and sd(d)/√n (`paired_se`, shown beside it). Scenarios observed in one
    arm only still inform the fit (unlike the paired tests).
    Returns one row per group: estimate, se, paired_se, ci_low, ci_high, p_value (Wald z), n_obs,
    converged, note (every warning of the fit: a scenario variance on the boundary, numerical
    warnings; "" when none).
    """
    data = long[[value, treated, scenario] + ([by] if by else [])].dropna()
    if not by:
        return pd.DataFrame([_arm_effect(data, value, treated, scenario)])
    rows = [{by: name, **_arm_effect(group, value, treated, scenario)} for name, group in data.groupby(by, sort=True)]
    return pd.DataFrame(rows, columns=[by, *EFFECT_COLUMNS])


def _arm_effect(data: pd.DataFrame, value: str, treated: str, scenario: str) -> dict:
    """One REML fit (value ~ 1 + treated, random intercept per scenario) with its warnings as a note.

    Too little data for a fit (both arms needed, and more rows than the two fixed effects: a run of one
    pair, or one whose other arm was not scored validly) gives NaN estimates with the reason as the note.
    """
    arms = data[treated].nunique()
    if arms < 2 or len(data) <= 2:
        reason = (f"not fitted: {len(data)} observation(s) in {arms} arm(s); the model needs both arms and "
                  "more than 2 observations")
        return {"estimate": np.nan, "se": np.nan, "paired_se": np.nan, "ci_low": np.nan, "ci_high": np.nan,
                "p_value": np.nan, "n_obs": int(len(data)), "converged": False, "note": reason}
    design = np.column_stack([np.ones(len(data)), data[treated].to_numpy(float)])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = fit_random_intercept(data[value].to_numpy(float), design, data[scenario].to_numpy())
        interval, p_values = fit.conf_int(), fit.pvalues
    notes = [*fit.notes, *(f"{w.category.__name__}: {w.message}" for w in caught)]
    return {"estimate": float(fit.params[1]), "se": float(fit.bse[1]),
            "paired_se": paired_se(data, value, treated, scenario),
            "ci_low": float(interval[1, 0]), "ci_high": float(interval[1, 1]), "p_value": float(p_values[1]),
            "n_obs": int(len(data)), "converged": fit.converged, "note": "; ".join(dict.fromkeys(notes))}


def paired_se(long: pd.DataFrame, value: str = "value", treated: str = "female", scenario: str = "pair_id") -> float:
    """sd(d) / √n of the within-scenario differences (treated − reference) over the complete scenarios."""
    wide = long.assign(**{treated: long[treated].astype(float)}).pivot_table(
        index=scenario, columns=treated, values=value, aggfunc="mean").dropna()
    if not {0.0, 1.0} <= set(wide.columns) or len(wide) < 2:
        return float("nan")
    d = wide[1.0] - wide[0.0]
    return float(d.std(ddof=1) / np.sqrt(len(d)))


def _finite(values: np.ndarray) -> np.ndarray:
    v = np.asarray(values, dtype=float).ravel()
    return v[~np.isnan(v)]


# --- mixed ------------------------------------------------------------------------------------------

LOG_GAMMA_BOUNDS = (-18.0, 12.0)  # γ = τ²/σ² between 1.5e-8 (no scenario variance) and 1.6e5

BOUNDARY_NOTE = ("scenario variance estimated at 0 (boundary of the parameter space): the fit ignores "
                 "the pairing, so its SE is the unpaired one")


@dataclass(frozen=True)
class RandomInterceptFit:
    """REML estimates: fixed effects, their covariance, σ², τ², whether τ² sits on 0, the optimiser's status."""

    params: np.ndarray
    cov_params: np.ndarray
    scale: float
    scenario_variance: float
    boundary: bool
    converged: bool

    @property
    def bse(self) -> np.ndarray:
        """Standard errors of the fixed effects."""
        return np.sqrt(np.diag(self.cov_params))

    def conf_int(self, level: float = 0.95) -> np.ndarray:
        """Wald intervals of the fixed effects (normal quantiles, as statsmodels' MixedLM)."""
        z = scipy_stats.norm.ppf(0.5 + level / 2)
        return np.column_stack([self.params - z * self.bse, self.params + z * self.bse])

    @property
    def pvalues(self) -> np.ndarray:
        """Two-sided Wald z-test p-values of the fixed effects."""
        return 2 * scipy_stats.norm.sf(np.abs(self.params / self.bse))

    @property
    def notes(self) -> list[str]:
        """What a reader of the estimates must know about this fit (boundary, non-convergence)."""
        return [*([BOUNDARY_NOTE] if self.boundary else []),
                *([] if self.converged else ["the search for the scenario variance did not converge"])]


def fit_random_intercept(y: np.ndarray, design: np.ndarray, groups: np.ndarray) -> RandomInterceptFit:
    """REML fit of y = design·β + scenario intercept + error; `groups` names each row's scenario."""
    y, design = np.asarray(y, dtype=float), np.asarray(design, dtype=float)
    n, p = design.shape
    if n <= p:
        raise ValueError(f"a mixed model with {p} fixed effects needs more than {p} observations; got {n}")
    _, index = np.unique(np.asarray(groups), return_inverse=True)
    sizes = np.bincount(index).astype(float)
    group_x = np.stack([np.bincount(index, weights=design[:, j]) for j in range(p)], axis=1)
    group_y = np.bincount(index, weights=y)
    xtx, xty = design.T @ design, design.T @ y

    def profile(log_gamma: float) -> tuple[float, np.ndarray, np.ndarray, float]:
        gamma = np.exp(log_gamma)
        shrink = gamma / (1 + sizes * gamma)
        a = xtx - (group_x * shrink[:, None]).T @ group_x
        beta = np.linalg.solve(a, xty - group_x.T @ (shrink * group_y))
        residual = y - design @ beta
        group_r = np.bincount(index, weights=residual, minlength=sizes.size)
        quadratic = residual @ residual - shrink @ group_r ** 2
        deviance = ((n - p) * np.log(quadratic / (n - p)) + np.log1p(sizes * gamma).sum()
                    + np.linalg.slogdet(a)[1])
        return deviance, beta, a, quadratic

    search = optimize.minimize_scalar(lambda t: profile(t)[0], bounds=LOG_GAMMA_BOUNDS, method="bounded",
                                      options={"xatol": 1e-10})
    log_gamma = float(search.x)
    boundary = profile(LOG_GAMMA_BOUNDS[0])[0] <= search.fun or log_gamma - LOG_GAMMA_BOUNDS[0] < 1e-3
    if boundary:
        log_gamma = LOG_GAMMA_BOUNDS[0]
    _, beta, a, quadratic = profile(log_gamma)
    scale = quadratic / (n - p)
    return RandomInterceptFit(params=beta, cov_params=scale * np.linalg.inv(a), scale=float(scale),
                              scenario_variance=float(scale * np.exp(log_gamma)) if not boundary else 0.0,
                              boundary=bool(boundary), converged=bool(search.success))
