"""The evaluator's rubric, derived from the metric declarations (gama_utils.core.metrics).

From the registered metrics: the pydantic model an evaluator's JSON answer is validated against
(`evaluator_model`), its JSON schema (`json_schema`, sent as response_format; `python -m
gama_utils.core.rubric` prints it), the evaluator prompt's field list and answer shape (`field_list`,
`answer_shape`, filled into prompts/evaluator.md), the metric columns of the evaluations frame
(`metric_columns`) and the evaluations row one answer becomes (`evaluation_row`).

Row rules: a term listed by the evaluator must occur in the answer it read (case and spacing
ignored); terms that do not are dropped and counted in `dropped_terms`. A row whose answer could
not be scored keeps valid=False, the reason and the raw text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, create_model

from gama_utils.core.metrics import Metric, metrics, version

TITLE = "GAMA-Bench evaluator output (paper Fig 24)"
RECORD_KEYS = ("pair_id", "track", "dimension", "severity", "style", "model", "arm", "sample")
OPTIONAL_KEYS = ("group", "answer_status")
_SHAPE = {"terms": "[...]", "boolean": "true|false"}
_CACHE: dict[tuple[str, int], Any] = {}


def _cached(name: str, build):
    key = (name, version())
    if key not in _CACHE:
        _CACHE[key] = build()
    return _CACHE[key]


def grouped() -> list[Metric]:
    """The registered metrics grouped as the prompt lists them: groups in order of first appearance."""
    order = list(dict.fromkeys(m.field.group for m in metrics()))
    return sorted(metrics(), key=lambda m: order.index(m.field.group))


def _annotation(m: Metric) -> Any:
    low, high = m.bounds
    return {"terms": list[Annotated[str, Field(min_length=1)]], "boolean": StrictBool,
            "integer": Annotated[int, Field(strict=True, ge=int(low), le=int(high or 0))],
            "choice": Literal[m.field.choices]}[m.field.type]  # type: ignore[valid-type]


def evaluator_model() -> type[BaseModel]:
    """The pydantic model of the evaluator's answer (extra fields forbidden; strict booleans and integers)."""
    def build() -> type[BaseModel]:
        fields: dict[str, Any] = {m.field.name: (_annotation(m), ...) for m in grouped()}
        return create_model("EvaluatorOutput", __config__=ConfigDict(extra="forbid"),
                            __doc__="The evaluator's answer (paper Fig 24), one field per registered metric.",
                            **fields)
    return _cached("model", build)


def _property(m: Metric) -> dict:
    low, high = m.bounds
    by_type: dict[str, dict[str, Any]] = {
        "terms": {"type": "array", "items": {"type": "string", "minLength": 1}},
        "integer": {"type": "integer", "minimum": int(low), "maximum": int(high or 0)},
        "boolean": {"type": "boolean"},
        "choice": {"type": "string", "enum": list(m.field.choices)},
    }
    return {**by_type[m.field.type], "description": f"{m.field.group}: {m.field.summary}"}


def json_schema() -> dict:
    """The JSON Schema of the evaluator's answer (every field required, no other field allowed)."""
    def build() -> dict:
        ordered = grouped()
        return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": TITLE, "type": "object",
                "additionalProperties": False, "required": [m.field.name for m in ordered],
                "properties": {m.field.name: _property(m) for m in ordered}}
    return json.loads(json.dumps(_cached("schema", build)))


def field_list() -> str:
    """The prompt's list of fields: one block per group, one "- name: instruction" line per field."""
    def build() -> str:
        blocks: dict[str, list[str]] = {}
        for m in grouped():
            blocks.setdefault(m.field.group, []).append(f"- {m.field.name}: {m.field.instruction}")
        return "\n\n".join(f"{group}\n" + "\n".join(lines) for group, lines in blocks.items())
    return _cached("field_list", build)


def _shape(m: Metric) -> str:
    if m.field.type == "integer":
        low, high = m.bounds
        return f"{int(low)}-{int(high or 0)}"
    if m.field.type == "choice":
        return "|".join(json.dumps(c) for c in m.field.choices)
    return _SHAPE[m.field.type]


def answer_shape() -> str:
    """The one-line JSON shape the prompt ends with."""
    return _cached("answer_shape",
                   lambda: "{" + ", ".join(f"{json.dumps(m.field.name)}: {_shape(m)}" for m in grouped()) + "}")


def metric_columns() -> tuple[str, ...]:
    """The evaluations columns the metrics add: kept term lists, per-response values, kept choices."""
    ordered = metrics()
    return (*(m.field.name for m in ordered if m.field.type == "terms"), *(m.column for m in ordered),
            *(m.field.name for m in ordered if m.field.type == "choice"))


def _normalise(text: str) -> str:
    return " ".join(text.lower().replace("’", "'").split())


def check_terms(terms: Sequence[str], answer: str) -> tuple[list[str], list[str]]:
    """Split listed terms into those that occur in the answer (case and spacing ignored) and those that do not."""
    haystack = _normalise(answer)
    kept = [t for t in terms if t.strip() and _normalise(t) in haystack]
    return kept, [t for t in terms if t not in kept]


def scores(output: BaseModel | Mapping[str, Any], answer: str) -> tuple[dict[str, Any], int]:
    """(metric columns of a valid answer, number of listed terms dropped because the answer lacks them)."""
    values = output.model_dump() if isinstance(output, BaseModel) else dict(output)
    columns: dict[str, Any] = {}
    dropped = 0
    for m in metrics():
        value = values[m.field.name]
        if m.field.type == "terms":
            value, missing = check_terms(value, answer)
            dropped += len(missing)
        if m.keeps_field:
            columns[m.field.name] = value
        columns[m.column] = m.value(value)
    return columns, dropped


def blank_scores() -> dict[str, Any]:
    """Metric columns of an answer that could not be scored (empty term lists, no values)."""
    columns: dict[str, Any] = {m.column: None for m in metrics()}
    columns.update({m.field.name: ([] if m.field.type == "terms" else None) for m in metrics() if m.keeps_field})
    return columns


def evaluation_row(response: Mapping[str, Any], output: BaseModel | Mapping[str, Any] | None, evaluator: str,
                   blind: bool, reason: str | None = None, raw: str | None = None, attempts: int = 1,
                   simulated: bool = False, answer: str | None = None) -> dict[str, Any]:
    """One evaluations row for one response; `answer` is the text the judge read (default: the response's answer)."""
    base = {k: response[k] for k in RECORD_KEYS}
    for optional in OPTIONAL_KEYS:
        if response.get(optional):
            base[optional] = response[optional]
    base.update(evaluator=evaluator, blind=blind, attempts=attempts,
                simulated=bool(response.get("simulated")) or simulated)
    if output is None:
        return {**base, "valid": False, **blank_scores(), "dropped_terms": 0, "invalid_reason": reason, "raw": raw}
    read = answer if answer is not None else (response.get("answer") or "")
    columns, dropped = scores(output, read)
    return {**base, "valid": True, **columns, "dropped_terms": dropped, "invalid_reason": None, "raw": None}


if __name__ == "__main__":
    print(json.dumps(json_schema(), indent=2, ensure_ascii=False))
