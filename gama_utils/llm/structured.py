"""Structured output from an LLM: parse the JSON, validate it, re-ask with the error stated.

`ask_structured(requests, parse)` sends the requests through the llm layer and reads each answer
with `parse`: a pydantic model class (the answer's JSON object is validated against it) or a
function (result, index) → value that raises `InvalidAnswer` (or a pydantic ValidationError)
saying what is wrong. An answer that fails is re-asked up to `max_reasks` times: the
conversation is extended by the invalid answer and a user message stating the error
(`REASK_MESSAGE`). A request that failed (the llm layer already retried it) is not re-asked.
Every request gets an `Outcome`: the value, or None with the reason and the raw text of the
last answer; always the attempts made and whether the answer was simulated.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from gama_utils import llm

T = TypeVar("T")
Parser = Callable[[llm.Result, int], T]
REASK_MESSAGE = ("That answer was invalid ({reason}). "
                 "Reply again with only the JSON object, following the schema exactly.")
_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*\n?|\n?\s*```\s*$")
log = logging.getLogger(__name__)


class InvalidAnswer(ValueError):
    """A model's answer that cannot be used; the message says why (it is shown to the model on re-ask)."""


@dataclass
class Outcome(Generic[T]):
    """What became of one request: the value, or None with the reason and the last raw answer."""

    value: T | None
    reason: str | None
    raw: str | None
    attempts: int
    simulated: bool = False
    result: llm.Result | None = None

    @property
    def ok(self) -> bool:
        """True when the answer was read."""
        return self.reason is None


def strip_fences(text: str) -> str:
    """The answer without a surrounding ```json … ``` fence."""
    return _FENCE.sub("", text.strip()).strip()


def json_object(text: str | None, what: str = "answer") -> dict[str, Any]:
    """The JSON object in an answer (a code fence and chatter around the braces tolerated)."""
    if not text or not text.strip():
        raise InvalidAnswer(f"empty {what}")
    body = strip_fences(text)
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end <= start:
        raise InvalidAnswer(f"no JSON object in the {what}")
    try:
        value = json.loads(body[start:end + 1])
    except json.JSONDecodeError as err:
        raise InvalidAnswer(f"malformed JSON ({err.msg} at char {err.pos})") from None
    if not isinstance(value, dict):
        raise InvalidAnswer(f"the {what} is JSON but not an object")
    return value


def validation_reason(err: ValidationError) -> str:
    """A pydantic error as 'field: message; …' ('object' for the answer as a whole)."""
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'object'}: {e['msg']}" for e in err.errors())


def validate(text: str | None, model: type[BaseModel], what: str = "answer") -> BaseModel:
    """The answer's JSON object validated against `model`; InvalidAnswer says what is wrong."""
    try:
        return model.model_validate(json_object(text, what))
    except ValidationError as err:
        raise InvalidAnswer(validation_reason(err)) from None


def read_with(parse: type[BaseModel] | Parser,
              what: str = "answer") -> Callable[[llm.Result, int], tuple[Any, str | None]]:
    """`parse` as a function (result, index) → (value, None) or (None, reason)."""
    if isinstance(parse, type) and issubclass(parse, BaseModel):
        model = parse

        def parse_model(result: llm.Result, index: int) -> BaseModel:
            return validate(result.text, model, what)

        function: Parser = parse_model
    else:
        function = parse

    def read(result: llm.Result, index: int) -> tuple[Any, str | None]:
        try:
            return function(result, index), None
        except InvalidAnswer as err:
            return None, str(err)
        except ValidationError as err:
            return None, validation_reason(err)
    return read


def reask(request: llm.Request, answer: str | None, reason: str, message: str = REASK_MESSAGE) -> llm.Request:
    """The request again, its conversation extended by the invalid answer and the error stated."""
    messages = list(request.messages) if request.messages is not None else [{"role": "user", "content": request.prompt}]
    messages += [{"role": "assistant", "content": answer or ""},
                 {"role": "user", "content": message.format(reason=reason)}]
    return dataclasses.replace(request, messages=messages, prompt=None)


def ask_structured(requests: Sequence[llm.Request], parse: type[BaseModel] | Parser, *, max_reasks: int = 2,
                   what: str = "answer", reask_message: str = REASK_MESSAGE, cache: Any = None,
                   concurrency: int | None = None, budget: llm.Budget | None = None, progress: bool = True,
                   desc: str = "") -> list[Outcome]:
    """Run the requests and read each answer, re-asking invalid ones; one Outcome per request, in order."""
    read = read_with(parse, what)
    current = list(requests)
    outcomes: list[Outcome | None] = [None] * len(current)
    pending = list(range(len(current)))
    for attempt in range(1, max_reasks + 2):
        if not pending:
            break
        label = desc if attempt == 1 else f"{desc} (re-ask {attempt - 1})"
        results = llm.run([current[i] for i in pending], cache=cache, concurrency=concurrency, budget=budget,
                          progress=progress, desc=label)
        again = []
        for i, result in zip(pending, results):
            reason: str | None
            if result.error is not None:
                value, reason = None, f"request failed: {result.error}"
            else:
                value, reason = read(result, i)
            outcomes[i] = Outcome(value, reason, None if reason is None else result.text, attempt,
                                  bool(result.simulated), result)
            if reason is not None and result.error is None and attempt <= max_reasks:
                current[i] = reask(current[i], result.text, reason, reask_message)
                again.append(i)
        if again:
            log.info("%s: re-asking %d of %d answers", desc or "structured output", len(again), len(pending))
        pending = again
    return [o for o in outcomes if o is not None]
