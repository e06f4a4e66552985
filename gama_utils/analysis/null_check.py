"""The null check: a simulated model with no gender gap through the run's analysis, and its false-positive rate.

`sim/zero-gap` (configs/models.yaml) answers the run's own mirrored prompts with both arms drawn from
one profile, so every true Δ is 0; an offline judge (a simulated one or the lexicon, so the check
costs nothing) scores the answers, and `gaps.paired_gaps` tests them exactly as the run's models are
tested, overall and within each dimension and severity level. A calibrated analysis rejects about
5% of these cells at raw p < .05 and, after Holm, almost none. Everything here is SIMULATED.
"""

from __future__ import annotations

import pandas as pd
from statsmodels.stats.proportion import proportion_confint

from gama_utils import llm
from gama_utils.analysis import gaps
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
