"""The project's prompt files (prompts/) and their filling; placeholders look like {{name}}.

Some placeholders are derived rather than given by the caller: the evaluator prompt's field list
and answer shape come from the metric declarations (gama_utils.core.rubric), so the prompt always
asks for the fields the registered metrics need.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

from gama_utils.core import rubric
from gama_utils.paths import PROMPTS

PROMPT_NAMES = ("generator", "reviewer", "compiler_post", "compiler_narrative", "evaluator")
DERIVED: dict[str, dict[str, Callable[[], str]]] = {
    "evaluator": {"fields": rubric.field_list, "answer_shape": rubric.answer_shape},
}
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


class PromptError(ValueError):
    """A prompt is unknown, or is rendered with missing or unknown fields."""


@cache
def load_prompt(name: str) -> str:
    """The raw text of prompts/<name>.md."""
    if name not in PROMPT_NAMES:
        raise PromptError(f"unknown prompt {name!r}; expected one of {', '.join(PROMPT_NAMES)}")
    return (PROMPTS / f"{name}.md").read_text(encoding="utf-8")


def placeholders(name: str) -> set[str]:
    """The field names a caller fills (derived placeholders are filled by `render_prompt` itself)."""
    return set(_PLACEHOLDER.findall(load_prompt(name))) - set(DERIVED.get(name, {}))


def render_prompt(name: str, **fields: object) -> str:
    """Fill every {{field}} of a prompt; an error names missing or unknown fields."""
    expected = placeholders(name)
    missing, unknown = expected - fields.keys(), fields.keys() - expected
    if missing or unknown:
        raise PromptError(f"prompt {name!r}: missing field(s) {sorted(missing)}, unknown field(s) {sorted(unknown)}")
    values = {**{key: derive() for key, derive in DERIVED.get(name, {}).items()}, **fields}
    return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), load_prompt(name))


def evaluator_schema() -> dict:
    """The JSON Schema of the evaluator's answer, derived from the metric declarations (gama_utils.core.rubric)."""
    return rubric.json_schema()
