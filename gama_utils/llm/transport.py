"""HTTP transports: send one API body, return (status, headers, raw body); no retries here.

A registered Provider's kind (registry.Provider) goes through `ProviderTransport`: aiohttp with the
provider's URL and headers, the body translated on the way out and a successful reply translated into an
OpenAI chat completion on the way back, so everything after the transport reads one shape.
Two transports speak the OpenAI wire protocol itself:
- 'aiohttp' (default for OpenAI-compatible servers): one pooled aiohttp session per model; about
  0.4 ms of CPU per request, which keeps 64 concurrent requests at >95% of ideal throughput.
- 'sdk' (default for Azure): the openai package's AsyncOpenAI / AsyncAzureOpenAI with its own
  retries off; about 2.5-4 ms of CPU per request (see benchmarks/bench_llm.py).
The API key is read from the environment when a transport is made and lives only in its headers.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
from yarl import URL

from gama_utils.llm.registry import ModelSpec, Provider, bearer_headers, provider

_PATHS = {"chat": "/chat/completions", "completions": "/completions"}


@dataclass(slots=True)
class Reply:
    """What came back: HTTP status, headers and the raw body."""

    status: int
    headers: Mapping[str, str]
    body: bytes


class TransportFailure(Exception):
    """No complete HTTP reply: timeout, refused or dropped connection, truncated body."""


def openai_endpoint(spec: ModelSpec) -> tuple[str, dict[str, str]]:
    """The URL and headers of an OpenAI-compatible server (Bearer key) or an Azure deployment (api-key header)."""
    base, key = spec.resolved_base_url(), spec.api_key()
    if spec.client != "azure":
        return base + _PATHS[spec.endpoint], bearer_headers(spec, key)
    url = f"{base}/openai/deployments/{spec.model}{_PATHS[spec.endpoint]}?api-version={spec.resolved_api_version()}"
    return url, {**bearer_headers(spec, None), **({"api-key": key} if key else {})}


class AiohttpTransport:
    """POSTs to one URL with fixed headers over a pooled aiohttp session (see `openai_endpoint`)."""

    def __init__(self, spec: ModelSpec, url: str, headers: dict[str, str]):
        self._url = URL(url)                     # parsed once, not per request
        self._headers = headers
        self._timeout = aiohttp.ClientTimeout(total=spec.timeout_s, sock_connect=min(30.0, spec.timeout_s))
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300, keepalive_timeout=30)
        self._session = aiohttp.ClientSession(connector=connector, headers=self._headers, timeout=self._timeout,
                                              skip_auto_headers=("User-Agent",), cookie_jar=aiohttp.DummyCookieJar())
        return self._session

    async def post(self, body: dict[str, Any], body_json: str) -> Reply:
        """POST the body; TransportFailure if no complete reply arrives."""
        session = self._session or self._open()
        try:
            async with session.post(self._url, data=body_json.encode("utf-8")) as response:
                return Reply(response.status, response.headers, await response.read())
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
            raise TransportFailure(_describe(exc)) from None

    async def close(self) -> None:
        """Close the session."""
        if self._session is not None:
            await self._session.close()
            self._session = None


class SdkTransport:
    """The openai package's async client (AsyncAzureOpenAI for client 'azure'), retries off."""

    def __init__(self, spec: ModelSpec):
        import openai

        key = spec.api_key() or "EMPTY"
        self._client: openai.AsyncOpenAI
        if spec.client == "azure":
            self._client = openai.AsyncAzureOpenAI(azure_endpoint=spec.resolved_base_url(), api_key=key,
                                                   api_version=spec.resolved_api_version(), max_retries=0,
                                                   timeout=spec.timeout_s)
        else:
            self._client = openai.AsyncOpenAI(base_url=spec.resolved_base_url(), api_key=key, max_retries=0,
                                              timeout=spec.timeout_s)
        self._path = _PATHS[spec.endpoint]

    async def post(self, body: dict[str, Any], body_json: str) -> Reply:
        """POST through the SDK; HTTP errors come back as a Reply, not as exceptions."""
        import httpx2
        import openai

        try:
            response = await self._client.post(self._path, body=body, cast_to=httpx2.Response)
        except openai.APIStatusError as exc:
            return Reply(exc.status_code, exc.response.headers, exc.response.content)
        except openai.APIConnectionError as exc:
            raise TransportFailure(_describe(exc.__cause__ or exc)) from None
        return Reply(response.status_code, response.headers, response.content)

    async def close(self) -> None:
        """Close the SDK client."""
        await self._client.close()


class ProviderTransport:
    """A registered Provider's API over aiohttp: its request shape out, an OpenAI chat completion back."""

    def __init__(self, spec: ModelSpec, found: Provider):
        self._spec = spec
        self._provider = found
        self._http = AiohttpTransport(spec, found.url(spec), found.headers(spec, spec.api_key()))

    async def post(self, body: dict[str, Any], body_json: str) -> Reply:
        """POST the provider's form of the body; a 2xx reply comes back as an OpenAI chat completion."""
        outgoing = self._provider.request(self._spec, body)
        reply = await self._http.post(outgoing, json.dumps(outgoing))
        if not 200 <= reply.status < 300:
            return reply
        try:
            data = json.loads(reply.body)
        except ValueError:
            return reply                         # read as malformed JSON downstream, and retried
        completion = self._provider.response(self._spec, data)
        return Reply(reply.status, reply.headers, json.dumps(completion).encode("utf-8"))

    async def close(self) -> None:
        """Close the session."""
        await self._http.close()


def _describe(exc: BaseException) -> str:
    if isinstance(exc, asyncio.TimeoutError) or "Timeout" in type(exc).__name__:
        return "timeout"
    text = str(exc).split("\n")[0][:200]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def make_transport(spec: ModelSpec) -> AiohttpTransport | SdkTransport | ProviderTransport:
    """The transport the spec asks for: its kind's Provider, or the OpenAI protocol over the SDK or aiohttp."""
    found = provider(spec.client)
    if found is not None:
        return ProviderTransport(spec, found)
    return SdkTransport(spec) if spec.transport_kind == "sdk" else AiohttpTransport(spec, *openai_endpoint(spec))
