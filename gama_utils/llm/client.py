"""Running requests: cache first, then async calls with pacing, retries and a budget.

`run(requests)` returns one Result per Request, in order. Local-backend models (client 'sim')
are answered in a plain loop (no network, event loop or cache); cached answers are read; the
rest is sent by sending.Sender: leases so that no two runs pay for one request, per-model pacing
learned from the server (pacing.Pacer: a fast default of up to 64 in flight, rate limits from
headers or 429s, latency-based concurrency for servers that queue), 429s waited out, other
failures retried, a Budget as a hard cap. Answers are committed to the cache by a writer thread
within milliseconds of arrival, so whatever stops the run (even SIGKILL) a rerun sends only what
was never answered. Identical requests within a run are sent once. What the layer did under
pressure is in the progress bar and in `RunResults.stats`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import importlib
import importlib.metadata
import json
import os
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tqdm.auto import tqdm

from gama_utils.llm.cache import Cache
from gama_utils.llm.classify import is_quota_exhausted, retry_after_seconds
from gama_utils.llm.errors import BudgetExceeded, ConfigError, RunStopped
from gama_utils.llm.leases import LEASE_TTL_S
from gama_utils.llm.limits import Budget
from gama_utils.llm.pacing import DEFAULT_CONCURRENCY
from gama_utils.llm.registry import ModelSpec, check_ready, resolve_model
from gama_utils.llm.request import Prepared, Request, Result, prepare, server_id
from gama_utils.llm.sending import Sender

__all__ = ["DEFAULT_CONCURRENCY", "Job", "RunResults", "arun", "is_quota_exhausted", "register_backend",
           "retry_after_seconds", "run"]

NETWORK_CLIENTS = ("openai", "azure")
Backend = Callable[[ModelSpec, Request], "Result | str"]
_BACKENDS: dict[str, Backend] = {}


def register_backend(client_kind: str, fn: Backend) -> None:
    """Make `fn(spec, request) -> Result | str` answer every request whose spec has client `client_kind`.

    The backend must be synchronous and deterministic; its results are marked simulated and not cached.
    """
    _BACKENDS[client_kind] = fn


BACKEND_ENTRY_POINTS = "gama_utils.llm_backends"  # installed packages name their local backends here


def _backend(kind: str) -> Backend:
    """The backend of a client kind: registered in this process, or declared by an installed package."""
    if kind not in _BACKENDS:
        for entry in importlib.metadata.entry_points(group=BACKEND_ENTRY_POINTS, name=kind):
            register_backend(kind, entry.load())
    if kind not in _BACKENDS:
        raise ConfigError(f"no backend registered for client {kind!r} (llm.register_backend, or an entry point "
                          f"in the group {BACKEND_ENTRY_POINTS!r})")
    return _BACKENDS[kind]


class RunResults(list):
    """The run's Results in request order, with `.stats` (counts, tokens, retries, pacing per model, timing)."""

    stats: dict[str, Any]


class Job:
    """One call of `run`: preparation (sync), sending (sending.Sender), outcome."""

    def __init__(self, requests: Iterable[Request], *, cache: Cache | None, default_cache: bool,
                 concurrency: int | None, rpm: float | None, tpm: float | None, budget: Budget | None,
                 progress: bool, desc: str, max_attempts: int, backoff_s: float, max_backoff_s: float,
                 max_rate_limit_wait_s: float, lease_ttl_s: float, registry: dict[str, ModelSpec] | None):
        self.requests = list(requests)
        self.cache = cache
        self.default_cache = default_cache  # open outputs/cache/responses.sqlite only if something must be sent
        self.concurrency, self.rpm, self.tpm = concurrency, rpm, tpm
        self.budget = budget
        self.max_attempts = max(1, max_attempts)
        self.backoff_s, self.max_backoff_s = backoff_s, max_backoff_s
        self.max_rate_limit_wait_s = max_rate_limit_wait_s
        self.lease_ttl_s = lease_ttl_s
        self.registry = registry
        self.results: list[Result | None] = [None] * len(self.requests)
        self.sender: Sender | None = None
        self.stats: dict[str, Any] = {
            "requests": len(self.requests), "simulated": 0, "cached": 0, "answered_elsewhere": 0, "to_send": 0,
            "answered": 0, "errors": 0, "not_sent": 0, "attempts": 0, "retries": 0, "rate_limited": 0,
            "server_errors": 0, "transport_errors": 0, "malformed": 0, "rate_cuts": 0, "concurrency_cuts": 0,
            "rate_limit_wait_s": 0.0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}
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
        """Resolve specs, answer local-backend requests, take cached answers; return what must be sent.

        The garbage collector is paused meanwhile: the loop makes ~10 objects per request and no cycles,
        and a full collection over a notebook's heap in the middle of it can triple its time.
        """
        gc_was_on = gc.isenabled()
        gc.disable()
        try:
            return self._prepare()
        finally:
            if gc_was_on:
                gc.enable()

    def _prepare(self) -> dict[str, Prepared]:
        memo: dict[Any, ModelSpec] = {}
        self._resolve_all(memo)
        pending: dict[str, Prepared] = {}
        servers: dict[int, str] = {}                # server_id per spec, worked out once per run
        for i, request in enumerate(self.requests):
            spec = self._spec(request.model, memo)
            if spec.client not in NETWORK_CLIENTS:
                self._local(i, spec, request)
                continue
            server = servers.get(id(spec)) or servers.setdefault(id(spec), server_id(spec))
            item = prepare(request, spec, server)
            if item.key in pending:
                pending[item.key].indices.append(i)
            else:
                item.indices.append(i)
                pending[item.key] = item
        if self.default_cache:
            self.cache = Cache() if pending else None
            self.default_cache = False
        if pending and self.cache is not None:
            for key, hit in self.cache.get_many(pending).items():
                item = pending.pop(key)
                self.fill(item, hit, count="cached")
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

    def fill(self, item: Prepared, result: Result, count: str) -> None:
        """Give `result` to every request of `item` and count it under `count`."""
        result.alias = item.spec.alias
        for n, i in enumerate(item.indices):
            one = result if n == 0 else dataclasses.replace(result)
            one.tag = self.requests[i].tag
            self.results[i] = one
        self.stats[count] += len(item.indices)
        self.bar.update(len(item.indices))
        if time.monotonic() - self._noted >= 1.0:
            self.note()

    def record_error(self, item: Prepared, message: str, attempts: int) -> None:
        """Give the error to every request of `item`."""
        self.fill(item, Result(key=item.key, error=message, attempts=attempts), count="errors")

    def note(self) -> None:
        """Show pacing and retries next to the progress bar (at most once a second)."""
        now = time.monotonic()
        if now - self._noted < 1.0 or self.sender is None or self.bar.disable:
            return
        self._noted = now
        s = self.stats
        parts = []
        for model in self.sender.models.values():
            pacer = model.pacer
            rate = pacer.rate()
            parts.append(f"{model.spec.alias}: {pacer.slots.in_flight}/{int(pacer.slots.limit)} in flight"
                         + (f", {60 * rate:.0f}/min ({pacer.source})" if rate else "")
                         + (f", 429x{pacer.rate_limited} waited {pacer.wait_s:.0f}s" if pacer.rate_limited else ""))
        other = s["server_errors"] + s["transport_errors"] + s["malformed"]
        if other:
            parts.append(f"5xx/net x{other}")
        if self.sender.deferred:
            parts.append(f"{len(self.sender.deferred)} with another run")
        self.bar.set_postfix_str("; ".join(parts[:4]), refresh=False)

    # ------------------------------------------------------------------ outcome
    def finish(self, started: float, cpu_started: float) -> RunResults:
        """The Results in request order; raises if the run had to stop (answers so far in `.results`)."""
        self.bar.close()
        stop = self.sender.stop if self.sender is not None else None
        for i, result in enumerate(self.results):
            if result is None:
                self.results[i] = Result(key="", error=f"not sent: {stop}", tag=self.requests[i].tag)
        results = RunResults(self.results)
        self.stats["wall_s"] = time.perf_counter() - started
        self.stats["cpu_s"] = time.process_time() - cpu_started
        results.stats = self.stats
        if stop is not None:
            self.stats["not_sent"] = sum(1 for r in results if r.error and r.error.startswith("not sent"))
            summary = (f" {self.stats['answered']} answered in this run and {self.stats['cached']} already cached "
                       f"are in the cache; {self.stats['not_sent']} not sent. A rerun pays for nothing answered.")
            if isinstance(stop, BudgetExceeded):
                summary += " Raise the budget (max_usd) to continue."
            if isinstance(stop, RunStopped):
                raise type(stop)(str(stop) + summary, results)
            raise ConfigError(str(stop) + summary)
        return results

    async def send(self, pending: dict[str, Prepared]) -> None:
        """Send what is not cached (sending.Sender)."""
        self.sender = Sender(self)
        await self.sender.send(pending)


def _job(requests: Iterable[Request], cache: Cache | str | os.PathLike | None | bool = None,
         concurrency: int | None = None, rpm: float | None = None, tpm: float | None = None,
         budget: Budget | None = None, progress: bool = True, desc: str = "", max_attempts: int = 8,
         backoff_s: float = 1.0, max_backoff_s: float = 60.0, max_rate_limit_wait_s: float = 1800.0,
         lease_ttl_s: float = LEASE_TTL_S, registry: dict[str, ModelSpec] | None = None) -> Job:
    default_cache = cache is None or cache is True
    if cache is None or isinstance(cache, bool):
        cache_obj = None
    else:
        cache_obj = cache if isinstance(cache, Cache) else Cache(cache)
    return Job(requests, cache=cache_obj, default_cache=default_cache, concurrency=concurrency, rpm=rpm, tpm=tpm,
               budget=budget, progress=progress, desc=desc, max_attempts=max_attempts, backoff_s=backoff_s,
               max_backoff_s=max_backoff_s, max_rate_limit_wait_s=max_rate_limit_wait_s, lease_ttl_s=lease_ttl_s,
               registry=registry)


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
    concurrency (per model; fixed when given, else adaptive up to the spec's max_concurrency or 64),
    rpm, tpm (per model ceilings; override the registry; without them the limit is learned),
    budget (a Budget: a hard cap), progress, desc, max_attempts (8, for errors other than 429),
    backoff_s (1.0), max_backoff_s (60), max_rate_limit_wait_s (1800: how long 429s may stall a
    model before the run stops), lease_ttl_s, registry. Works inside Jupyter: when an event loop
    is already running, the requests are sent from a worker thread. Runs with only local-backend
    (sim) or cached requests use no event loop at all. Raises BudgetExceeded, QuotaExhausted,
    RateLimited or ConfigError when the run had to stop; `.results` of the first three hold what
    was answered, and the cache holds every answer received.
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
