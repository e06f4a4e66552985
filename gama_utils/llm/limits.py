"""Client-side limits: run budget, request/token rate limiter, and a concurrency limit that can be resized."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass, field

from gama_utils.llm.errors import ConfigError
from gama_utils.llm.registry import ModelSpec, estimate_cost


@dataclass
class Budget:
    """A hard cap on what a run may spend; the request that could cross it is not sent (BudgetExceeded).

    `max_requests` counts HTTP attempts, retries included. `max_tokens` counts input + output tokens
    as reported by the server, and reserves each in-flight request's worst case (input estimate plus
    its max_tokens, or 4,096 output tokens when the request sets none) so the cap holds before the
    answers are back. Reported usage counts only when plausible (request.charged_usage); otherwise an answer
    is charged its reservation's bound, so a server that omits, negates or garbles usage cannot under-count.
    `max_cost_usd` does the same in dollars at the registry prices; a model
    without prices is refused before anything is sent. Cached answers cost nothing. A Budget object
    keeps counting across the runs it is passed to.
    """

    max_requests: int | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    requests: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    reserved_tokens: int = field(default=0, repr=False)
    reserved_cost_usd: float = field(default=0.0, repr=False)

    def check_priced(self, specs: list[ModelSpec]) -> None:
        """ConfigError naming every model a cost cap cannot be enforced on (no price), before anything is sent."""
        if self.max_cost_usd is None:
            return
        unpriced = [s for s in specs if estimate_cost(s, 0, 0) is None]
        if unpriced:
            raise ConfigError([f"{s.alias}: no price (price_input_per_m / price_output_per_m in configs/models.yaml "
                               f"or in its inline spec), so max_usd={self.max_cost_usd} cannot be enforced; add "
                               f"both prices, or set max_usd=None to send without a cost cap" for s in unpriced])

    def reserve(self, tokens: int, cost_usd: float) -> str | None:
        """Count one request about to be sent; return why not instead if it could overspend."""
        if self.max_requests is not None and self.requests + 1 > self.max_requests:
            return f"max_requests={self.max_requests} reached ({self.requests} sent)"
        if self.max_tokens is not None and self.tokens + self.reserved_tokens + tokens > self.max_tokens:
            return (f"max_tokens={self.max_tokens} would be exceeded ({self.tokens} used, {self.reserved_tokens} "
                    f"reserved by requests in flight, next request may use up to {tokens})")
        if self.max_cost_usd is not None and self.cost_usd + self.reserved_cost_usd + cost_usd > self.max_cost_usd:
            return (f"max_cost_usd={self.max_cost_usd} (max_usd) could be exceeded (${self.cost_usd:.4f} spent, "
                    f"${self.reserved_cost_usd:.4f} reserved by requests in flight, next request may cost up to "
                    f"${cost_usd:.4f})")
        self.requests += 1
        self.reserved_tokens += tokens
        self.reserved_cost_usd += cost_usd
        return None

    def settle(self, reserved_tokens: int, reserved_cost_usd: float, tokens: int, cost_usd: float) -> None:
        """Replace a request's reservation by what it actually used."""
        self.reserved_tokens -= reserved_tokens
        self.reserved_cost_usd -= reserved_cost_usd
        self.tokens += tokens
        self.cost_usd += cost_usd


class RateLimiter:
    """Requests (or tokens) per minute, spaced evenly (GCRA): no bursts that a provider would reject.

    A request costing more than the remaining allowance is let through and the next ones wait for
    the debt to be paid off, so one large request can never block forever. The rate can be changed
    while running (`per_minute = ...`) and the schedule pushed back (`postpone`).
    """

    def __init__(self, per_minute: float):
        self._tat = 0.0
        self._waited = -1e9
        self.per_minute = per_minute

    @property
    def per_minute(self) -> float:
        """The current rate."""
        return self._per_minute

    @per_minute.setter
    def per_minute(self, value: float) -> None:
        if value <= 0:
            raise ValueError(f"rate limit must be positive, got {value}")
        self._per_minute = value
        self._interval = 60.0 / value

    def delay(self, cost: float = 1.0) -> float:
        """Book `cost` units and return how long to wait before sending."""
        now = time.monotonic()
        start = max(now, self._tat)
        self._tat = start + cost * self._interval
        if start > now:
            self._waited = now
        return start - now

    def busy(self, now: float) -> bool:
        """True when a request had to wait for its turn within the last second (the rate is what limits them)."""
        return now - self._waited < 1.0

    def restart(self, at: float) -> None:
        """Forget every booking: the next request may start at monotonic time `at`."""
        self._tat = at

    def postpone(self, until: float) -> None:
        """Let nothing new start before monotonic time `until`."""
        self._tat = max(self._tat, until)

    async def acquire(self, cost: float = 1.0) -> None:
        """Wait for this request's turn."""
        wait = self.delay(cost)
        if wait > 0:
            await asyncio.sleep(wait)


class ConcurrencyLimit:
    """A semaphore whose size (`limit`, at most `maximum`) can change while requests are in flight."""

    def __init__(self, maximum: int, initial: int | None = None):
        self.maximum = max(1, int(maximum))
        self.limit = float(min(self.maximum, initial or self.maximum))
        self.in_flight = 0
        self._waiters: deque[asyncio.Future] = deque()

    async def acquire(self) -> None:
        """Take a slot, waiting while the limit is reached."""
        if self.in_flight < int(self.limit) and not self._waiters:
            self.in_flight += 1
            return
        future = asyncio.get_running_loop().create_future()
        self._waiters.append(future)
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.release()
            else:
                self._remove(future)
            raise

    def _remove(self, future: asyncio.Future) -> None:
        try:
            self._waiters.remove(future)
        except ValueError:
            pass

    def release(self) -> None:
        """Give a slot back and wake whoever may now go."""
        self.in_flight -= 1
        self._wake()

    def resize(self, limit: float) -> None:
        """Set the limit (between 1 and maximum) and wake whoever may now go."""
        self.limit = max(1.0, min(float(self.maximum), limit))
        self._wake()

    def _wake(self) -> None:
        while self._waiters and self.in_flight < int(self.limit):
            future = self._waiters.popleft()
            if not future.done():
                self.in_flight += 1
                future.set_result(None)
