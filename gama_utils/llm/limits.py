"""Client-side limits: run budget, request/token rate limiter, and concurrency that adapts to 429s."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass, field


@dataclass
class Budget:
    """A cap on what a run may spend; the request that would cross it is not sent (BudgetExceeded).

    `max_requests` counts HTTP attempts, retries included. `max_tokens` counts input + output tokens
    as reported by the server, and reserves each in-flight request's estimate (input estimate plus
    its output limit) so the cap holds before the answers are back. `max_cost_usd` does the same
    with the registry prices (models without prices count as free, so set max_tokens for those).
    A Budget object keeps counting across the runs it is passed to.
    """

    max_requests: int | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    requests: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    reserved_tokens: int = field(default=0, repr=False)
    reserved_cost_usd: float = field(default=0.0, repr=False)

    def reserve(self, tokens: int, cost_usd: float) -> str | None:
        """Count one request about to be sent; return why not instead if it would overspend."""
        if self.max_requests is not None and self.requests + 1 > self.max_requests:
            return f"max_requests={self.max_requests} reached ({self.requests} sent)"
        if self.max_tokens is not None and self.tokens + self.reserved_tokens + tokens > self.max_tokens:
            return (f"max_tokens={self.max_tokens} would be exceeded ({self.tokens} used, {self.reserved_tokens} "
                    f"reserved by requests in flight, next request may use up to {tokens})")
        if self.max_cost_usd is not None and self.cost_usd + self.reserved_cost_usd + cost_usd > self.max_cost_usd:
            return (f"max_cost_usd={self.max_cost_usd} would be exceeded (${self.cost_usd:.4f} spent, "
                    f"${self.reserved_cost_usd:.4f} reserved, next request may cost up to ${cost_usd:.4f})")
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
    the debt to be paid off, so one large request can never block forever.
    """

    def __init__(self, per_minute: float):
        if per_minute <= 0:
            raise ValueError(f"rate limit must be positive, got {per_minute}")
        self.per_minute = per_minute
        self._interval = 60.0 / per_minute
        self._tat = 0.0

    def delay(self, cost: float = 1.0) -> float:
        """Book `cost` units and return how long to wait before sending."""
        now = time.monotonic()
        start = max(now, self._tat)
        self._tat = start + cost * self._interval
        return start - now

    async def acquire(self, cost: float = 1.0) -> None:
        """Wait for this request's turn."""
        wait = self.delay(cost)
        if wait > 0:
            await asyncio.sleep(wait)


class ConcurrencyLimit:
    """A semaphore whose size can change: fixed, or adaptive (AIMD) when no rate limit is known.

    Adaptive: when 429s make up at least `threshold` of the last `window` answers, a 429 multiplies
    the limit by `decrease` (at most once per `cooldown_s`; the window then starts afresh), so a
    server that is over its limit is backed off while isolated 429s (a busy provider, noise) are
    only retried. Every `limit` answers in a row add one slot back, up to `maximum`.
    """

    def __init__(self, maximum: int, *, adaptive: bool = False, decrease: float = 0.75, cooldown_s: float = 1.0,
                 window: int = 50, threshold: float = 0.15):
        self.maximum = max(1, int(maximum))
        self.limit = float(self.maximum)
        self.adaptive = adaptive
        self.decrease = decrease
        self.cooldown_s = cooldown_s
        self.threshold = threshold
        self.in_flight = 0
        self.cuts = 0
        self._streak = 0
        self._last_cut = -1e9
        self._recent: deque[bool] = deque(maxlen=window)
        self._recent_429 = 0
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

    def _wake(self) -> None:
        while self._waiters and self.in_flight < int(self.limit):
            future = self._waiters.popleft()
            if not future.done():
                self.in_flight += 1
                future.set_result(None)

    def _observe(self, rate_limited: bool) -> None:
        if len(self._recent) == self._recent.maxlen and self._recent[0]:
            self._recent_429 -= 1
        self._recent.append(rate_limited)
        self._recent_429 += rate_limited

    def on_success(self) -> None:
        """An answer arrived: grow back slowly (adaptive only)."""
        if not self.adaptive:
            return
        self._observe(False)
        if self.limit >= self.maximum:
            return
        self._streak += 1
        if self._streak >= self.limit:
            self._streak = 0
            self.limit = min(float(self.maximum), self.limit + 1.0)
            self._wake()

    def on_rate_limited(self) -> None:
        """A 429 arrived: cut the limit if 429s are frequent (adaptive only)."""
        if not self.adaptive:
            return
        self._observe(True)
        self._streak = 0
        now = time.monotonic()
        if now - self._last_cut < self.cooldown_s or self._recent_429 < self.threshold * max(10, len(self._recent)):
            return
        self._last_cut = now
        self._recent.clear()
        self._recent_429 = 0
        self.cuts += 1
        self.limit = max(1.0, self.limit * self.decrease)
