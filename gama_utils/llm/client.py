"""Running requests: cache first, then async calls with limits, retries and a budget.

`run(requests)` returns one Result per Request, in order. Per model it keeps at most
`concurrency` requests in flight and spaces them to `rpm`/`tpm` when a limit is known (registry
or parameter); otherwise the concurrency adapts to 429s (cut when they become frequent, grown back
one slot at a time). A failed attempt is retried (tenacity) with exponential backoff and jitter,
or after Retry-After when the server sends one: 408/409/425/429, 5xx, timeouts, dropped
connections, truncated bodies and malformed JSON; after `max_attempts` the Result carries the
error and the run goes on. A 429/402 saying the quota or credit is exhausted stops the run
(QuotaExhausted), as do 401/403/404 (ConfigError: key or model name wrong), and a Budget stops it
before overspending (BudgetExceeded). Answers are committed to the cache by a writer thread within
milliseconds of arrival, so whatever stops the run (even SIGKILL) a rerun sends only what was
never answered. Identical requests within a run are sent once.

Models with a registered local backend (client 'sim') bypass the network, the event loop and the
cache: they are called in a plain loop.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import json
import os
import queue
import random
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from email.utils import parsedate_to_datetime
from typing import Any

from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt
from tqdm.auto import tqdm

from gama_utils.llm.cache import Cache
from gama_utils.llm.errors import BudgetExceeded, ConfigError, QuotaExhausted, RunStopped
from gama_utils.llm.limits import Budget, ConcurrencyLimit, RateLimiter
from gama_utils.llm.registry import ModelSpec, check_ready, estimate_cost, redact_url, resolve_model
from gama_utils.llm.request import Prepared, Request, Result, prepare, read_completion
from gama_utils.llm.transport import TransportFailure, make_transport

DEFAULT_CONCURRENCY = 16
_DEFAULT_CACHE = "default"  # outputs/cache/responses.sqlite, opened only if something must be sent
NETWORK_CLIENTS = ("openai", "azure")
Backend = Callable[[ModelSpec, Request], "Result | str"]
_BACKENDS: dict[str, Backend] = {}
_RETRY_STATUS = {408, 409, 425, 429}
_QUOTA_CODES = re.compile(r"insufficient_quota|exceeded_current_quota|billing_hard_limit|insufficient_balance|"
                          r"arrearage|quota_exhausted", re.IGNORECASE)
_QUOTA_TEXT = re.compile(r"exceeded your current quota|insufficient (quota|balance|credit|funds)|credit balance|"
                         r"out of credits|check your (plan and )?billing|account (is )?(suspended|in arrears)|"
                         r"余额不足|欠费", re.IGNORECASE)
_RETRY_HINT = re.compile(r"retry (in|after)|try again", re.IGNORECASE)
_SECRET_LIKE = re.compile(r"\b(sk|ak|key)-[A-Za-z0-9_\-*]{6,}")


def register_backend(client_kind: str, fn: Backend) -> None:
    """Make `fn(spec, request) -> Result | str` answer every request whose spec has client `client_kind`.

    The backend must be synchronous and deterministic; its results are marked simulated and not cached.
    """
    _BACKENDS[client_kind] = fn


def _backend(kind: str) -> Backend:
    if kind not in _BACKENDS and kind == "sim":
        importlib.import_module("gama_utils.sim")
    if kind not in _BACKENDS:
        raise ConfigError(f"no backend registered for client {kind!r} (llm.register_backend)")
    return _BACKENDS[kind]


class RunResults(list):
    """The run's Results in request order, with `.stats` (counts, tokens, retries, timing)."""

    stats: dict[str, Any]


class _Transient(Exception):
    def __init__(self, reason: str, retry_after: float | None = None, rate_limited: bool = False):
        super().__init__(reason)
        self.retry_after = retry_after
        self.rate_limited = rate_limited


class _Failed(Exception):
    """This request cannot succeed (e.g. HTTP 400); recorded in its Result."""


class _NotSent(Exception):
    """The run is stopping; this request was not sent."""


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from retry-after-ms / Retry-After (seconds or HTTP date); None if absent."""
    value = headers.get("retry-after-ms")
    if value:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


def _error_fields(raw: bytes) -> tuple[dict[str, Any], str]:
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return {}, raw[:300].decode("utf-8", "replace").strip()
    if isinstance(data, list) and data and isinstance(data[0], dict):
        data = data[0]
    if not isinstance(data, dict):
        return {}, str(data)[:300]
    error = data.get("error", data)
    if isinstance(error, str):
        return {"message": error}, error
    if not isinstance(error, dict):
        return {}, str(error)[:300]
    message = error.get("message") or error.get("msg") or data.get("message") or data.get("detail") or ""
    return error, str(message)


def is_quota_exhausted(status: int, headers: Mapping[str, str], error: dict[str, Any], message: str) -> bool:
    """True when a 402/429 means the account has no quota or credit left (retrying cannot help)."""
    if status == 402:
        return True
    if status != 429:
        return False
    if _QUOTA_CODES.search(f"{error.get('code') or ''} {error.get('type') or ''} {error.get('status') or ''}"):
        return True
    if retry_after_seconds(headers) is not None or _RETRY_HINT.search(message):
        return False
    return bool(_QUOTA_TEXT.search(message))


class _Model:
    """Per-model state of one run: transport, concurrency slots, rate limiters."""

    def __init__(self, spec: ModelSpec, concurrency: int | None, rpm: float | None, tpm: float | None):
        self.spec = spec
        self.key = spec.api_key()
        self.transport = make_transport(spec)
        rpm, tpm = rpm or spec.rpm, tpm or spec.tpm
        maximum = concurrency or spec.max_concurrency or DEFAULT_CONCURRENCY
        self.slots = ConcurrencyLimit(maximum, adaptive=rpm is None and tpm is None)
        self.rpm = RateLimiter(rpm) if rpm else None
        self.tpm = RateLimiter(tpm) if tpm else None

    def scrub(self, text: str) -> str:
        """Text with the API key and key-like tokens blanked out."""
        if self.key:
            text = text.replace(self.key, "***")
        return _SECRET_LIKE.sub("***", text)


class _CacheWriter:
    """Commits answers from a thread of its own, so the event loop never waits on the disk.

    Each answer is queued the moment it is read and committed within milliseconds, several per
    transaction when they arrive together; `close` waits until all are on disk.
    """

    _STOP = object()

    def __init__(self, cache: Cache):
        self.cache = cache
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._work, name="gama-llm-cache", daemon=True)
        self.thread.start()

    def add(self, item: Prepared, result: Result, meta: dict[str, Any]) -> None:
        self.queue.put((item, result, meta))

    def _work(self) -> None:
        stop = False
        while not stop:
            rows = [self.queue.get()]
            while True:
                try:
                    rows.append(self.queue.get_nowait())
                except queue.Empty:
                    break
            if rows[-1] is self._STOP:
                stop = True
                rows.pop()
            if rows and self.error is None:
                try:
                    self.cache.put_many(rows)
                except Exception as exc:  # reported by close()
                    self.error = exc
        self.cache.close()

    def close(self) -> None:
        """Wait until every queued answer is committed; re-raise a write error."""
        self.queue.put(self._STOP)
        self.thread.join()
        if self.error is not None:
            raise RuntimeError(f"could not write the response cache {self.cache.path}: {self.error}") from self.error


class _Run:
    def __init__(self, requests: Iterable[Request], *, cache: Cache | str | None, concurrency: int | None,
                 rpm: float | None, tpm: float | None, budget: Budget | None, progress: bool, desc: str,
                 max_attempts: int, backoff_s: float, max_backoff_s: float,
                 registry: dict[str, ModelSpec] | None):
        self.requests = list(requests)
        self.cache = cache
        self.concurrency, self.rpm, self.tpm = concurrency, rpm, tpm
        self.budget = budget
        self.max_attempts = max(1, max_attempts)
        self.backoff_s, self.max_backoff_s = backoff_s, max_backoff_s
        self.registry = registry
        self.results: list[Result | None] = [None] * len(self.requests)
        self.writer: _CacheWriter | None = None
        self.stop: RunStopped | ConfigError | None = None
        self.sleepers: set[asyncio.Task] = set()
        self.stats: dict[str, Any] = {
            "requests": len(self.requests), "simulated": 0, "cached": 0, "to_send": 0, "answered": 0, "errors": 0,
            "not_sent": 0, "attempts": 0, "retries": 0, "rate_limited": 0, "server_errors": 0,
            "transport_errors": 0, "malformed": 0, "concurrency_cuts": 0, "input_tokens": 0, "output_tokens": 0,
            "cost_usd": 0.0}
        self._noted = 0.0
        self.bar = tqdm(total=len(self.requests), desc=desc or "llm", unit="req", disable=not progress,
                        smoothing=0.1, mininterval=0.5, dynamic_ncols=True)

    # ------------------------------------------------------------------ preparation (synchronous)
    def _spec(self, model: Any, memo: dict[Any, ModelSpec]) -> ModelSpec:
        if isinstance(model, ModelSpec):
            return model
        token = model if isinstance(model, str) else json.dumps(model, sort_keys=True, default=str)
        if token not in memo:
            memo[token] = resolve_model(model, self.registry)
        return memo[token]

    def prepare(self) -> dict[str, Prepared]:
        """Resolve specs, answer local-backend requests, take cached answers; return what must be sent."""
        memo: dict[Any, ModelSpec] = {}
        self._resolve_all(memo)
        pending: dict[str, Prepared] = {}
        for i, request in enumerate(self.requests):
            spec = self._spec(request.model, memo)
            if spec.client not in NETWORK_CLIENTS:
                self._local(i, spec, request)
                continue
            item = prepare(request, spec)
            if item.key in pending:
                pending[item.key].indices.append(i)
            else:
                item.indices.append(i)
                pending[item.key] = item
        if self.cache is _DEFAULT_CACHE:
            self.cache = Cache() if pending else None
        if pending and self.cache is not None:
            for key, hit in self.cache.get_many(pending).items():
                item = pending.pop(key)
                self._fill(item, hit, count="cached")
        self.stats["to_send"] = len(pending)
        return pending

    def _resolve_all(self, memo: dict[Any, ModelSpec]) -> None:
        """Resolve every distinct model first, so that all unknown aliases are reported in one error."""
        problems: list[str] = []
        seen: set[Any] = set()
        resolved: dict[int, ModelSpec] = {}
        for request in self.requests:
            model = request.model
            token = id(model) if isinstance(model, (ModelSpec, dict)) else model
            if token in seen:
                continue
            seen.add(token)
            try:
                spec = self._spec(model, memo)
                resolved[id(spec)] = spec
            except ConfigError as exc:
                problems += [p for p in exc.problems if p not in problems]
        if problems:
            network = [spec for spec in resolved.values() if spec.client in NETWORK_CLIENTS]
            try:
                check_ready(network, registry=self.registry)
            except ConfigError as exc:
                problems += exc.problems
            raise ConfigError(problems)

    def _local(self, i: int, spec: ModelSpec, request: Request) -> None:
        backend = _backend(spec.client)
        start = time.perf_counter()
        out = backend(spec, request)
        result = out if isinstance(out, Result) else Result(key="", text=str(out))
        result.simulated = spec.simulated or result.simulated
        if result.latency_s is None:
            result.latency_s = time.perf_counter() - start
        result.alias = result.alias or spec.alias
        result.tag = request.tag
        if not result.key:
            result.key = prepare(request, spec).key
        self.results[i] = result
        self.stats["simulated"] += 1
        self.bar.update(1)

    def _fill(self, item: Prepared, result: Result, count: str) -> None:
        result.alias = item.spec.alias
        for n, i in enumerate(item.indices):
            one = result if n == 0 else dataclasses.replace(result)
            one.tag = self.requests[i].tag
            self.results[i] = one
        self.stats[count] += len(item.indices)
        self.bar.update(len(item.indices))

    # ------------------------------------------------------------------ sending (async)
    async def send(self, pending: dict[str, Prepared]) -> None:
        """Send every pending request, per model, within the limits."""
        by_model: dict[str, list[Prepared]] = {}
        specs: dict[str, ModelSpec] = {}
        identity: dict[int, str] = {}
        for item in pending.values():
            name = identity.get(id(item.spec))
            if name is None:
                name = identity[id(item.spec)] = item.spec.model_dump_json()
            by_model.setdefault(name, []).append(item)
            specs.setdefault(name, item.spec)
        check_ready(list(specs.values()), registry=self.registry)
        models = {k: _Model(spec, self.concurrency, self.rpm, self.tpm) for k, spec in specs.items()}
        self.writer = _CacheWriter(self.cache) if self.cache is not None else None
        tasks: set[asyncio.Task] = set()

        async def dispatch(model: _Model, items: deque[Prepared]) -> None:
            while items:
                await model.slots.acquire()
                if self.stop is not None or not items:
                    model.slots.release()
                    return
                task = asyncio.create_task(self._worker(model, items))
                tasks.add(task)
                task.add_done_callback(tasks.discard)

        try:
            await asyncio.gather(*(dispatch(models[k], deque(items)) for k, items in by_model.items()))
            while tasks:
                await asyncio.gather(*list(tasks))
        finally:
            for task in list(tasks):
                task.cancel()
            if self.writer is not None:
                self.writer.close()
            for model in models.values():
                self.stats["concurrency_cuts"] += model.slots.cuts
                await model.transport.close()

    async def _sleep(self, seconds: float) -> None:
        task = asyncio.current_task()
        self.sleepers.add(task)
        try:
            await asyncio.sleep(seconds)
        finally:
            self.sleepers.discard(task)

    def _halt(self, exc: RunStopped | ConfigError) -> None:
        if self.stop is None:
            self.stop = exc
            for task in list(self.sleepers):
                task.cancel()

    def _note(self) -> None:
        """Show retry counts next to the progress bar (at most once a second)."""
        now = time.monotonic()
        if now - self._noted >= 1.0:
            self._noted = now
            s = self.stats
            self.bar.set_postfix_str(f"429x{s['rate_limited']} 5xx/other x{s['server_errors']} "
                                     f"net x{s['transport_errors'] + s['malformed']} retries {s['retries']}",
                                     refresh=False)

    def _wait_for(self, exc: _Transient, attempt: int) -> float:
        """Retry-After when the server gave one (plus up to 10% jitter), else exponential backoff + jitter."""
        if exc.retry_after is not None:
            return min(exc.retry_after, 600.0) * (1.0 + 0.1 * random.random())
        return min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1)) + random.uniform(0, self.backoff_s)

    async def _worker(self, model: _Model, items: deque[Prepared]) -> None:
        """Holding one slot, send queued requests one after another until one needs a retry.

        Keeping the slot from one request to the next saves two event-loop passes per request; a
        request that must wait for a retry gives its slot back and is retried by this task alone.
        """
        holding = True
        try:
            while items and self.stop is None and model.slots.in_flight <= int(model.slots.limit):
                item = items.popleft()
                try:
                    await self._attempt(model, item, 1)
                    continue
                except _Transient as exc:
                    failure = exc
                except _Failed as exc:
                    self._record_error(item, str(exc), 1)
                    continue
                except _NotSent:
                    return
                holding = False
                model.slots.release()
                await self._retry(model, item, failure)
                return
        except asyncio.CancelledError:
            pass
        finally:
            if holding:
                model.slots.release()

    async def _retry(self, model: _Model, item: Prepared, failure: _Transient) -> None:
        """Retry a request (tenacity; Retry-After or exponential backoff with jitter) without holding a slot."""
        attempts = 1
        try:
            self._note()
            if self.max_attempts < 2:
                raise failure
            await self._sleep(self._wait_for(failure, 1))
            retrying = AsyncRetrying(stop=stop_after_attempt(self.max_attempts - 1), reraise=True,
                                     retry=retry_if_exception_type(_Transient),
                                     wait=lambda state: self._wait_for(state.outcome.exception(),
                                                                       state.attempt_number + 1),
                                     sleep=self._sleep)
            async for attempt in retrying:
                with attempt:
                    self.stats["retries"] += 1
                    attempts = attempt.retry_state.attempt_number + 1
                    await model.slots.acquire()
                    try:
                        await self._attempt(model, item, attempts)
                    finally:
                        model.slots.release()
        except _Transient as exc:
            self._record_error(item, f"gave up after {attempts} attempts: {exc}", attempts)
        except _Failed as exc:
            self._record_error(item, str(exc), attempts)
        except (_NotSent, asyncio.CancelledError):
            pass

    def _record_error(self, item: Prepared, message: str, attempts: int) -> None:
        self._fill(item, Result(key=item.key, error=message, attempts=attempts), count="errors")

    async def _attempt(self, model: _Model, item: Prepared, attempt: int) -> None:
        spec = model.spec
        if self.stop is not None:
            raise _NotSent
        if model.rpm is not None:
            wait = model.rpm.delay(1.0)
            if wait > 0:
                await self._sleep(wait)
        if model.tpm is not None:
            wait = model.tpm.delay(item.est_tokens)
            if wait > 0:
                await self._sleep(wait)
        if self.stop is not None:
            raise _NotSent
        reserved_cost = 0.0
        if self.budget is not None:
            reserved_cost = estimate_cost(spec, item.est_input_tokens, item.est_output_tokens) or 0.0
            why = self.budget.reserve(item.est_tokens, reserved_cost)
            if why:
                self._halt(BudgetExceeded(f"Budget reached: {why}."))
                raise _NotSent
        self.stats["attempts"] += 1
        start = time.perf_counter()
        try:
            try:
                reply = await model.transport.post(item.body, item.body_json)
            except TransportFailure as exc:
                self.stats["transport_errors"] += 1
                raise _Transient(model.scrub(str(exc))) from None
            latency = time.perf_counter() - start
            if reply.status == 200:
                parsed, data = self._read(reply.body, spec.endpoint)
                if parsed is not None:
                    self._answered(model, item, parsed, data, latency, attempt, reserved_cost)
                    return
            self._classify(model, reply.status, reply.headers, reply.body)
        except BaseException:
            if self.budget is not None:
                self.budget.settle(item.est_tokens, reserved_cost, 0, 0.0)
            raise

    def _read(self, raw: bytes, endpoint: str) -> tuple[dict[str, Any] | None, Any]:
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            self.stats["malformed"] += 1
            raise _Transient(f"malformed JSON in a 200 reply ({len(raw)} bytes)") from None
        try:
            return read_completion(data, endpoint), data
        except (KeyError, IndexError, TypeError, AttributeError):
            if isinstance(data, dict) and "error" in data:
                return None, data
            self.stats["malformed"] += 1
            raise _Transient("a 200 reply without choices") from None

    def _classify(self, model: _Model, status: int, headers: Mapping[str, str], raw: bytes) -> None:
        spec = model.spec
        error, message = _error_fields(raw)
        message = model.scrub(message)
        if status == 200:
            code = str(error.get("code") or error.get("status_code") or "")
            if code.isdigit() and 400 <= int(code) < 600:
                status = int(code)
            else:
                status = 429 if is_quota_exhausted(429, {}, error, message) else 500
        if is_quota_exhausted(status, headers, error, message):
            self._halt(QuotaExhausted(f"{spec.alias} ({spec.provider}): the provider says the quota or credit is "
                                      f"exhausted (HTTP {status}: {message!r}). Top up the account or raise its "
                                      f"limit, then rerun."))
            raise _NotSent
        if status in (401, 403):
            self._halt(ConfigError(f"{spec.alias}: the server rejected the API key from {spec.api_key_env} "
                                   f"(HTTP {status}: {message!r})"))
            raise _NotSent
        if status == 404:
            self._halt(ConfigError(f"{spec.alias}: HTTP 404 for model {spec.model!r} at "
                                   f"{redact_url(spec.resolved_base_url())}: {message!r}"))
            raise _NotSent
        if status == 429:
            self.stats["rate_limited"] += 1
            model.slots.on_rate_limited()
            raise _Transient(f"HTTP 429: {message}", retry_after_seconds(headers), rate_limited=True)
        if status >= 500 or status in _RETRY_STATUS:
            self.stats["server_errors"] += 1
            raise _Transient(f"HTTP {status}: {message}", retry_after_seconds(headers))
        raise _Failed(f"HTTP {status}: {message}")

    def _answered(self, model: _Model, item: Prepared, parsed: dict[str, Any], data: dict[str, Any],
                  latency: float, attempt: int, reserved_cost: float) -> None:
        spec = model.spec
        result = Result(key=item.key, latency_s=latency, attempts=attempt, **parsed)
        meta = {"response_model": data.get("model"), "id": data.get("id"), "alias": spec.alias,
                "attempts": attempt, "system_fingerprint": data.get("system_fingerprint")}
        if self.writer is not None:
            self.writer.add(item, result, meta)
        n_in, n_out = result.input_tokens or 0, result.output_tokens or 0
        cost = estimate_cost(spec, n_in, n_out)
        if self.budget is not None:
            self.budget.settle(item.est_tokens, reserved_cost, n_in + n_out, cost or 0.0)
        self.stats["input_tokens"] += n_in
        self.stats["output_tokens"] += n_out
        self.stats["cost_usd"] += cost or 0.0
        model.slots.on_success()
        self._fill(item, result, count="answered")

    # ------------------------------------------------------------------ outcome
    def finish(self, started: float, cpu_started: float) -> RunResults:
        self.bar.close()
        for i, result in enumerate(self.results):
            if result is None:
                self.results[i] = Result(key="", error=f"not sent: {self.stop}", tag=self.requests[i].tag)
        results = RunResults(self.results)
        self.stats["wall_s"] = time.perf_counter() - started
        self.stats["cpu_s"] = time.process_time() - cpu_started
        results.stats = self.stats
        if self.stop is not None:
            self.stats["not_sent"] = sum(1 for r in results if r.error and r.error.startswith("not sent"))
            summary = (f" {self.stats['answered']} answered in this run and {self.stats['cached']} already cached "
                       f"are in the cache; {self.stats['not_sent']} not sent. A rerun pays for nothing answered.")
            if isinstance(self.stop, BudgetExceeded):
                summary += " Raise the budget to continue."
            if isinstance(self.stop, RunStopped):
                raise type(self.stop)(str(self.stop) + summary, results)
            raise ConfigError(str(self.stop) + summary)
        return results


def _job(requests: Iterable[Request], cache: Cache | str | os.PathLike | None | bool = None,
         concurrency: int | None = None, rpm: float | None = None, tpm: float | None = None,
         budget: Budget | None = None, progress: bool = True, desc: str = "", max_attempts: int = 8,
         backoff_s: float = 1.0, max_backoff_s: float = 60.0,
         registry: dict[str, ModelSpec] | None = None) -> _Run:
    if cache is None or cache is True:
        cache_obj: Cache | str | None = _DEFAULT_CACHE
    elif cache is False:
        cache_obj = None
    else:
        cache_obj = cache if isinstance(cache, Cache) else Cache(cache)
    return _Run(requests, cache=cache_obj, concurrency=concurrency, rpm=rpm, tpm=tpm, budget=budget,
                progress=progress, desc=desc, max_attempts=max_attempts, backoff_s=backoff_s,
                max_backoff_s=max_backoff_s, registry=registry)


async def arun(requests: Iterable[Request], **kwargs: Any) -> RunResults:
    """Async form of `run` (same keyword arguments)."""
    started, cpu_started = time.perf_counter(), time.process_time()
    job = _job(requests, **kwargs)
    try:
        pending = job.prepare()
        if pending:
            await job.send(pending)
    except BaseException:
        job.bar.close()
        raise
    return job.finish(started, cpu_started)


def run(requests: Iterable[Request], **kwargs: Any) -> RunResults:
    """Answer every request (cache, then network or local backend); Results in request order.

    Keyword arguments: cache (a Cache, a path, None = outputs/cache/responses.sqlite, False = none),
    concurrency (per model), rpm, tpm (per model; override the registry), budget (a Budget),
    progress, desc, max_attempts (8), backoff_s (1.0), max_backoff_s (60), registry. Works inside
    Jupyter: when an event loop is already running, the requests are sent from a worker thread.
    Runs with only local-backend (sim) or cached requests use no event loop at all. Raises
    BudgetExceeded, QuotaExhausted or ConfigError when the run had to stop; `.results` of the first
    two hold what was answered, and the cache holds every answer received.
    """
    started, cpu_started = time.perf_counter(), time.process_time()
    job = _job(requests, **kwargs)
    try:
        pending = job.prepare()
        if pending:
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                asyncio.run(job.send(pending))
            else:
                with ThreadPoolExecutor(max_workers=1, thread_name_prefix="gama-llm") as pool:
                    pool.submit(asyncio.run, job.send(pending)).result()
    except BaseException:
        job.bar.close()
        raise
    return job.finish(started, cpu_started)
