"""What a run will cost before it is sent: calls, tokens and dollars per model (issue: paid runs).

Input tokens are estimated at four characters per token from the actual prompts (and, for
scoring existing responses, from the actual answers); output tokens from `answer_tokens` /
`evaluation_tokens`. Prices come from the registry (configs/models.yaml, USD per million tokens); a model
without a price shows no dollar figure and is listed, so an unknown cost is never read as zero.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import pandas as pd

from . import llm
from .judges import Judge, resolve_judge
from .prompts import render_prompt

CHARS_PER_TOKEN = 4.0
DEFAULT_ANSWER_TOKENS = 700
DEFAULT_EVALUATION_TOKENS = 250


class CostLimitExceeded(RuntimeError):
    """The estimated cost of a run is above its max_usd."""


def _tokens(text: str) -> float:
    return len(text) / CHARS_PER_TOKEN


def _evaluator_overhead() -> float:
    """Tokens of the evaluator prompt around the scenario and the answer."""
    return _tokens(render_prompt("evaluator", scenario="", actor="the narrator, a person", response=""))


def estimate_run_cost(pairs: pd.DataFrame, target_models: Iterable[str | dict | llm.ModelSpec],
                      arms: Sequence[str] = ("male", "female"), samples_per_prompt: int = 1,
                      evaluator: str | dict | llm.ModelSpec | Judge | None = None, blind_modes: Sequence[bool] = (False,),
                      answer_tokens: float = DEFAULT_ANSWER_TOKENS,
                      evaluation_tokens: float = DEFAULT_EVALUATION_TOKENS) -> pd.DataFrame:
    """Per model and stage (respond / evaluate): calls, input and output tokens, USD; a TOTAL row last."""
    prompt_tokens = sum(_tokens(str(p)) for arm in arms for p in pairs[f"prompt_{arm}"]) * samples_per_prompt
    n_calls = len(pairs) * len(arms) * samples_per_prompt
    rows = []
    for model in target_models:
        spec = llm.resolve_model(model)
        rows.append(_row(spec, "respond", n_calls, prompt_tokens, n_calls * answer_tokens))
    judge_spec = resolve_judge(evaluator).spec if evaluator is not None else None
    if judge_spec is not None:
        n_eval = n_calls * len(rows) * len(set(blind_modes))
        eval_input = n_eval * (_evaluator_overhead() + answer_tokens) + prompt_tokens * len(rows) * len(set(blind_modes))
        rows.append(_row(judge_spec, "evaluate", n_eval, eval_input, n_eval * evaluation_tokens))
    frame = pd.DataFrame(rows)
    total = {"model": "TOTAL", "stage": "", "calls": frame.calls.sum(), "input_tokens": frame.input_tokens.sum(),
             "output_tokens": frame.output_tokens.sum(),
             "usd": frame.usd.sum(min_count=1) if frame.usd.notna().all() else None,
             "priced": bool(frame.priced.all()), "simulated": bool(frame.simulated.all())}
    return pd.concat([frame, pd.DataFrame([total])], ignore_index=True)


def _row(spec: llm.ModelSpec, stage: str, calls: float, input_tokens: float, output_tokens: float) -> dict:
    usd = 0.0 if spec.simulated else llm.estimate_cost(spec, int(input_tokens), int(output_tokens))
    return {"model": spec.alias, "stage": stage, "calls": int(calls), "input_tokens": int(input_tokens),
            "output_tokens": int(output_tokens), "usd": usd, "priced": usd is not None, "simulated": spec.simulated}


def check_cost(estimate: pd.DataFrame, max_usd: float | None) -> None:
    """Stop before sending anything when the estimate is above max_usd or cannot be priced."""
    if max_usd is None:
        return
    total = estimate.iloc[-1]
    unpriced = estimate[(~estimate.priced) & (estimate.model != "TOTAL")].model.tolist()
    if unpriced:
        raise CostLimitExceeded(f"no price in configs/models.yaml for {unpriced}: the cost cannot be checked "
                                f"against max_usd={max_usd}; add prices or set max_usd=None to proceed")
    if total.usd > max_usd:
        raise CostLimitExceeded(f"estimated cost ${total.usd:,.2f} is above max_usd=${max_usd:,.2f}; "
                                "raise max_usd to proceed (nothing has been sent)")


def estimate_scoring_cost(responses: pd.DataFrame, evaluator: str | dict | llm.ModelSpec | Judge,
                          blind_modes: Sequence[bool] = (False,),
                          evaluation_tokens: float = DEFAULT_EVALUATION_TOKENS) -> pd.DataFrame:
    """Calls, tokens and USD of scoring existing responses with an evaluator (once per blind mode).

    A judge that asks no model (the lexicon, most collaborators' judges) costs nothing.
    """
    judge = resolve_judge(evaluator)
    spec = judge.spec
    if spec is None:
        return pd.DataFrame([{"model": judge.name, "stage": "evaluate", "calls": 0, "input_tokens": 0,
                              "output_tokens": 0, "usd": 0.0, "priced": True, "simulated": False}])
    modes = len(set(blind_modes))
    texts = sum(_tokens(str(t)) for t in responses["prompt"]) + sum(_tokens(str(t)) for t in responses["answer"].fillna(""))
    n = len(responses) * modes
    return pd.DataFrame([_row(spec, "evaluate", n, n * _evaluator_overhead() + modes * texts, n * evaluation_tokens)])
