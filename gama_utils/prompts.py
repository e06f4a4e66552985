"""The project's prompt files (prompts/) and their filling; placeholders look like {{name}}."""

from __future__ import annotations

import json
import re
from functools import lru_cache

from .paths import PROMPTS

PROMPT_NAMES = ("generator", "reviewer", "compiler_post", "compiler_narrative", "evaluator")
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


class PromptError(ValueError):
    """A prompt is unknown, or is rendered with missing or unknown fields."""


@lru_cache(maxsize=None)
def load_prompt(name: str) -> str:
    """The raw text of prompts/<name>.md."""
    if name not in PROMPT_NAMES:
        raise PromptError(f"unknown prompt {name!r}; expected one of {', '.join(PROMPT_NAMES)}")
    return (PROMPTS / f"{name}.md").read_text(encoding="utf-8")


def placeholders(name: str) -> set[str]:
    """The field names a prompt expects."""
    return set(_PLACEHOLDER.findall(load_prompt(name)))


def render_prompt(name: str, **fields: object) -> str:
    """Fill every {{field}} of a prompt; an error names missing or unknown fields."""
    expected = placeholders(name)
    missing, unknown = expected - fields.keys(), fields.keys() - expected
    if missing or unknown:
        raise PromptError(f"prompt {name!r}: missing field(s) {sorted(missing)}, unknown field(s) {sorted(unknown)}")
    return _PLACEHOLDER.sub(lambda m: str(fields[m.group(1)]), load_prompt(name))


@lru_cache(maxsize=None)
def evaluator_schema() -> dict:
    """The JSON Schema of the evaluator's answer (prompts/evaluator_schema.json)."""
    return json.loads((PROMPTS / "evaluator_schema.json").read_text(encoding="utf-8"))
