"""Running requests: cache first, then async calls with pacing, retries and a budget.

`run(requests)` returns one Result per Request, in order. Local-backend models (client 'sim')
are answered in a plain loop (no network, event loop or cache); cached answers are read; the
rest is sent by Sender (below): leases so that no two runs pay for one request, per-model pacing
learned from the server (pacing.Pacer: a fast default of up to 64 in flight, rate limits from
headers or 429s, latency-based concurrency for servers that queue), 429s waited out, other
failures retried, a Budget as a hard cap. Answers are committed to the cache by a writer thread
within milliseconds of arrival, so whatever stops the run (even SIGKILL) a rerun sends only what
was never answered. Identical requests within a run are sent once. What the layer did under
pressure is in the progress bar and in `RunResults.stats`.

Sending (`Sender`, the async half of `run`): per model, workers take requests from a queue while the
Pacer lets them (pacing.py). A 429 is a wait, not a failure: the request waits for the model's hold and
its paced turn and goes again, for as long as the model keeps answering other requests; only a model that
answers nothing for `max_rate_limit_wait_s` stops the run (RateLimited), and a single request
rate-limited that long gets an error. Other transient failures (5xx, 408/409/425, timeouts, dropped
connections, truncated bodies, malformed JSON) are retried with exponential backoff and jitter, or after
Retry-After, up to `max_attempts` (tenacity). Exhausted quota/credit stops the run (QuotaExhausted), as
do 401/403/404 (ConfigError), and the Budget (BudgetExceeded) before a request that could overspend:
while other requests are in flight it waits for them to settle.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import inspect
import json
import logging
import os
import random
import re
import time
from collections import deque
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type
from tqdm.auto import tqdm

from gama_utils.llm.cache import Cache
from gama_utils.llm.classify import RETRY_STATUS, error_fields, is_quota_exhausted, is_too_large, retry_after_seconds
from gama_utils.llm.errors import BudgetExceeded, ConfigError, QuotaExhausted, RateLimited, RunStopped
from gama_utils.llm.leases import LEASE_TTL_S, Leases
from gama_utils.llm.limits import Budget
from gama_utils.llm.pacing import DEFAULT_CONCURRENCY, Pacer
from gama_utils.llm.redaction import Redactor
from gama_utils.llm.registry import (
    ModelSpec,
    backend,
    check_ready,
    is_local_kind,
    redact_url,
    resolve_model,
    token_prices,
)
from gama_utils.llm.request import Prepared, Request, Result, charged_usage, prepare, read_completion, server_id
from gama_utils.llm.transport import TransportFailure, make_transport
from gama_utils.llm.writer import CacheWriter

__all__ = ["DEFAULT_CONCURRENCY", "Job", "RunResults", "arun", "is_quota_exhausted", "retry_after_seconds", "run"]

class RunResults(list):
    """The run's Results in request order, with `.stats` (counts, tokens, retries, pacing per model, timing)."""

    stats: dict[str, Any]


class Job:
    """One call of `run`: preparation (sync), sending (Sender), outcome."""

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
            "rate_limit_wait_s": 0.0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0, "usage_estimated": 0}
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
            if is_local_kind(spec.client):
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
            network = [spec for spec in resolved.values() if not is_local_kind(spec.client)]
            try:
                check_ready(network, registry=self.registry)
            except ConfigError as exc:
                problems += exc.problems
            raise ConfigError(problems)

    def _local(self, i: int, spec: ModelSpec, request: Request) -> None:
        answer = backend(spec.client)
        start = time.perf_counter()
        out = answer(spec, request)
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
        """Send what is not cached (Sender)."""
        self.sender = Sender(self)
        await self.sender.send(pending)


def _job(requests: Iterable[Request], options: dict[str, Any]) -> Job:
    options = {**_RUN_DEFAULTS, **options}
    cache = options.pop("cache")
    default_cache = cache is None or cache is True
    if cache is None or isinstance(cache, bool):
        cache_obj = None
    else:
        cache_obj = cache if isinstance(cache, Cache) else Cache(cache)
    return Job(requests, cache=cache_obj, default_cache=default_cache, **options)


async def arun(requests: Iterable[Request], *, cache: Cache | str | os.PathLike | bool | None = None,
               concurrency: int | None = None, rpm: float | None = None, tpm: float | None = None,
               budget: Budget | None = None, progress: bool = True, desc: str = "", max_attempts: int = 8,
               backoff_s: float = 1.0, max_backoff_s: float = 60.0, max_rate_limit_wait_s: float = 1800.0,
               lease_ttl_s: float = LEASE_TTL_S, registry: dict[str, ModelSpec] | None = None) -> RunResults:
    """Async form of `run` (the same options)."""
    options = dict(locals())
    started, cpu_started = time.perf_counter(), time.process_time()
    job = _job(options.pop("requests"), options)
    try:
        pending = job.prepare()
        if pending:
            await job.send(pending)
    except BaseException:
        job.bar.close()
        raise
    return job.finish(started, cpu_started)


def run(requests: Iterable[Request], *, cache: Cache | str | os.PathLike | bool | None = None,
        concurrency: int | None = None, rpm: float | None = None, tpm: float | None = None,
        budget: Budget | None = None, progress: bool = True, desc: str = "", max_attempts: int = 8,
        backoff_s: float = 1.0, max_backoff_s: float = 60.0, max_rate_limit_wait_s: float = 1800.0,
        lease_ttl_s: float = LEASE_TTL_S, registry: dict[str, ModelSpec] | None = None) -> RunResults:
    """Answer every request (cache, then network or local backend); Results in request order.

    Options: `cache` (a Cache or a path; None or True: outputs/cache/responses.sqlite; False: none);
    `concurrency` (per model; fixed when given, else adaptive up to the spec's max_concurrency or 64);
    `rpm`, `tpm` (per-model ceilings over the registry's; without any, the limit is learned); `budget`
    (a Budget: a hard cap on requests, tokens and dollars); `progress` and `desc` (the tqdm bar);
    `max_attempts` (for errors other than 429); `backoff_s`, `max_backoff_s` (exponential backoff with
    jitter); `max_rate_limit_wait_s` (how long 429s may stall a model before the run stops);
    `lease_ttl_s` (how long another run's claim on a request is honoured); `registry` (specs by alias,
    instead of configs/models.yaml). Works inside Jupyter: when an event loop is already running, the
    requests are sent from a worker thread. Runs with only local-backend (sim) or cached requests use no
    event loop at all. Raises BudgetExceeded, QuotaExhausted, RateLimited or ConfigError when the run
    had to stop; `.results` of the first three hold what was answered, and the cache holds every answer
    received.
    """
    options = dict(locals())
    started, cpu_started = time.perf_counter(), time.process_time()
    job = _job(options.pop("requests"), options)
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


_RUN_DEFAULTS = {name: p.default for name, p in inspect.signature(run).parameters.items() if name != "requests"}


# --- sending: the async half of a run ----------------------------------------------------------------

log = logging.getLogger(__name__)
POLL_S = 0.5                      # how often requests leased to another run are looked at again
_SECRET_LIKE = re.compile(r"\b(sk|ak|key)-[A-Za-z0-9_\-*]{6,}")


class _Transient(Exception):
    def __init__(self, reason: str, retry_after: float | None = None):
        super().__init__(reason)
        self.retry_after = retry_after


class _RateLimited(_Transient):
    """A 429 that is not an exhausted quota: wait and send again."""


class _Failed(Exception):
    """This request cannot succeed (e.g. HTTP 400); recorded in its Result."""


class _NotSent(Exception):
    """The run is stopping; this request was not sent."""


class _Model:
    """One model's transport, pacer and queue of requests within a run."""

    def __init__(self, spec: ModelSpec, pacer: Pacer):
        self.spec = spec
        self.key = spec.api_key()
        self.redact = Redactor([self.key])    # the Sender gives every model the run's keys (all in use)
        self.transport = make_transport(spec)
        self.prices = token_prices(spec) or (0.0, 0.0)     # per token, once per run (a cap refuses unpriced models)
        self.pacer = pacer
        self.items: deque[Prepared] = deque()
        self.waiting = 0                      # requests leased to another run, not yet answered
        self.more = asyncio.Event()

    def scrub(self, text: str) -> str:
        """Text with the API key (in every form a server could echo it) and key-like tokens blanked out."""
        if self.key:
            text = text.replace(self.key, "***")
        return _SECRET_LIKE.sub("***", self.redact(text))


class Sender:
    """The async half of a Job: everything from the first lease to the last cache write."""

    def __init__(self, job: Job):
        self.job = job
        self.stats = job.stats
        self.budget = job.budget
        self.cache = job.cache
        self.stop: RunStopped | ConfigError | None = None
        self.models: dict[str, _Model] = {}
        self.writer: CacheWriter | None = None
        self.leases: Leases | None = None
        self.deferred: dict[str, tuple[_Model, Prepared]] = {}
        self.sleepers: set[asyncio.Task] = set()
        self.reserving = 0
        self.settled = asyncio.Event()

    # ------------------------------------------------------------------ the run
    async def send(self, pending: dict[str, Prepared]) -> None:
        """Send every pending request, per model, within the limits."""
        by_model: dict[str, list[Prepared]] = {}
        specs: dict[str, ModelSpec] = {}
        names: dict[int, str] = {}                     # one dump per spec object, not per request
        for item in pending.values():
            name = names.get(id(item.spec)) or names.setdefault(id(item.spec), item.spec.model_dump_json())
            by_model.setdefault(name, []).append(item)
            specs.setdefault(name, item.spec)
        if self.budget is not None:
            self.budget.check_priced(list(specs.values()))
        check_ready(list(specs.values()), registry=self.job.registry)
        self.models = {name: _Model(spec, self._pacer(spec)) for name, spec in specs.items()}
        redact = Redactor([model.key for model in self.models.values()])
        for model in self.models.values():
            model.redact = redact
        by_key = {item.key: (self.models[name], item) for name, items in by_model.items() for item in items}
        if self.cache is not None:
            self.leases = Leases(self.cache, self.job.lease_ttl_s)
            self._claimed(self.leases, self.leases.claim(by_key), by_key)
        else:
            for model, item in by_key.values():
                model.items.append(item)
        self.writer = CacheWriter(self.cache) if self.cache is not None else None
        tasks: set[asyncio.Task] = set()
        keeper = asyncio.create_task(self._keep(self.leases)) if self.leases is not None else None
        try:
            await asyncio.gather(*(self._dispatch(model, tasks) for model in self.models.values()))
            while tasks:
                await asyncio.gather(*list(tasks))
        finally:
            for task in [*tasks, *([keeper] if keeper else [])]:
                task.cancel()
            if self.writer is not None:
                self.writer.close()
            self._wrap_up()
            for model in self.models.values():
                await model.transport.close()

    def _pacer(self, spec: ModelSpec) -> Pacer:
        job = self.job
        rpm, tpm = job.rpm or spec.rpm, job.tpm or spec.tpm
        saved = self.cache.learned_limit(spec) if self.cache is not None and not rpm else None
        return Pacer(maximum=job.concurrency or spec.max_concurrency or DEFAULT_CONCURRENCY,
                     fixed=job.concurrency is not None, rpm=rpm, tpm=tpm, saved=saved)

    def _claimed(self, leases: Leases, claim: Any, by_key: Mapping[str, tuple[_Model, Prepared]]) -> None:
        """Queue what this run leased, take what another run answered, wait for what another run holds."""
        for key in claim.mine:
            model, item = by_key[key]
            model.items.append(item)
            if key in self.deferred:
                del self.deferred[key]
                model.waiting -= 1
                model.more.set()
        if claim.answered:
            for key, hit in leases.cache.get_many(claim.answered).items():
                model, item = by_key[key]
                self.job.fill(item, hit, count="answered_elsewhere")
                if self.deferred.pop(key, None) is not None:
                    model.waiting -= 1
                    model.more.set()
        new = {k: o for k, o in claim.taken.items() if k not in self.deferred}
        for key in new:
            model, item = by_key[key]
            self.deferred[key] = (model, item)
            model.waiting += 1
        if new:
            log.warning("%d requests are being answered by another run using %s (%s); waiting for its answers "
                        "instead of paying twice", len(new), leases.cache.path, sorted(set(new.values()))[0])
        self.stats["waiting_for_other_run"] = len(self.deferred)

    async def _keep(self, leases: Leases) -> None:
        """Renew this run's leases; look again at requests another run holds."""
        while True:
            await asyncio.sleep(POLL_S)
            if time.monotonic() - leases.renewed > leases.ttl_s / 3:
                leases.renew()
            if self.deferred:
                self._claimed(leases, leases.claim(list(self.deferred)), dict(self.deferred))

    async def _dispatch(self, model: _Model, tasks: set[asyncio.Task]) -> None:
        slots = model.pacer.slots
        while self.stop is None:
            if not model.items:
                if model.waiting <= 0:
                    return
                model.more.clear()
                await model.more.wait()
                continue
            await slots.acquire()
            if self.stop is not None or not model.items:
                slots.release()
                continue
            task = asyncio.create_task(self._worker(model))
            tasks.add(task)
            task.add_done_callback(tasks.discard)

    def _wrap_up(self) -> None:
        """Release leases, keep learned limits, put each model's pacing in the stats."""
        per_model: dict[str, Any] = {}
        for model in self.models.values():
            pacer = model.pacer
            per_model[model.spec.alias] = summary = pacer.summary()
            learned = pacer.learned()                  # rpm None: forget the saved limit (the run went past it)
            if learned is not None:
                summary["learned"] = learned
                if self.cache is not None:
                    self.cache.save_learned_limit(model.spec, learned["rpm"], learned["tpm"], learned["source"])
            for name in ("rate_cuts", "concurrency_cuts", "rate_limit_wait_s"):
                self.stats[name] = self.stats.get(name, 0) + summary[name]
        self.stats["models"] = per_model
        if self.leases is not None:
            self.leases.release()
            self.leases.cache.close()

    async def _sleep(self, seconds: float) -> None:
        task = asyncio.current_task()
        if task is None:                           # not in a task: nothing _halt could cancel
            return await asyncio.sleep(seconds)
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
            for model in self.models.values():
                model.more.set()
            self.settled.set()

    # ------------------------------------------------------------------ one request
    def _wait_for(self, exc: _Transient, failures: int) -> float:
        """Retry-After (+ up to 10%) from the server or the pacer (after a 429), else exponential backoff + jitter."""
        if exc.retry_after is not None:
            return min(exc.retry_after, 600.0) * (1.0 + 0.1 * random.random())
        job = self.job
        return min(job.max_backoff_s, job.backoff_s * 2 ** (failures - 1)) + random.uniform(0, job.backoff_s)

    def _waited_too_long(self, model: _Model, item: Prepared, since: float, attempts: int) -> bool:
        """After a 429: stop the run if the model answers nothing any more, fail the request if it alone waits on."""
        now, limit = time.monotonic(), self.job.max_rate_limit_wait_s
        if now - model.pacer.last_answer > limit:
            self._halt(RateLimited(f"{model.spec.alias}: rate-limited (HTTP 429) with no answer for {limit:.0f} s "
                                   f"(max_rate_limit_wait_s); the provider's limit may be far lower than this run "
                                   f"needs. Rerun later or set rpm."))
            return True
        if now - since > limit:
            self.job.record_error(item, f"rate-limited (HTTP 429) for {now - since:.0f} s", attempts)
            return True
        return False

    async def _worker(self, model: _Model) -> None:
        """Holding one slot, send queued requests one after another until one needs a backoff.

        Keeping the slot from one request to the next saves two event-loop passes per request; a 429
        is retried in place (the pacer makes it wait); a request that must back off gives its slot
        back and is retried by this task alone.
        """
        slots = model.pacer.slots
        holding = True
        try:
            while model.items and self.stop is None and slots.in_flight <= int(slots.limit):
                item = model.items.popleft()
                attempt, limited_since = 1, None
                while True:
                    try:
                        await self._attempt(model, item, attempt)
                        break
                    except _RateLimited as exc:
                        limited_since = limited_since or time.monotonic()
                        if self._waited_too_long(model, item, limited_since, attempt):
                            break
                        await self._sleep(self._wait_for(exc, 1))
                        attempt += 1
                        self.stats["retries"] += 1
                    except _Transient as exc:
                        holding = False
                        slots.release()
                        await self._retry(model, item, exc, attempt)
                        return
                    except _Failed as exc:
                        self.job.record_error(item, str(exc), attempt)
                        break
                    except _NotSent:
                        return
        except asyncio.CancelledError:
            pass
        finally:
            if holding:
                slots.release()

    async def _retry(self, model: _Model, item: Prepared, failure: _Transient, attempt: int) -> None:
        """Retry after a failure (tenacity: backoff or Retry-After) without holding a slot; 429s do not count."""
        failures, attempts, limited_since = 1, attempt, None

        def give_up(state: Any) -> bool:
            nonlocal failures, limited_since
            if isinstance(state.outcome.exception(), _RateLimited):
                limited_since = limited_since or time.monotonic()
                return self._waited_too_long(model, item, limited_since, attempts)
            failures += 1
            return failures >= self.job.max_attempts

        def backoff(state: RetryCallState) -> float:
            last = state.outcome.exception() if state.outcome is not None else None
            return self._wait_for(last if isinstance(last, _Transient) else failure, failures)

        try:
            if self.job.max_attempts < 2:
                raise failure
            await self._sleep(self._wait_for(failure, 1))
            retrying = AsyncRetrying(stop=give_up, reraise=True, retry=retry_if_exception_type(_Transient),
                                     wait=backoff, sleep=self._sleep)
            async for try_ in retrying:
                with try_:
                    self.stats["retries"] += 1
                    attempts += 1
                    await model.pacer.slots.acquire()
                    try:
                        await self._attempt(model, item, attempts)
                    finally:
                        model.pacer.slots.release()
        except _RateLimited:
            pass                                   # _waited_too_long recorded the error or stopped the run
        except _Transient as exc:
            self.job.record_error(item, f"gave up after {attempts} attempts: {exc}", attempts)
        except _Failed as exc:
            self.job.record_error(item, str(exc), attempts)
        except (_NotSent, asyncio.CancelledError):
            pass

    async def _reserve(self, budget: Budget, model: _Model, item: Prepared) -> float:
        """Reserve the request's worst-case cost in the Budget, waiting for requests in flight to settle."""
        cost = item.est_input_tokens * model.prices[0] + item.est_output_tokens * model.prices[1]
        while True:
            why = budget.reserve(item.est_tokens, cost)
            if why is None:
                self.reserving += 1
                return cost
            if self.reserving == 0 or why.startswith("max_requests"):
                self._halt(BudgetExceeded(f"Budget reached: {why}."))
                raise _NotSent
            self.settled.clear()
            await self.settled.wait()
            if self.stop is not None:
                raise _NotSent

    def _settle(self, budget: Budget, item: Prepared, reserved_cost: float, tokens: int, cost: float) -> None:
        budget.settle(item.est_tokens, reserved_cost, tokens, cost)
        self.reserving -= 1
        self.settled.set()

    async def _attempt(self, model: _Model, item: Prepared, attempt: int) -> None:
        if self.stop is not None:
            raise _NotSent
        pacer = model.pacer
        await pacer.turn(item.est_tokens)
        if self.stop is not None:
            raise _NotSent
        reserved_cost = await self._reserve(self.budget, model, item) if self.budget is not None else 0.0
        self.stats["attempts"] += 1
        sent_at = pacer.sent()
        start = time.perf_counter()
        try:
            try:
                reply = await model.transport.post(item.body, item.body_json)
            except TransportFailure as exc:
                self.stats["transport_errors"] += 1
                raise _Transient(model.scrub(str(exc))) from None
            latency = time.perf_counter() - start
            if reply.status == 200:
                parsed, data = self._read(reply.body, item.spec.endpoint)
                if parsed is not None:
                    self._answered(model, item, parsed, data, latency, attempt, reserved_cost, sent_at, reply.headers)
                    return
            self._classify(model, reply.status, reply.headers, reply.body, sent_at)
        except BaseException:
            if self.budget is not None:
                self._settle(self.budget, item, reserved_cost, 0, 0.0)
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

    def _classify(self, model: _Model, status: int, headers: Mapping[str, str], raw: bytes, sent_at: float) -> None:
        spec = model.spec
        error, message = error_fields(raw)
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
            if is_too_large(message):
                raise _Failed(f"HTTP 429, larger than the limit itself: {message}")
            self.stats["rate_limited"] += 1
            wait = model.pacer.rate_limited_reply(sent_at, retry_after_seconds(headers), headers)
            self.job.note()
            raise _RateLimited(f"HTTP 429: {message}", wait)
        if status >= 500 or status in RETRY_STATUS:
            self.stats["server_errors"] += 1
            raise _Transient(f"HTTP {status}: {message}", retry_after_seconds(headers))
        raise _Failed(f"HTTP {status}: {message}")

    def _answered(self, model: _Model, item: Prepared, parsed: dict[str, Any], data: dict[str, Any],
                  latency: float, attempt: int, reserved_cost: float, sent_at: float,
                  headers: Mapping[str, str]) -> None:
        result = model.redact.result(Result(key=item.key, latency_s=latency, attempts=attempt, **parsed))
        n_in, n_out, estimated = charged_usage(item, result)
        result.input_tokens, result.output_tokens, result.usage_estimated = n_in, n_out, estimated
        if estimated:
            self.stats["usage_estimated"] += 1
        if self.writer is not None:
            self.writer.add(item, result, {"response_model": result.response_model, "id": model.redact(data.get("id")),
                                           "alias": model.spec.alias, "attempts": attempt,
                                           "system_fingerprint": result.system_fingerprint,
                                           "usage_estimated": estimated})
        cost = n_in * model.prices[0] + n_out * model.prices[1]
        if self.budget is not None:
            self._settle(self.budget, item, reserved_cost, n_in + n_out, cost)
        for name, value in (("input_tokens", n_in), ("output_tokens", n_out), ("cost_usd", cost)):
            self.stats[name] += value
        model.pacer.answered(sent_at, latency, result.output_tokens, headers)
        self.job.fill(item, result, count="answered")
