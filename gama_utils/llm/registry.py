"""Model registry: alias → ModelSpec, read from configs/models.yaml, plus inline specs.

A model is named in one of four ways (all usable as a papermill parameter):

- an alias of configs/models.yaml, e.g. ``"gpt-5.4"``, ``"qwen3-8b"``, ``"sim/GPT-5.4"``;
- a dict with ``alias`` and overrides, e.g. ``{"alias": "qwen3-8b", "base_url": "http://gpu:8000/v1"}``;
- an inline dict for any OpenAI-compatible server, e.g.
  ``{"base_url": "http://localhost:8000/v1", "model": "Qwen/Qwen3-8B", "api_key_env": "VLLM_API_KEY"}``
  (``api_key_env`` may be left out for a server that needs no key);
- an inline string ``"openai-compatible:<base_url>#<model>[&field=value...]"``, e.g.
  ``"openai-compatible:http://localhost:8000/v1#Qwen/Qwen3-8B&api_key_env=VLLM_API_KEY&endpoint=completions"``.
  A string starting with ``{`` is read as a JSON dict.

``base_url`` may hold ``${VAR}`` or ``${VAR:-default}``; it is expanded only when a client is
made, so the spec (and any manifest written from it) keeps the template. The API key is never
part of a spec: only the name of the environment variable that holds it.

A spec's ``client`` is a registered client kind, declared here and nowhere else: 'openai' (any
OpenAI-compatible server) and 'azure' are built in; a `Provider` registered for a kind
(`register_provider`, or the entry point group ``gama_utils.llm_providers``) reaches an API with another
request and response shape and gets the layer's retries, pacing, cache, leases and dollar cap; a local
backend (`register_backend`, or the group ``gama_utils.llm_backends``: 'sim' is the offline simulator)
answers in-process, and everything it answers is labelled simulated.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import socket
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl, urlsplit

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gama_utils import paths
from gama_utils.llm.errors import ConfigError

REGISTRY_PATH = paths.CONFIGS / "models.yaml"
DEFAULT_TIMEOUT_S = 1800.0   # per request: a long reasoning answer (tens of thousands of tokens) can take 20+ minutes
INLINE_PREFIX = "openai-compatible:"
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class ModelSpec(BaseModel):
    """Everything needed to call one model, except the API key itself."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    alias: str
    provider: str = "openai-compatible"
    client: str = "openai"
    model: str = ""
    base_url: str | None = None
    api_key_env: str | None = None
    key_required: bool = True
    api_version: str | None = None
    endpoint: Literal["chat", "completions"] = "chat"
    thinking: bool | None = None
    decoding: dict[str, Any] = Field(default_factory=dict)
    rpm: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    tpm: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    max_concurrency: int | None = Field(default=None, ge=1)
    timeout_s: float = Field(default=DEFAULT_TIMEOUT_S, gt=0, allow_inf_nan=False)
    transport: Literal["aiohttp", "sdk"] | None = None
    price_input_per_m: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    price_output_per_m: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    paper_name: str | None = None
    group: str | None = None
    family: str | None = None
    size_b: float | None = Field(default=None, gt=0)
    post_training: Literal["base", "instruct"] | None = None
    release: str | None = None
    structured_output: Literal["json_schema", "json_object_schema", "none"] = "none"
    plumbing_check: bool = False
    simulated: bool = False
    roles: tuple[str, ...] = ("target",)
    extra: dict[str, Any] = Field(default_factory=dict)
    notes: str | None = None

    @field_validator("client")
    @classmethod
    def _registered_kind(cls, kind: str) -> str:
        if kind not in client_kinds():
            raise ValueError(f"client {kind!r} is not a registered client kind ({', '.join(client_kinds())}); "
                             "register one with llm.register_provider (an API) or llm.register_backend (local), "
                             f"or an entry point in {PROVIDER_ENTRY_POINTS!r} / {BACKEND_ENTRY_POINTS!r}")
        return kind

    @model_validator(mode="after")
    def _consistent(self) -> ModelSpec:
        if is_local_kind(self.client):
            object.__setattr__(self, "simulated", True)
        elif self.simulated:
            raise ValueError(f"{self.alias}: simulated=true needs a local backend such as client 'sim', "
                             f"not {self.client!r}")
        if not is_local_kind(self.client) and not self.model:
            raise ValueError(f"{self.alias}: field 'model' (the API model name) is empty")
        if self.client == "azure" and not self.api_version:
            raise ValueError(f"{self.alias}: client 'azure' needs 'api_version'")
        if self.base_url and carries_credentials(self.base_url):
            raise ValueError(_CREDENTIALS_IN_URL.format(alias=self.alias, url=redact_url(self.base_url)))
        template_kwargs = self.extra.get("chat_template_kwargs")
        if self.thinking is not None and isinstance(template_kwargs, dict) and "enable_thinking" in template_kwargs \
                and template_kwargs["enable_thinking"] != self.thinking:
            extra = {**self.extra, "chat_template_kwargs": {**template_kwargs, "enable_thinking": self.thinking}}
            object.__setattr__(self, "extra", extra)
        return self

    @property
    def transport_kind(self) -> str:
        """The HTTP path used: 'aiohttp' (fast, default for OpenAI-compatible) or 'sdk' (openai package)."""
        return self.transport or ("sdk" if self.client == "azure" else "aiohttp")

    def resolved_base_url(self) -> str:
        """The base URL with ${VAR} references expanded; ConfigError if a variable is unset."""
        if not self.base_url:
            if self.client == "openai":
                return "https://api.openai.com/v1"
            raise ConfigError(f"{self.alias}: no base_url")
        url = _expand(self.base_url, self.alias, "base_url").rstrip("/")
        if carries_credentials(url):
            raise ConfigError(_CREDENTIALS_IN_URL.format(alias=self.alias, url=redact_url(url)))
        return url

    def resolved_api_version(self) -> str | None:
        """The Azure API version with ${VAR} references expanded."""
        return _expand(self.api_version, self.alias, "api_version") if self.api_version else None

    @property
    def is_local(self) -> bool:
        """True when the base URL is this machine or a private network (a server of one's own: no token price)."""
        try:
            host = urlsplit(self.resolved_base_url()).hostname or ""
        except ConfigError:
            return False
        if host == "localhost":
            return True
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return False
        return address.is_loopback or address.is_private

    def api_key(self) -> str | None:
        """The API key from the environment (read at client creation only; never stored)."""
        return os.environ.get(self.api_key_env) if self.api_key_env else None

    def public_dict(self) -> dict[str, Any]:
        """The spec as a dict safe to write to a manifest (base URL without credentials or query)."""
        data = self.model_dump(mode="json")
        data["base_url"] = redact_url(self.base_url) if self.base_url else None
        return data


# --- client kinds: how a model is reached ---------------------------------------------------------------

NETWORK_KINDS = ("openai", "azure")                # built in: the OpenAI wire protocol, and Azure's deployments
PROVIDER_ENTRY_POINTS = "gama_utils.llm_providers"  # installed packages name their API providers here
BACKEND_ENTRY_POINTS = "gama_utils.llm_backends"    # ... and their local backends here (the simulator is 'sim')
Backend = Callable[..., Any]                        # fn(spec, request) -> Result | str (request.py's types)


def bearer_headers(spec: ModelSpec, key: str | None) -> dict[str, str]:
    """JSON headers with `Authorization: Bearer <key>` when the spec has a key."""
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    return {**headers, "Authorization": f"Bearer {key}"} if key else headers


@dataclass(frozen=True)
class Provider:
    """An API that is not OpenAI-compatible: where to POST, and how its request and reply map to the project's.

    `request(spec, body)` turns the project's OpenAI chat body (model, messages, max_tokens, decoding)
    into the API's JSON; `response(spec, data)` turns a successful reply into an OpenAI chat completion
    (`choices[0].message.content`, `choices[0].finish_reason`, `usage.prompt_tokens` and
    `usage.completion_tokens`, which the dollar cap charges). Error replies are read by their HTTP status
    and Retry-After as for any server. The cache keys the project's body, so changing `request` re-asks
    nothing that is cached.
    """

    url: Callable[[ModelSpec], str]
    request: Callable[[ModelSpec, dict[str, Any]], dict[str, Any]]
    response: Callable[[ModelSpec, dict[str, Any]], dict[str, Any]]
    headers: Callable[[ModelSpec, str | None], dict[str, str]] = bearer_headers


_PROVIDERS: dict[str, Provider] = {}
_BACKENDS: dict[str, Backend] = {}


def register_provider(kind: str, provider: Provider) -> None:
    """Make `client: <kind>` in a spec reach its API through `provider` (retries, pacing, cache, cap included)."""
    _PROVIDERS[kind] = provider
    client_kinds.cache_clear()


def register_backend(kind: str, fn: Backend) -> None:
    """Make `fn(spec, request) -> Result | str` answer every request whose spec has client `kind`.

    The backend must be synchronous and deterministic; its results are marked simulated and not cached.
    """
    _BACKENDS[kind] = fn
    client_kinds.cache_clear()


@cache
def _entry_names(group: str) -> tuple[str, ...]:
    return tuple(entry.name for entry in metadata.entry_points(group=group))


@lru_cache(maxsize=1)
def client_kinds() -> tuple[str, ...]:
    """Every client kind a spec may name: built in, registered in this process, or declared by a package."""
    kinds = [*NETWORK_KINDS, *_PROVIDERS, *_entry_names(PROVIDER_ENTRY_POINTS), *_BACKENDS,
             *_entry_names(BACKEND_ENTRY_POINTS)]
    return tuple(dict.fromkeys(kinds))


def is_local_kind(kind: str) -> bool:
    """Whether the kind is answered in-process by a backend (its answers are simulated), not over the network."""
    return kind in _BACKENDS or (kind not in NETWORK_KINDS and kind not in _PROVIDERS
                                 and kind in _entry_names(BACKEND_ENTRY_POINTS))


def provider(kind: str) -> Provider | None:
    """The registered Provider of a kind (loaded from its entry point on first use); None for the built-in kinds."""
    if kind in NETWORK_KINDS or is_local_kind(kind):
        return None
    if kind not in _PROVIDERS:
        for entry in metadata.entry_points(group=PROVIDER_ENTRY_POINTS, name=kind):
            register_provider(kind, entry.load())
    return _PROVIDERS.get(kind)


def backend(kind: str) -> Backend:
    """The local backend of a client kind: registered in this process, or declared by an installed package."""
    if kind not in _BACKENDS:
        for entry in metadata.entry_points(group=BACKEND_ENTRY_POINTS, name=kind):
            register_backend(kind, entry.load())
    if kind not in _BACKENDS:
        raise ConfigError(f"no backend registered for client {kind!r} (llm.register_backend, or an entry point "
                          f"in the group {BACKEND_ENTRY_POINTS!r})")
    return _BACKENDS[kind]


def _expand(text: str, alias: str, field: str) -> str:
    missing: list[str] = []

    def sub(m: re.Match) -> str:
        value = os.environ.get(m.group(1))
        if value:
            return value
        if m.group(2) is not None:
            return m.group(2)
        missing.append(m.group(1))
        return ""

    expanded = _ENV_REF.sub(sub, text)
    if missing:
        raise ConfigError(f"{alias}: {field} needs environment variable {missing[0]}, which is not set")
    return expanded


_CREDENTIAL_PARAM = re.compile(r"key|token|secret|passw|pwd|sig|auth|credential", re.IGNORECASE)
_CREDENTIALS_IN_URL = ("{alias}: the base URL {url} carries credentials (user:password@ or a key in the query); "
                       "keys come from environment variables only: put the key in one and name it in api_key_env")


def carries_credentials(url: str) -> bool:
    """Whether a URL holds user:password@ or a query parameter named like a key, token or password."""
    parts = urlsplit(url)
    if parts.username or parts.password:
        return True
    return any(_CREDENTIAL_PARAM.search(name) for name, _ in parse_qsl(parts.query, keep_blank_values=True))


def redact_url(url: str) -> str:
    """The URL without user:password@ and query string, the parts that can carry secrets."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return f"{parts.scheme}://{host}{parts.path}" if parts.scheme else url.split("?")[0]


def estimate_cost(spec: ModelSpec, input_tokens: int, output_tokens: int, *, batch: bool = False) -> float | None:
    """USD for that many tokens at the registry's prices (half for the Batch API); None if unknown.

    A model without prices on a local or private-network server costs nothing per token (0.0).
    """
    prices = token_prices(spec)
    if prices is None:
        return None
    cost = input_tokens * prices[0] + output_tokens * prices[1]
    return cost / 2 if batch else cost


def token_prices(spec: ModelSpec) -> tuple[float, float] | None:
    """USD per input and per output token; (0, 0) for simulated models and unpriced servers of one's own; else None."""
    if spec.simulated:
        return 0.0, 0.0
    if spec.price_input_per_m is None or spec.price_output_per_m is None:
        return (0.0, 0.0) if spec.is_local else None
    return spec.price_input_per_m / 1e6, spec.price_output_per_m / 1e6


@lru_cache(maxsize=8)
def _load(path: str, mtime: float) -> dict[str, ModelSpec]:
    raw: dict[str, Any] = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    entries: dict[str, Any] = raw.get("models", raw)
    registry, problems = {}, []
    for alias, fields in entries.items():
        try:
            registry[alias] = ModelSpec(alias=alias, **(fields or {}))
        except ValidationError as exc:
            problems += [f"{path}: model {alias!r}, field {'.'.join(map(str, e['loc'])) or '-'}: {e['msg']}"
                         for e in exc.errors()]
    if problems:
        raise ConfigError(problems)
    return registry


EXTRA_REGISTRY_ENV = "GAMA_MODELS"  # a YAML file of one's own models, read after configs/models.yaml


def load_registry(path: str | os.PathLike | None = None) -> dict[str, ModelSpec]:
    """Read the registry YAML (default configs/models.yaml) into alias → ModelSpec.

    With no `path`, the entries of the file named by the environment variable GAMA_MODELS (same
    format) are added, and replace entries of the same alias: one's own models without editing
    the project's file.
    """
    p = paths.resolve(path) if path else REGISTRY_PATH
    if not p.exists():
        raise ConfigError(f"model registry {p} does not exist")
    registry = dict(_load(str(p), p.stat().st_mtime))
    extra = os.environ.get(EXTRA_REGISTRY_ENV) if path is None else None
    if extra:
        own = paths.resolve(extra)
        if not own.exists():
            raise ConfigError(f"{EXTRA_REGISTRY_ENV}={extra}: the file {own} does not exist")
        registry.update(_load(str(own), own.stat().st_mtime))
    return registry


def _inline_from_string(text: str) -> dict[str, Any]:
    body = text[len(INLINE_PREFIX):]
    if "#" not in body:
        raise ConfigError(f"inline model {text!r}: expected 'openai-compatible:<base_url>#<model>'")
    base_url, rest = body.split("#", 1)
    model, *options = rest.split("&")
    spec: dict[str, Any] = {"base_url": base_url, "model": model}
    for option in options:
        key, sep, value = option.partition("=")
        if not sep:
            raise ConfigError(f"inline model {text!r}: option {option!r} is not field=value")
        spec[key] = yaml.safe_load(value) if value else None
    return spec


def resolve_model(model: str | dict[str, Any] | ModelSpec, registry: dict[str, ModelSpec] | None = None) -> ModelSpec:
    """Turn an alias, inline string, dict or ModelSpec into a ModelSpec (see module docstring)."""
    if isinstance(model, ModelSpec):
        return model
    if isinstance(model, str):
        text = model.strip()
        if text.startswith("{"):
            return resolve_model(json.loads(text), registry)
        if text.startswith(INLINE_PREFIX):
            return resolve_model(_inline_from_string(text), registry)
        registry = registry if registry is not None else load_registry()
        if text not in registry:
            close = [a for a in registry if text.lower() in a.lower() or a.lower() in text.lower()][:5]
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ConfigError(f"unknown model alias {text!r} (not in the registry{hint}); for a server not in "
                              f"the registry use 'openai-compatible:<base_url>#<model>' or a dict with "
                              f"base_url and model")
        return registry[text]
    if isinstance(model, dict):
        fields = dict(model)
        inline = "base_url" in fields and "model" in fields
        if "alias" in fields and (not inline or fields["alias"] in (registry if registry is not None
                                                                     else load_registry())):
            base = resolve_model(fields.pop("alias"), registry)
            try:
                return ModelSpec(**{**base.model_dump(), **fields})
            except ValidationError as exc:
                raise ConfigError([f"model {base.alias!r} override, field {e['loc'][0]}: {e['msg']}"
                                   for e in exc.errors()]) from None
        if not fields.get("base_url") or not fields.get("model"):
            raise ConfigError(f"inline model {model!r}: needs both 'base_url' and 'model' (or an 'alias')")
        fields.setdefault("alias", f"{INLINE_PREFIX}{fields['model']}")
        fields.setdefault("paper_name", fields["model"])
        try:
            return ModelSpec(**fields)
        except ValidationError as exc:
            raise ConfigError([f"inline model {fields['alias']!r}, field {'.'.join(map(str, e['loc'])) or '-'}: "
                               f"{e['msg']}" for e in exc.errors()]) from None
    raise ConfigError(f"cannot read a model from {type(model).__name__}: {model!r}")


def _probe(host: str, port: int, timeout: float) -> str | None:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as exc:
        return f"{type(exc).__name__}: {exc.strerror or exc}"


def check_ready(specs: Sequence[str | dict | ModelSpec] | str | dict | ModelSpec, *, probe_timeout: float = 3.0,
                registry: dict[str, ModelSpec] | None = None) -> list[ModelSpec]:
    """Raise ConfigError listing every problem at once (alias, key variable, base URL); else return the specs.

    The base URL is probed with a TCP connection (no request is sent). Sim specs are always ready.
    """
    if isinstance(specs, (str, dict, ModelSpec)):
        specs = [specs]
    problems: list[str] = []
    resolved: list[ModelSpec] = []
    targets: dict[tuple[str, int], list[str]] = {}
    for item in specs:
        try:
            spec = resolve_model(item, registry)
        except ConfigError as exc:
            problems += exc.problems
            continue
        resolved.append(spec)
        if is_local_kind(spec.client):
            continue
        if spec.api_key_env and spec.key_required and not os.environ.get(spec.api_key_env):
            problems.append(f"{spec.alias}: environment variable {spec.api_key_env} (its API key) is not set")
        elif not spec.api_key_env and spec.client == "azure":
            problems.append(f"{spec.alias}: client 'azure' needs api_key_env")
        try:
            spec.resolved_api_version()
        except ConfigError as exc:
            problems += exc.problems
        try:
            url = urlsplit(spec.resolved_base_url())
        except ConfigError as exc:
            problems += exc.problems
            continue
        if url.scheme not in ("http", "https") or not url.hostname:
            problems.append(f"{spec.alias}: base_url {redact_url(spec.base_url or '')!r} is not an http(s) URL")
            continue
        port = url.port or (443 if url.scheme == "https" else 80)
        targets.setdefault((url.hostname, port), []).append(spec.alias)
    if targets:
        with ThreadPoolExecutor(max_workers=min(16, len(targets))) as pool:
            outcomes = list(pool.map(lambda hp: _probe(hp[0], hp[1], probe_timeout), targets))
        for (host, port), outcome in zip(targets, outcomes):
            if outcome:
                problems.append(f"{', '.join(targets[(host, port)])}: base URL host {host}:{port} is unreachable "
                                f"({outcome})")
    if problems:
        raise ConfigError(problems)
    return resolved


def model_variables(spec: ModelSpec) -> dict[str, bool]:
    """The environment variables a model reads → whether it needs them (a `${VAR:-default}` or a key the server
    does not require is optional); none for a simulated model."""
    if spec.simulated:
        return {}
    found: dict[str, bool] = {}
    for text in (spec.base_url, spec.api_version):
        for match in _ENV_REF.finditer(text or ""):
            found[match.group(1)] = found.get(match.group(1), False) or match.group(2) is None
    if spec.api_key_env:
        found[spec.api_key_env] = found.get(spec.api_key_env, False) or spec.key_required
    return found


def unset_variables(specs: Sequence[ModelSpec], ignore: tuple[str, ...] = ()) -> list[str]:
    """One line per environment variable these models need that is not set, naming the models that read it."""
    needed: dict[str, list[str]] = {}
    for spec in specs:
        for var, required in model_variables(spec).items():
            if required and var not in ignore and not os.environ.get(var):
                needed.setdefault(var, []).append(spec.alias)
    return [f"environment variable {var} is not set (read by {', '.join(dict.fromkeys(aliases))})"
            for var, aliases in sorted(needed.items())]
