"""What a run will cost before it is sent: calls, tokens and dollars per model (issue: paid runs).

Input tokens are estimated at four characters per token from the actual prompts (and, for
scoring existing responses, from the actual answers); output tokens from `answer_tokens` /
`evaluation_tokens`. Prices come from the registry (configs/models.yaml, USD per million tokens); a model
without a price shows no dollar figure and is listed, so an unknown cost is never read as zero.
Given a response cache, calls it already answers (same model, server, prompt and sample) cost $0
and are counted in `cached`, so a rerun is never refused on what it will not pay again.

The estimate is a check before sending; the cap itself is `spending_cap(max_usd)`, a Budget that
stops the run while sending, from actual usage plus what requests in flight may still cost.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd

from gama_utils import llm, paths
from gama_utils.core.prompts import render_prompt
from gama_utils.judge.judges import Judge, resolve_judge

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


def spending_cap(max_usd: float | None, max_requests: int | None = None,
                 max_tokens: int | None = None) -> llm.Budget | None:
    """The Budget that makes max_usd (and the request/token caps) hard limits while sending; None if no cap."""
    if max_usd is None and max_requests is None and max_tokens is None:
        return None
    return llm.Budget(max_requests=max_requests, max_tokens=max_tokens, max_cost_usd=max_usd)


def _open_cache(cache: llm.Cache | bool | None) -> llm.Cache | None:
    if cache is True:
        default = paths.CACHE / llm.cache.DEFAULT_PATH
        return llm.Cache(default) if default.exists() else None
    return cache or None


def _answered(cache: llm.Cache | None, spec: llm.ModelSpec, prompts: Sequence[str], samples: int) -> list[bool]:
    """For each prompt × sample (prompt-major): already answered by this model at this server?"""
    if cache is None or spec.simulated:
        return [False] * (len(prompts) * samples)
    bodies = [(llm.build_body(spec, llm.Request(spec, messages=[{"role": "user", "content": p}])), sample)
              for p in prompts for sample in range(samples)]
    return cache.answered_prompts(spec, bodies)


def estimate_run_cost(pairs: pd.DataFrame, target_models: Iterable[str | dict | llm.ModelSpec],
                      arms: Sequence[str] = ("male", "female"), samples_per_prompt: int = 1,
                      evaluator: str | dict | llm.ModelSpec | Judge | None = None,
                      blind_modes: Sequence[bool] = (False,),
                      answer_tokens: float = DEFAULT_ANSWER_TOKENS,
                      evaluation_tokens: float = DEFAULT_EVALUATION_TOKENS,
                      cache: llm.Cache | bool | None = None) -> pd.DataFrame:
    """Per model and stage (respond / evaluate): calls to pay, cached calls, tokens, USD; a TOTAL row last.

    `cache` (a Cache, or True for the default cache file if it exists): answered calls cost $0. The
    evaluation of an answer that is not known yet cannot be looked up, so evaluate rows assume the
    answers already cached were scored before (the Budget still caps what is really spent).
    """
    prompts = [str(p) for arm in arms for p in pairs[f"prompt_{arm}"]]
    store = _open_cache(cache)
    rows, share_sent = [], []
    for model in target_models:
        spec = llm.resolve_model(model)
        answered = _answered(store, spec, prompts, samples_per_prompt)
        todo = [p for n, p in enumerate(prompts) for s in range(samples_per_prompt)
                if not answered[n * samples_per_prompt + s]]
        rows.append(_row(spec, "respond", len(todo), sum(_tokens(p) for p in todo), len(todo) * answer_tokens,
                         cached=len(answered) - len(todo)))
        share_sent.append(len(todo) / max(1, len(answered)))
    judge_spec = resolve_judge(evaluator).spec if evaluator is not None else None
    if judge_spec is not None:
        spec = judge_spec
        modes = len(set(blind_modes))
        n_eval = len(prompts) * samples_per_prompt * modes * sum(share_sent)
        eval_input = (n_eval * (_evaluator_overhead() + answer_tokens)
                      + sum(_tokens(p) for p in prompts) * samples_per_prompt * modes * sum(share_sent))
        n_all = len(prompts) * samples_per_prompt * modes * len(share_sent)
        rows.append(_row(spec, "evaluate", n_eval, eval_input, n_eval * evaluation_tokens, cached=n_all - n_eval))
    frame = pd.DataFrame(rows)
    total = {"model": "TOTAL", "stage": "", "calls": frame.calls.sum(), "cached": frame.cached.sum(),
             "input_tokens": frame.input_tokens.sum(), "output_tokens": frame.output_tokens.sum(),
             "usd": frame.usd.sum(min_count=1) if frame.usd.notna().all() else None,
             "priced": bool(frame.priced.all()), "simulated": bool(frame.simulated.all())}
    return pd.concat([frame, pd.DataFrame([total])], ignore_index=True)


def _row(spec: llm.ModelSpec, stage: str, calls: float, input_tokens: float, output_tokens: float,
         cached: float = 0) -> dict:
    usd = 0.0 if spec.simulated or calls == 0 else llm.estimate_cost(spec, int(input_tokens), int(output_tokens))
    return {"model": spec.alias, "stage": stage, "calls": int(round(calls)), "cached": int(round(cached)),
            "input_tokens": int(input_tokens), "output_tokens": int(output_tokens), "usd": usd,
            "priced": usd is not None, "simulated": spec.simulated}


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
                          evaluation_tokens: float = DEFAULT_EVALUATION_TOKENS,
                          cache: llm.Cache | bool | None = None) -> pd.DataFrame:
    """Calls to pay, cached calls, tokens and USD of scoring existing responses (once per blind mode).

    `cache` (a Cache, or True for the default cache file if it exists): responses whose evaluator
    prompt the evaluator already answered cost $0. A judge that asks no model (the lexicon, most
    collaborators' judges) costs nothing.
    """
    judge = resolve_judge(evaluator)
    spec = judge.spec
    if spec is None:
        return pd.DataFrame([{"model": judge.name, "stage": "evaluate", "calls": 0, "cached": 0, "input_tokens": 0,
                              "output_tokens": 0, "usd": 0.0, "priced": True, "simulated": False}])
    from gama_utils.judge.evaluate import evaluator_prompt

    store = _open_cache(cache)
    records = responses.to_dict("records")
    texts = [_tokens(str(r["prompt"])) + _tokens(str(r["answer"] if isinstance(r["answer"], str) else ""))
             for r in records]
    todo: list[float] = []
    cached = 0
    for blind in dict.fromkeys(bool(b) for b in blind_modes):
        answered = (_answered(store, spec, [evaluator_prompt(r, blind) for r in records], 1) if store is not None
                    else [False] * len(records))
        todo += [t for t, done in zip(texts, answered) if not done]
        cached += sum(answered)
    n = len(todo)
    return pd.DataFrame([_row(spec, "evaluate", n, n * _evaluator_overhead() + sum(todo), n * evaluation_tokens,
                              cached=cached)])
