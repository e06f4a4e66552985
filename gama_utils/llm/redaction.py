"""API keys in every form a server could echo them: raw, JSON-escaped, without their prefix, base64, base64url
and URL-encoded; `Redactor` blanks them all out of text before anything is written.

A base64 encoding of a key inside a longer encoded text depends on where the key starts (three alignments),
so each alignment's stable core, the characters that only the key's bytes determine, is a form of its own.
Values shorter than MIN_SECRET_CHARS ("EMPTY", "none") are placeholders, not keys.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, quote_plus

MIN_SECRET_CHARS = 12
MASK = "***"
ANSWER_FIELDS = ("text", "reasoning", "response_model", "system_fingerprint")   # what a server writes in a Result
_PREFIX = re.compile(r"^[A-Za-z]{1,10}[-_]")      # sk-, sk-proj-, key-, hf_, gsk_ ...


def _without_prefixes(key: str) -> list[str]:
    forms, rest = [], key
    while (m := _PREFIX.match(rest)) and len(rest) - m.end() >= MIN_SECRET_CHARS:
        rest = rest[m.end():]
        forms.append(rest)
    return forms


def _base64_cores(raw: bytes) -> list[str]:
    """For each of the three alignments, the base64 and base64url characters fixed by `raw` alone."""
    cores = []
    for shift in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            text = encode(b"\0" * shift + raw).decode("ascii")
            start, end = -(-8 * shift // 6), 8 * (shift + len(raw)) // 6
            cores.append(text[start:end])
        cores.append(base64.b64encode(raw).decode("ascii"))            # the whole key, padding included
    return cores


def key_forms(key: str) -> list[str]:
    """Every form of `key` to look for (longest first); empty for a placeholder shorter than MIN_SECRET_CHARS."""
    if not key or len(key) < MIN_SECRET_CHARS:
        return []
    plain = [key, *_without_prefixes(key)]
    forms: set[str] = set()
    for text in plain:
        raw = text.encode("utf-8")
        forms.update({text, text.replace("/", "\\/"), json.dumps(text)[1:-1], quote(text, safe=""),
                      quote_plus(text, safe=""), "".join(f"%{b:02X}" for b in raw), "".join(f"%{b:02x}" for b in raw)})
        forms.update(_base64_cores(raw))
    return sorted((f for f in forms if len(f) >= MIN_SECRET_CHARS), key=lambda f: (-len(f), f))


class Redactor:
    """Blanks every form of the given keys (and nothing else) out of text."""

    def __init__(self, keys: Iterable[str | None]):
        forms = sorted({f for key in keys if key for f in key_forms(key)}, key=lambda f: (-len(f), f))
        self.forms = forms
        self._pattern = re.compile("|".join(map(re.escape, forms))) if forms else None

    def __call__(self, text: Any) -> Any:
        """`text` with every key form replaced by MASK (what is not text is returned as it is)."""
        if not isinstance(text, str) or self._pattern is None:
            return text
        return self._pattern.sub(MASK, text)

    def result(self, result: Any) -> Any:
        """The Result with every key form blanked out of its ANSWER_FIELDS (changed in place and returned)."""
        if self._pattern is not None:
            for name in ANSWER_FIELDS:
                setattr(result, name, self(getattr(result, name)))
        return result

    def __bool__(self) -> bool:
        return self._pattern is not None
