"""Score every answer with a judge (paper §3.3, Fig 6, Figs 23-24; notebook 05_evaluate).

The judge (gama_utils.judge.judges: an LLM, the lexicon, a simulated model or a collaborator's own)
is shown the scenario, the actor's identity and the answer, and returns the evaluator JSON of
the registered metrics (gama_utils.core.rubric). An LLM judge's invalid or out-of-range output
(severity 7, blame "mostly", prose around no JSON) is re-asked, with the error stated, up to
`max_reasks` times (gama_utils.llm.structured); what stays invalid is kept as a row with
valid=False, the raw text and the reason, and counted per model. Listed terms must occur in
the answer the judge read: those that do not are dropped and counted. With blind=True every
gender marker of the scenario and the answer is masked (gama_utils.judge.blind) and the actor is not
named, so the evaluator's own gender bias can be separated from the target's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel

from gama_utils import llm
from gama_utils.collect.respond import OriginError, answer_status
from gama_utils.core import run_folders
from gama_utils.core.metrics import metrics
from gama_utils.core.rubric import OPTIONAL_KEYS, check_terms, evaluation_row, evaluator_model
from gama_utils.core.schema import RESPONSES, evaluations_columns, require
from gama_utils.judge import lexicon
from gama_utils.judge.blind import MASKS, mask_gender
from gama_utils.judge.judges import Item, Judge, is_model_judge, judge_name, resolve_judge, response_format
from gama_utils.judge.judges import evaluator_prompt as _item_prompt
from gama_utils.llm.structured import InvalidAnswer, validate

__all__ = ["ACTORS", "BLIND_ACTOR", "OriginError", "check_evaluations_origin", "check_terms", "evaluate_all",
           "evaluate_responses", "evaluation_row", "evaluation_summary", "evaluations_frame", "evaluator_name",
           "evaluator_prompt", "metric_means", "parse_output", "primary_evaluator", "resolve_judge", "response_format",
           "save_evaluations", "shown_item", "unscorable"]
ACTORS = {"male": "the narrator, a man", "female": "the narrator, a woman", "neutral": "the narrator, a person"}
BLIND_ACTOR = "the narrator (identity withheld)"
JudgeLike = str | dict | llm.ModelSpec | Judge


def parse_output(text: str | None) -> tuple[BaseModel | None, str | None]:
    """Validate an evaluator's raw text; returns (output, None) or (None, the reason it is invalid)."""
    try:
        return validate(text, evaluator_model(), "evaluator answer"), None
    except InvalidAnswer as err:
        return None, str(err)


def unscorable(record: dict) -> str | None:
    """Why a response cannot be evaluated (failed request or empty answer), else None."""
    error, answer = record.get("error"), record.get("answer")
    if error is not None and not (isinstance(error, float) and pd.isna(error)):
        return "no answer: the target request failed"
    if not isinstance(answer, str) or not answer.strip():
        return "empty answer"
    return None


def shown_item(response: dict, blind: bool = False) -> Item:
    """What the judge is shown of one response: scenario, actor and answer, masked when blind."""
    scenario, answer = response.get("prompt") or "", response.get("answer") or ""
    if blind:
        scenario, answer = mask_gender(scenario), mask_gender(answer)
    actor = BLIND_ACTOR if blind else ACTORS.get(response["arm"], ACTORS["neutral"])
    return Item(scenario=scenario, actor=actor, answer=answer, key=_response_key(response))


def evaluator_prompt(response: dict, blind: bool = False) -> str:
    """The filled evaluator prompt for one response (masked when blind)."""
    return _item_prompt(shown_item(response, blind))


def evaluator_name(evaluator: JudgeLike) -> str:
    """The name an evaluator's rows carry: a registered judge's name ("lexicon"), or the model's alias."""
    return judge_name(evaluator)


def evaluate_responses(responses: pd.DataFrame, evaluator: JudgeLike, blind: bool = False, max_reasks: int = 2,
                       cache: llm.Cache | str | None = None, concurrency: int | None = None,
                       budget: llm.Budget | None = None, progress: bool = True) -> pd.DataFrame:
    """Score every response; returns one evaluations row per response (invalid ones kept and flagged)."""
    require(responses, RESPONSES, "responses")
    judge = resolve_judge(evaluator)
    records = responses.assign(answer_status=answer_status(responses)).to_dict("records")
    rows: list[dict[str, Any] | None] = [None] * len(records)
    scored: list[int] = []
    for i, record in enumerate(records):
        reason = unscorable(record)
        if reason:
            rows[i] = evaluation_row(record, None, judge.name, blind, reason=reason, attempts=0)
        else:
            scored.append(i)
    shown = [text for i in scored for text in (records[i].get("prompt"), records[i].get("answer"))]
    with MASKS.kept(shown if blind else ()):
        items = [shown_item(records[i], blind) for i in scored]
    read = [text for item in items for text in (item.answer, item.answer.strip())]
    with lexicon.READINGS.kept(read):  # judges that read the wording (the lexicon, simulated ones) share readings
        outcomes = judge.score(items, max_reasks=max_reasks, cache=cache, concurrency=concurrency, budget=budget,
                               progress=progress) if items else []
    if len(outcomes) != len(items):
        raise RuntimeError(f"judge {judge.name!r} returned {len(outcomes)} outcomes for {len(items)} answers")
    for i, item, outcome in zip(scored, items, outcomes):
        rows[i] = evaluation_row(records[i], outcome.value, judge.name, blind, reason=outcome.reason,
                                 raw=outcome.raw, attempts=outcome.attempts, simulated=outcome.simulated,
                                 answer=item.answer)
    return evaluations_frame([row for row in rows if row is not None])


def _response_key(record: dict) -> str:
    return f"{record['model']}|{record['pair_id']}|{record['arm']}|{record['sample']}"


def evaluations_frame(rows: list[dict]) -> pd.DataFrame:
    """The evaluations frame of evaluation_row rows (the optional columns some rows have, then the audit columns)."""
    optional = [c for c in OPTIONAL_KEYS if any(c in row for row in rows)]
    return pd.DataFrame(rows, columns=[*evaluations_columns(), *optional, "dropped_terms", "attempts", "raw"])


def evaluation_summary(evaluations: pd.DataFrame) -> pd.DataFrame:
    """Per model × evaluator × blind: responses scored, invalid (after re-asks), re-asked, dropped terms,
    and valid scores of answers that were cut at the token limit or refused (scored, but counted)."""
    require(evaluations, evaluations_columns(), "evaluations")
    frame = evaluations.assign(valid=evaluations["valid"].astype(bool))
    status = frame["answer_status"] if "answer_status" in frame.columns else pd.Series("ok", index=frame.index)
    frame = frame.assign(truncated_scored=frame["valid"] & status.eq("truncated"),
                         refused_scored=frame["valid"] & status.eq("refused"))
    grouped = frame.groupby(["model", "evaluator", "blind"], sort=False)
    return grouped.agg(n=("valid", "size"), invalid=("valid", lambda v: int((~v).sum())),
                       reasked=("attempts", lambda a: int((a > 1).sum())),
                       dropped_terms=("dropped_terms", "sum"), truncated_scored=("truncated_scored", "sum"),
                       refused_scored=("refused_scored", "sum")).reset_index()


def evaluate_all(responses: pd.DataFrame, evaluator: JudgeLike, blind_modes: Sequence[bool] = (False,),
                 **kwargs: Any) -> pd.DataFrame:
    """Score the responses once per blind mode (e.g. sighted and blinded) and stack the rows."""
    frames = [evaluate_responses(responses, evaluator, blind=bool(b), **kwargs) for b in dict.fromkeys(blind_modes)]
    return pd.concat(frames, ignore_index=True)


def metric_means(evaluations: pd.DataFrame) -> pd.DataFrame:
    """Mean of each framing metric per model × evaluator × blind × track × arm (valid rows; rates in %)."""
    valid = evaluations[evaluations["valid"].astype(bool)]
    present = [m for m in metrics() if m.column in valid.columns]
    table = valid.groupby(["model", "evaluator", "blind", "track", "arm"]).agg(
        **{m.label: (m.column, "mean") for m in present})
    for m in present:
        table[m.label] *= m.scale
    return table.round(2)


def primary_evaluator(evaluations: pd.DataFrame) -> str:
    """The run's main judge: its first model judge, or its first judge when none is a model."""
    names = list(dict.fromkeys(evaluations["evaluator"]))
    if not names:
        raise ValueError("no evaluations in this run: run 05_evaluate first")
    return next((name for name in names if is_model_judge(name)), names[0])


def check_evaluations_origin(run: Path, evaluators: str | Iterable[str], replace: bool = False) -> None:
    """Refuse (OriginError) to write scores into a run whose evaluations.jsonl holds another evaluator's, which
    would be replaced; scores by the same evaluator (a resumed or repeated 05_evaluate) pass."""
    path = Path(run) / "evaluations.jsonl"
    if replace or not path.exists() or not path.stat().st_size:
        return
    names = {evaluators} if isinstance(evaluators, str) else set(evaluators)
    existing = run_folders.load(run, "evaluations")
    others = existing[~existing["evaluator"].isin(names)].groupby("evaluator").size()
    if len(others):
        held = ", ".join(f"{n} by {name!r}" for name, n in others.items())
        raise OriginError(f"{path} holds scores of another evaluator ({held}), which scoring with "
                          f"{', '.join(sorted(names))} would replace. Pass replace=True (the parameter `replace` of "
                          "05_evaluate) to replace them, choose another run folder, or compare a second judge in "
                          "08_robustness")


def save_evaluations(evaluations: pd.DataFrame, run: str | Path, replace: bool = False) -> Path:
    """Write run/evaluations.jsonl, refused (OriginError) when it would replace another evaluator's scores."""
    folder = run_folders.run_dir(run)
    check_evaluations_origin(folder, set(evaluations["evaluator"]), replace)
    return run_folders.save(evaluations, folder, "evaluations")
