"""The null check: a simulated model with no gender gap through the run's analysis, and its false-positive rate.

`sim/zero-gap` (configs/models.yaml) answers the run's own mirrored prompts with both arms drawn from
one profile, so every true Δ is 0; an offline judge (a simulated one or the lexicon, so the check
costs nothing) scores the answers, and `gaps.paired_gaps` tests them exactly as the run's models are
tested, overall and within each dimension and severity level. A calibrated analysis rejects about
5% of these cells at raw p < .05 and, after Holm, almost none. Everything here is SIMULATED.

One replicate's rate is rough (the top scope has 12 cells: an interval of 0.2%-38% around one
rejection), so `replicated_rates` repeats the tests on `n_replicates` null data sets: the answers
as scored (replicate 0, the one `false_positive_table` reports) and the same pairs with each pair's
two arms swapped at random (every metric of a pair together), which is the null the zero-gap model
plants (its arms are exchangeable). Swapping keeps each cell's |d|, zeros and ties, so only the
signs are redrawn and every replicate's tests run as one vectorised call per cell (the same rule as
`stats.wilcoxon`: all sign patterns for small tied cells, scipy otherwise). The pooled rate's interval
is a t interval over the replicates' rates (cells of one replicate share pairs, so the replicate is
the unit); 300 replicates give about ±0.9 points for the 12 top-scope cells and less for the others.
What the swaps cannot check: a judge that reads the actor's gender into a zero-gap answer (that is
the first replicate's, and the blind-vs-sighted table's, business).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats
from statsmodels.stats.proportion import proportion_confint

from gama_utils import llm
from gama_utils.analysis import gaps, stats
from gama_utils.collect import respond
from gama_utils.core.schema import PAIRS, Absent, passes_absent, require
from gama_utils.judge import evaluate
from gama_utils.judge.judges import Judge, resolve_judge

NULL_MODEL = "sim/zero-gap"
ALPHA = 0.05
SCOPES = (("model × track × metric", ()), ("… × dimension", ("dimension",)), ("… × severity", ("severity",)))


def is_offline_judge(judge: str | dict | llm.ModelSpec | Judge) -> bool:
    """Whether scoring with `judge` costs nothing and needs no network (the lexicon, a sim model, a rule)."""
    found = resolve_judge(judge)
    return found.spec.client == "sim" if found.spec is not None else not found.is_model


def should_run(requested: bool | None, judge: str | dict | llm.ModelSpec, simulated: bool) -> bool:
    """Whether 06 runs the null check: as `requested`, or (None) when the run is simulated and its judge offline.

    A real run gets it only on request, because its tables would then include a SIMULATED one.
    """
    return bool(requested) if requested is not None else simulated and is_offline_judge(judge)


def pairs_from_responses(responses: pd.DataFrame) -> pd.DataFrame:
    """The mirrored pairs (schema PAIRS) the run's models answered, rebuilt from their prompts."""
    require(responses, ("pair_id", "track", "dimension", "severity", "style", "arm", "prompt"), "responses")
    prompts = responses.drop_duplicates(["pair_id", "arm"]).pivot(index="pair_id", columns="arm", values="prompt")
    missing = [arm for arm in ("male", "female") if arm not in prompts.columns]
    if missing:
        raise ValueError(f"responses have no {' or '.join(missing)} prompts; the null check needs both arms")
    attributes = responses.drop_duplicates("pair_id").set_index("pair_id")[["track", "dimension", "severity", "style"]]
    pairs = attributes.join(prompts.rename(columns=lambda arm: f"prompt_{arm}")).reset_index()
    for column in PAIRS:
        if column not in pairs.columns:
            pairs[column] = None
    return pairs.dropna(subset=["prompt_male", "prompt_female"])[list(PAIRS)]


def null_evaluations(responses: pd.DataFrame, judge: str | dict | llm.ModelSpec, seed: int = 0) -> pd.DataFrame:
    """Evaluations of NULL_MODEL's answers to the run's prompts, scored by an offline `judge`."""
    if not is_offline_judge(judge):
        raise ValueError(f"the null check scores with an offline judge (the lexicon or a sim/ model) so that it "
                         f"costs nothing; got {evaluate.evaluator_name(judge)!r}: pass judge='lexicon'")
    answers = respond.collect_responses(pairs_from_responses(responses), [NULL_MODEL], seed=seed, progress=False)
    return evaluate.evaluate_responses(answers, judge, progress=False)


def when_requested(requested: bool | None, responses: pd.DataFrame, judge: str | dict | llm.ModelSpec,
                   simulated: bool, seed: int = 0) -> pd.DataFrame | Absent:
    """The null model's evaluations when 06 runs the check (`should_run`); Absent, saying why, when it does not."""
    if not should_run(requested, judge, simulated):
        return Absent(f"no null check (run_null_check={requested}, judge {evaluate.evaluator_name(judge)}); "
                      "run_null_check=True runs it with an offline judge")
    return null_evaluations(responses, judge, seed=seed)


@passes_absent
def false_positive_table(evaluations: pd.DataFrame, alpha: float = ALPHA, level: float = 0.95) -> pd.DataFrame:
    """Share of the null model's cells with raw p < alpha and with Holm p < alpha, per scope of cells.

    Scopes: the model × track × metric cells, and the same within each dimension and severity level
    (each a Holm family of its own, as in 06), then all of them. raw_ci_low/high: Clopper-Pearson
    interval of the raw rate (cells share pairs, so it is a rough guide), which should cover alpha.
    """
    rows, everything = [], []
    for scope, by in SCOPES:
        tested = gaps.paired_gaps(evaluations, by=by, n_boot=0)
        everything.append(tested)
        rows.append(_rates(scope, tested, alpha, level))
    rows.append(_rates("all", pd.concat(everything, ignore_index=True), alpha, level))
    table = pd.DataFrame(rows)
    table.attrs["simulated"] = True
    return table


def _rates(scope: str, tested: pd.DataFrame, alpha: float, level: float) -> dict:
    cells = tested[tested["comparison"] == gaps.PAPER_COMPARISON]
    raw, holm = int((cells["p_value"] < alpha).sum()), int((cells["p_holm"] < alpha).sum())
    low, high = proportion_confint(raw, len(cells), alpha=1 - level, method="beta")
    return {"scope": scope, "cells": len(cells), "raw_rejections": raw, "raw_rate": raw / len(cells),
            "raw_ci_low": float(low), "raw_ci_high": float(high), "holm_rejections": holm,
            "holm_rate": holm / len(cells), "zsplit_raw_rate": float((cells["p_zsplit"] < alpha).mean())}


N_REPLICATES = 300
REPLICATED_COLUMNS = ("scope", "cells", "replicates", "raw_rate", "raw_ci_low", "raw_ci_high", "holm_rate",
                      "any_holm_rate", "first_raw_rate")


def holm_rows(p_values: np.ndarray) -> np.ndarray:
    """Holm step-down adjusted p-values of each row of a (replicates × tests) array (no missing values)."""
    p = np.asarray(p_values, dtype=float)
    m = p.shape[1]
    order = np.argsort(p, axis=1, kind="stable")
    ranked = np.take_along_axis(p, order, axis=1) * (m - np.arange(m))
    adjusted = np.minimum(np.maximum.accumulate(ranked, axis=1), 1.0)
    out = np.empty_like(adjusted)
    np.put_along_axis(out, order, adjusted, axis=1)
    return out


def signed_rank_rows(differences: np.ndarray) -> np.ndarray:
    """`stats.wilcoxon` (zeros dropped) of each row of a (replicates × pairs) array whose rows share their |d|."""
    d = np.asarray(differences, dtype=float)
    d = d[:, d[0] != 0] if d.size else d
    if d.shape[1] == 0:
        return np.ones(d.shape[0])
    size = np.abs(d[0])
    if d.shape[1] <= stats.EXACT_WITH_TIES_MAX_N and np.unique(size).size < size.size:
        return np.array([stats.exact_signed_rank_p(row) for row in d])
    return np.asarray(scipy_stats.wilcoxon(d, axis=1, zero_method="wilcox", alternative="two-sided").pvalue)


@passes_absent
def replicated_rates(evaluations: pd.DataFrame, n_replicates: int = N_REPLICATES, alpha: float = ALPHA,
                     level: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """False-positive rates of the null model over `n_replicates` arm-swapped replicates, per scope (see the module
    docstring). Columns REPLICATED_COLUMNS: raw_rate, the pooled share of cells with raw p < alpha, with its t
    interval over replicates; holm_rate, the same after Holm within each replicate's scope; any_holm_rate, the
    share of replicates with any Holm rejection (the family-wise error rate, which Holm holds at alpha);
    first_raw_rate, replicate 0's raw rate (the answers as scored, as in `false_positive_table`).
    """
    long = gaps.per_pair(evaluations)
    long = long.assign(d=long["female"] - long["male"]).dropna(subset=["d"])
    pair_keys = long[["model", "track", "pair_id"]].drop_duplicates().reset_index(drop=True)
    position = pd.MultiIndex.from_frame(pair_keys).get_indexer(pd.MultiIndex.from_frame(long[["model", "track",
                                                                                               "pair_id"]]))
    rng = np.random.default_rng(seed)
    signs = np.where(rng.random((n_replicates, len(pair_keys))) < 0.5, -1.0, 1.0)
    signs[0] = 1.0
    rows, everything = [], []
    for scope, by in SCOPES:
        cells = long.groupby(["model", "track", *by, "metric"], sort=True).indices
        p = np.column_stack([signed_rank_rows(signs[:, position[i]] * long["d"].to_numpy()[i][None, :])
                             for i in cells.values()])
        everything.append(p)
        rows.append(_replicated(scope, p, holm_rows(p), alpha, level))
    p = np.hstack(everything)
    holm = np.hstack([holm_rows(part) for part in everything])
    rows.append(_replicated("all", p, holm, alpha, level))
    table = pd.DataFrame(rows, columns=list(REPLICATED_COLUMNS))
    table.attrs["simulated"] = True
    return table


def _replicated(scope: str, p: np.ndarray, holm: np.ndarray, alpha: float, level: float) -> dict:
    rates = (p < alpha).mean(axis=1)
    r = len(rates)
    half = scipy_stats.t.ppf(0.5 + level / 2, r - 1) * rates.std(ddof=1) / np.sqrt(r) if r > 1 else np.nan
    return {"scope": scope, "cells": p.shape[1], "replicates": r, "raw_rate": float(rates.mean()),
            "raw_ci_low": float(rates.mean() - half), "raw_ci_high": float(rates.mean() + half),
            "holm_rate": float((holm < alpha).mean()), "any_holm_rate": float((holm < alpha).any(axis=1).mean()),
            "first_raw_rate": float(rates[0])}
