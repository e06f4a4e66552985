"""Credentials: parameters that look like one are refused, and a run's files are checked for its keys' values.

API keys come from environment variables only; a model names its variable in `api_key_env`. papermill
writes every parameter into the executed notebook, so a parameter whose name or value looks like a
credential is refused before anything runs, and the error names the parameter, never its value. Names
ending in `_env` hold the name of an environment variable (never its value) and `key_required` is a flag:
both are safe. Every file of a run is checked for the values of the key variables its models use
(`check_run_files`), and so is the response cache, in every form a server could echo a key (raw, base64,
base64url, URL-encoded, without its prefix: llm.redaction): a hit stops the run and names the file.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from gama_utils import paths
from gama_utils.llm.cache import DEFAULT_PATH
from gama_utils.llm.redaction import MIN_SECRET_CHARS, key_forms

SAFE_NAMES = ("key_required",)
SAFE_SUFFIX = "_env"
_NAME_WORDS = {"key", "apikey", "token", "secret", "secrets", "password", "passwd", "pwd", "credential",
               "credentials", "auth", "authorization", "bearer", "accesstoken"}
_KNOWN_KEY = re.compile(r"(?<![A-Za-z0-9])(?:(?:sk|rk|pk)[-_][A-Za-z0-9_-]{16,}|AIza[0-9A-Za-z_-]{30,}|"
                        r"hf_[A-Za-z0-9]{30,}|gh[pousr]_[A-Za-z0-9]{30,}|AKIA[0-9A-Z]{16}|"
                        r"xox[abprs]-[A-Za-z0-9-]{10,})")
_BEARER = re.compile(r"\bbearer\s+\S{8,}", re.IGNORECASE)
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s#\"'<>]+")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_RANDOM_RUN = re.compile(r"[A-Za-z0-9+=]{24,}")
_CHUNK = 1 << 20


class SecretInFileError(RuntimeError):
    """A file of a run holds the value of an API key variable the run uses."""


def credential_name(name: str) -> bool:
    """Whether a parameter or field name says it holds a credential (api_key, token, password, ...)."""
    if name in SAFE_NAMES or name.endswith(SAFE_SUFFIX):
        return False
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()
    return any(word in _NAME_WORDS for word in re.split(r"[^a-z0-9]+", words)) or "apikey" in words.replace("_", "")


def credential_value(value: str) -> str | None:
    """What makes a text look like a credential (a known key prefix, Bearer, a key in a URL, a long random
    token), or None. Never returns the text itself."""
    from gama_utils.llm.registry import carries_credentials

    if _KNOWN_KEY.search(value):
        return "it looks like an API key (a known key prefix)"
    if _BEARER.search(value):
        return "it looks like an authorization header (Bearer ...)"
    if any(carries_credentials(url) for url in _URL.findall(value)):
        return "it is a URL that carries credentials (user:password@ or a key in the query)"
    if any(_random(run) for run in _RANDOM_RUN.findall(value)):
        return "it holds a long random token"
    return None


def _random(text: str) -> bool:
    """A run of 24+ letters and digits, mixing both, with the character spread of a random token."""
    if not (re.search(r"[A-Za-z]", text) and re.search(r"[0-9]", text)):
        return False
    counts = Counter(text)
    entropy = -sum(c / len(text) * math.log2(c / len(text)) for c in counts.values())
    return entropy >= 3.0


def parameter_problems(values: Mapping[str, Any], where: str) -> list[str]:
    """Every parameter (or nested field) whose name or value looks like a credential; values are never shown."""
    problems: list[str] = []
    for name, value in values.items():
        for path, field, leaf in _walk(name, value):
            if credential_name(field) and leaf not in (None, "", False):
                problems.append(f"{where}: {path}: the name says it holds a credential; keys come from environment "
                                "variables only: name the variable in api_key_env")
            elif isinstance(leaf, str) and field.endswith(SAFE_SUFFIX) and not _ENV_NAME.fullmatch(leaf):
                problems.append(f"{where}: {path}: holds something that is not an environment variable's name "
                                "(give the variable's name, never the key)")
            elif isinstance(leaf, str) and (reason := credential_value(leaf)):
                problems.append(f"{where}: {path}: {reason}; keys come from environment variables only: name the "
                                "variable in api_key_env")
    return problems


def _walk(path: str, value: Any, field: str | None = None) -> Iterator[tuple[str, str, Any]]:
    """(dotted path, the innermost field name, leaf value) for every leaf of nested dicts and lists."""
    field = path if field is None else field
    if isinstance(value, Mapping):
        if credential_name(field) and value:
            yield path, field, value
            return
        for key, item in value.items():
            yield from _walk(f"{path}.{key}", item, str(key))
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _walk(f"{path}[{i}]", item, field)
    else:
        yield path, field, value


def key_values(models: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The values of the key variables (api_key_env) these models use, as set in the environment now."""
    names = {spec.get("api_key_env") for spec in models.values() if isinstance(spec, Mapping)}
    values = {os.environ.get(name, "") for name in names if name}
    return sorted(v for v in values if len(v) >= MIN_SECRET_CHARS)


def files_holding(folder: Path, secrets: Iterable[str]) -> list[Path]:
    """The files under `folder` (or the file `folder`) that contain any of `secrets` in any form a server could echo
    (raw, JSON-escaped, without a prefix, base64, base64url, URL-encoded: redaction.key_forms)."""
    needles = sorted({form.encode("utf-8") for s in secrets for form in key_forms(s)})
    if not needles or not folder.exists():
        return []
    files = sorted(folder.rglob("*")) if folder.is_dir() else [folder]
    return [path for path in files if path.is_file() and _contains(path, needles)]


def _contains(path: Path, needles: list[bytes]) -> bool:
    overlap = max(len(n) for n in needles) - 1
    tail = b""
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_CHUNK), b""):
            window = tail + block
            if any(n in window for n in needles):
                return True
            tail = window[-overlap:] if overlap else b""
    return False


def check_run_files(run: Path) -> None:
    """Stop (SecretInFileError naming the file) when a file of the run, or the response cache (responses.sqlite and
    its -wal), holds the value of a key variable that a model of the run (manifest.json's "models") uses, in any
    form (redaction.key_forms)."""
    manifest_path = Path(run) / "manifest.json"
    if not manifest_path.exists():
        return
    models = json.loads(manifest_path.read_text(encoding="utf-8")).get("models") or {}
    secrets = key_values(models)
    hits = files_holding(Path(run), secrets) if secrets else []
    if secrets and not hits:
        hits = [hit for path in sorted(paths.CACHE.glob(f"{DEFAULT_PATH}*")) for hit in files_holding(path, secrets)]
    if hits:
        raise SecretInFileError(f"{hits[0]}: holds the value of an API key the run uses; the run is stopped. "
                                "Delete the file (or the key from it) and rotate the key")
