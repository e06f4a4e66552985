"""Request and Result records, the request body, the cache key and the reading of an answer."""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from gama_utils.llm.registry import ModelSpec, is_local_kind, resolve_model

KEY_VERSION = "gama-llm-v2"           # v2: the server (host and path of the base URL) is part of the key
UNLIMITED_OUTPUT_TOKENS = 4096        # output tokens assumed for a request without max_tokens
USAGE_MARGIN = (1.05, 16)             # reported output tokens up to limit × 1.05 + 16 are plausible
_THINK_BLOCK = re.compile(r"<think>(.*?)</think>", re.DOTALL)
_OUTPUT_LIMITS = ("max_tokens", "max_completion_tokens")


@dataclass(slots=True)
class Request:
    """One call: chat `messages` (or a `prompt` for the completions endpoint) to one model.

    `sample` tells repeated draws of the same prompt apart (it is part of the cache key, not sent);
    `extra_body` is merged into the API body (e.g. response_format); `tag` is carried to the Result
    untouched and is not part of the cache key.
    """

    model: ModelSpec | str | dict
    messages: list[dict[str, Any]] | None = None
    prompt: str | None = None
    sample: int = 0
    extra_body: dict[str, Any] | None = None
    tag: Any = None


@dataclass(slots=True)
class Result:
    """The answer to one Request (thinking kept apart in `reasoning`), or the error that ended it."""

    key: str
    text: str | None = None
    reasoning: str | None = None
    finish_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_s: float | None = None
    cached: bool = False
    error: str | None = None
    simulated: bool = False
    alias: str | None = None
    attempts: int = 0
    tag: Any = None
    usage_estimated: bool = False
    response_model: str | None = None
    system_fingerprint: str | None = None

    @property
    def ok(self) -> bool:
        """True when the request was answered."""
        return self.error is None


@dataclass(slots=True)
class Prepared:
    """A request made concrete for one spec: the exact body sent, its key and a token estimate."""

    spec: ModelSpec
    body: dict[str, Any]
    body_json: str
    key: str
    sample: int
    server: str
    est_input_tokens: int
    est_output_tokens: int
    indices: list[int] = field(default_factory=list)

    @property
    def est_tokens(self) -> int:
        """Input estimate plus the output limit (the way providers count against a token limit)."""
        return self.est_input_tokens + self.est_output_tokens

    @property
    def output_limit(self) -> int | None:
        """The output limit the body sets (max_tokens or max_completion_tokens), or None."""
        return next((int(self.body[k]) for k in _OUTPUT_LIMITS if self.body.get(k)), None)


def transcript(messages: list[dict[str, Any]]) -> str:
    """Chat messages as a plain transcript for a base model on the completions endpoint."""
    turns = [f"{m['role'].capitalize()}: {m['content']}" for m in messages]
    return "\n\n".join(turns) + "\n\nAssistant:"


def canonical_json(obj: Any) -> str:
    """Deterministic JSON (sorted keys, no spaces, UTF-8 kept) used for keys and request bodies."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def build_body(spec: ModelSpec, request: Request) -> dict[str, Any]:
    """The API body for `request` on `spec`: model, messages/prompt, decoding, spec.extra, extra_body."""
    if spec.endpoint == "completions":
        prompt = request.prompt if request.prompt is not None else transcript(request.messages or [])
        body: dict[str, Any] = {"model": spec.model or spec.alias, "prompt": prompt}
    else:
        if request.messages is None:
            if request.prompt is None:
                raise ValueError(f"request for {spec.alias} has neither messages nor prompt")
            messages = [{"role": "user", "content": request.prompt}]
        else:
            messages = request.messages
        body = {"model": spec.model or spec.alias, "messages": messages}
    body.update(spec.decoding)
    body.update(spec.extra)
    if request.extra_body:
        body.update(request.extra_body)
    return body


def server_id(spec: ModelSpec) -> str:
    """The server a spec talks to: host[:port] and path of its base URL (no scheme, credentials or query)."""
    if is_local_kind(spec.client):
        return spec.client
    parts = urlsplit(spec.resolved_base_url())
    host = (parts.hostname or "").lower()
    if parts.port:
        host = f"{host}:{parts.port}"
    return host + parts.path.rstrip("/")


def cache_key(provider: str, endpoint: str, sample: int, body_json: str, server: str) -> str:
    """sha256 over everything that determines the answer, the server included (never the API key)."""
    material = f"{KEY_VERSION}\n{provider}\n{server}\n{endpoint}\n{sample}\n{body_json}"
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


def prepare(request: Request, spec: ModelSpec | None = None, server: str | None = None) -> Prepared:
    """Build body, key and token estimate of a request (`server`: the spec's server_id, if already known)."""
    spec = spec or resolve_model(request.model)
    body = build_body(spec, request)
    body_json = canonical_json(body)
    out_limit = next((int(body[k]) for k in _OUTPUT_LIMITS if body.get(k)), UNLIMITED_OUTPUT_TOKENS)
    server = server or server_id(spec)
    return Prepared(spec=spec, body=body, body_json=body_json,
                    key=cache_key(spec.provider, spec.endpoint, request.sample, body_json, server),
                    sample=request.sample, server=server, est_input_tokens=len(body_json.encode("utf-8")) // 3 + 8,
                    est_output_tokens=out_limit)


def split_thinking(text: str) -> tuple[str, str | None]:
    """Split '<think>…</think>answer' into (answer, thinking); a lone '</think>' closes a prompt-opened block.

    An unclosed '<think>' (the output limit was hit while thinking) sends the rest to thinking.
    """
    if "think>" not in text:
        return text, None
    thoughts = [m.strip() for m in _THINK_BLOCK.findall(text)]
    rest = _THINK_BLOCK.sub("", text)
    if "</think>" in rest:
        head, _, rest = rest.rpartition("</think>")
        thoughts.insert(0, head.replace("<think>", "").strip())
    if "<think>" in rest:
        rest, _, tail = rest.partition("<think>")
        thoughts.append(tail.strip())
    thinking = "\n\n".join(t for t in thoughts if t)
    return rest.strip(), thinking or None


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def read_completion(data: dict[str, Any], endpoint: str) -> dict[str, Any]:
    """Answer, thinking, finish_reason and token usage from a chat or completions response body.

    Raises KeyError/IndexError/TypeError when the body has no choice (the caller treats that as malformed).
    """
    choice = data["choices"][0]
    if endpoint == "completions":
        content, reasoning = choice.get("text"), None
    else:
        message = choice["message"]
        content = message.get("content")
        reasoning = message.get("reasoning_content") or message.get("reasoning")
    text, thinking = split_thinking(_content_text(content))
    if isinstance(reasoning, str) and reasoning.strip():
        thinking = reasoning.strip() if thinking is None else f"{reasoning.strip()}\n\n{thinking}"
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    model, fingerprint = data.get("model"), data.get("system_fingerprint")
    return {"text": text, "reasoning": thinking, "finish_reason": choice.get("finish_reason"),
            "input_tokens": token_count(usage.get("prompt_tokens")),
            "output_tokens": token_count(usage.get("completion_tokens")),
            "response_model": model if isinstance(model, str) else None,
            "system_fingerprint": fingerprint if isinstance(fingerprint, str) else None}


def token_count(value: Any) -> int | None:
    """A reported token count as a whole number ≥ 0; None (read as missing) for anything else (text, negative, NaN)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float) and math.isfinite(value) and value >= 0 and value.is_integer():
        return int(value)
    return None


def charged_usage(item: Prepared, result: Result) -> tuple[int, int, bool]:
    """(input, output tokens, estimated): the reported usage when plausible, else a conservative bound.

    Plausible: both counts whole numbers ≥ 0, at least one token per 64 bytes of the prompt and of the answer
    (so 0 for a real answer is not), and the output at most the request's output limit plus a margin
    (USAGE_MARGIN). Otherwise the answer is charged what its reservation assumed: the input estimate from the
    body's length (a third of its UTF-8 bytes + 8), and the output limit the request sets or, without one, the
    larger of 4,096 and the answer's UTF-8 bytes (a token is at least a byte), so spend is never under-counted.
    """
    n_in, n_out = result.input_tokens, result.output_tokens
    answer_bytes = len((result.text or "").encode("utf-8")) + len((result.reasoning or "").encode("utf-8"))
    limit = item.output_limit
    input_ok = n_in is not None and n_in >= len(item.body_json) // 64
    output_ok = n_out is not None and n_out >= (answer_bytes + 63) // 64 and \
        (limit is None or n_out <= limit * USAGE_MARGIN[0] + USAGE_MARGIN[1])
    charged_in = n_in if input_ok and n_in is not None else item.est_input_tokens
    bound_out = limit if limit is not None else max(UNLIMITED_OUTPUT_TOKENS, answer_bytes + 8)
    charged_out = n_out if output_ok and n_out is not None else bound_out
    return charged_in, charged_out, not (input_ok and output_ok)
