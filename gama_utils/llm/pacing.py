"""Per-model pacing: how many requests may be in flight and how fast they may start, learned from the server.

Request rate. A configured rpm/tpm (registry or parameter) is a ceiling that is never exceeded.
Without one, the rate is learned:
- from rate-limit headers (x-ratelimit-limit-requests / -remaining- / -reset- and the token ones,
  as OpenAI-compatible APIs send them): the first reply sets the pace, before any 429;
- from 429s: the rejected request waits as Retry-After says, then takes its paced turn again.
  When 429s are frequent (at least 3, 10% of the requests sent in the last second counted as at
  least 24, and three standard deviations above the run's usual share of 429s, so a provider
  that answers a steady few percent 429 at any rate is not read as a limit) the
  whole model waits (one hold, so waiting requests leave one by one at the paced rate rather
  than in a herd) and, once the hold is over, the rate is cut to 97% of what the server admitted
  in the second before (never by more than half; not at all when nothing got through, then
  Retry-After rules). A pace that draws such 429s again is cut to at least 5% below itself, and
  requests already booked at the old pace book again at the new one (else they would leave at
  the old spacing and draw more 429s). An isolated 429 for a request sent above the rate that
  drew 429s earlier in the run is read as that limit too. After two seconds without a 429,
  while the rate is what holds requests back,
  it grows by 10% a second up to 90% of that admitted rate and by 1% a second beyond (AIMD on
  the rate). Other isolated 429s (a busy provider) delay only their own request;
- a busy provider is told apart from a limit: every cut is a trial, judged on the replies to the
  next 80 requests sent after it. If the share of 429s fell (a two-proportion z of at least 2.5)
  the cut met a limit, and its rate is the limit found; if not, the 429s come at any pace: the cut
  is undone (the rate restored) and the share after it joins the background share of 429s,
  estimated at paces the server admits. 429s within that background share (mean + 3 standard
  deviations) neither cut nor hold the pace, nor keep it from growing, and the whole model is held
  only for frequent 429s and only for the shortest Retry-After among them (a busy provider's long
  Retry-After delays its own request only);
- from a limit saved by an earlier run for the same provider, model and server: the run starts
  at 98% of it and keeps adapting; the saved limit is not taken as met (the pace grows past it as
  after any calm, so it is probed upward again, and paces up to it count as admitted for the
  background share). While a cut is on trial only frequent 429s cut again. A limit is saved only
  on strong evidence: announced in headers, or found by at least two cuts that each lowered the
  share of 429s; a saved limit that a run goes past without meeting it again is forgotten.

Requests in flight. A fixed `concurrency` stays fixed. Otherwise the limit starts at 16 and grows
by one per answer (doubling per round trip) up to the maximum (64 by default) while latency per
output token stays near the fastest seen; when the median latency per token of recent answers is
more than three times that (a server that queues, such as llama.cpp with one slot), the limit is
cut in proportion, at most halved each time (TCP Vegas / gradient), so requests stop piling up in
the server's queue. Afterwards it grows by one per round trip while latency is flat.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gama_utils.llm.classify import RateHeaders, rate_headers
from gama_utils.llm.limits import ConcurrencyLimit, RateLimiter

log = logging.getLogger(__name__)
DEFAULT_CONCURRENCY = 64          # the most requests in flight per model when none is given
INITIAL_CONCURRENCY = 16          # where an adaptive limit starts (slow start doubles it each round trip)
HEADER_MARGIN = 0.98              # pace at 98% of a limit the server announces
CALM_S = 2.0                      # seconds without a 429 before the rate grows again
WINDOW_S = 1.0                    # the admitted rate is measured over this window
CUT = 0.95                        # a paced rate that still draws frequent 429s is cut at least this much
FAST_GROWTH, SLOW_GROWTH = 0.10, 0.01    # rate growth per second: far below / near the rate that drew a 429
QUEUE_RATIO = 3.0                 # latency per token this many times the baseline: the server queues
FLAT_RATIO = 1.5                  # below this the server keeps up: the number in flight may grow
FREQUENT = 0.10                   # 429s for at least this share of the last second's requests: over the limit
FEW_SENT = 24                     # ... counting at least this many requests, so a few random 429s are no signal
SHARE_SPAN = 500                  # the run's usual share of 429s is averaged over about this many replies
MIN_RATE = 1 / 60                 # requests per second: never slower than one a minute
TRIAL_REPLIES = 80                # replies to requests sent after a cut that judge whether the cut helped
HELPED_Z = 2.5                    # a cut helped when the share of 429s fell by this many standard errors
ADMITTED = 1.05                   # paces up to this much above the last helpful cut's count as admitted
STRONG = 2                        # cuts that each helped before a limit learned from 429s is saved for later runs
FORGET = 1.001                    # the fastest latency per token seen is forgotten by 0.1% per answer


@dataclass
class Trial:
    """A cut of the rate on trial: the share of 429s before it, and the replies to requests sent after it."""

    since: float                      # when the cut was made
    rate: float                       # the rate before it
    share: float                      # the share of 429s among the replies before it ...
    replies: int                      # ... out of this many
    target: float                     # the rate it set
    drew: float | None                # the rate that drew 429s as known before it
    n: int = 0                        # replies to requests sent after it
    limited: int = 0                  # ... that were 429s


class Pacer:
    """One model's concurrency, request rate, token rate and 429 hold within a run."""

    def __init__(self, *, maximum: int, fixed: bool, rpm: float | None, tpm: float | None,
                 saved: Mapping[str, Any] | None = None):
        self.fixed = fixed
        self.slots = ConcurrencyLimit(maximum, None if fixed else INITIAL_CONCURRENCY)
        self.ceiling = rpm / 60.0 if rpm else None
        saved = saved or {}
        start = rpm or (saved.get("rpm") or 0) * HEADER_MARGIN
        self.requests = RateLimiter(start) if start else None
        token_rate = tpm or saved.get("tpm")
        self.tokens = RateLimiter(token_rate) if token_rate else None
        self.token_ceiling = tpm
        self.source = "configured" if rpm else ("saved" if saved.get("rpm") else None)
        self.header_rpm: float | None = None
        self.header_tpm: float | None = None
        self.hold_until = 0.0
        self.wait_s = 0.0
        self.rate_limited = 0
        self.rate_cuts = 0
        self.concurrency_cuts = 0
        self.peak_rate: float | None = None
        self.last_answer = time.monotonic()
        self._shift = 0.0
        self._pace = 0
        self._last_429 = -1e9
        self._share_429 = 0.0
        self._last_grow = 0.0
        self._last_cut = -1e9
        self._cut_due: float | None = None
        self._drew_429: float | None = None   # a saved limit is not taken as met: the run probes above it again
        self._sends: deque[float] = deque()
        self._rejected: deque[float] = deque()
        self._limited: deque[tuple[float, float]] = deque()     # (arrived, Retry-After) of the last second's 429s
        self._slow_start = not fixed
        self._latencies: deque[tuple[float, float]] = deque(maxlen=128)
        self._answers = 0
        self._last_slot_cut = -1e9
        self._ratio = 1.0
        self._floor = float("inf")
        self._seen_headers: tuple[str | None, str | None] = (None, None)
        self.background = 0.0                 # share of 429s the server answers at any pace (a busy provider)
        self.cuts_helped = 0
        self.cuts_undone = 0
        self.found: float | None = None        # requests per second admitted when the last helpful cut was made
        self._background_counts = [0.0, 0.0]   # 429s and replies at paces the server admits (at most `found`)
        self._replies: deque[tuple[float, float, bool]] = deque()   # (arrived, sent, was a 429) of recent replies
        self._trial: Trial | None = None                           # the last cut, until its replies judge it
        self._saved_rpm: float | None = saved.get("rpm") if not rpm else None
        if self._saved_rpm:
            self.found = self._saved_rpm / 60.0    # paces up to a saved limit count as admitted (background)

    # ------------------------------------------------------------------ waiting for a turn
    async def turn(self, tokens: int) -> None:
        """Wait until this model may send a request of `tokens` tokens (hold, request rate, token rate)."""
        while True:
            now = time.monotonic()
            if now < self.hold_until:
                await asyncio.sleep(self.hold_until - now)
                continue
            self._cut_when_due()
            if self.requests is None:
                break
            shift, pace = self._shift, self._pace
            wait = self.requests.delay(1.0)
            if wait > 0:
                await asyncio.sleep(wait)
                self._cut_when_due()
                if self._pace != pace:                 # the rate was cut while this request slept: book again
                    continue
                if self._shift > shift:                # a hold came while this request slept: it moves back too
                    await asyncio.sleep(self._shift - shift)
            break
        if self.tokens is not None:
            wait = self.tokens.delay(tokens)
            if wait > 0:
                await asyncio.sleep(wait)

    def _cut_when_due(self) -> None:
        """Carry out a planned cut of the rate once the hold that came with it is over."""
        if self._cut_due is not None and time.monotonic() >= self.hold_until:
            self._cut_rate(self._cut_due)

    def sent(self) -> float:
        """Note a request leaving now; returns the time."""
        now = time.monotonic()
        sends = self._sends
        sends.append(now)
        while sends[0] < now - 2 * WINDOW_S:
            sends.popleft()
        return now

    # ------------------------------------------------------------------ what came back
    def answered(self, sent_at: float, latency: float, output_tokens: int | None, headers: Mapping[str, str]) -> None:
        """An answer arrived: read the rate headers, grow the rate after calm, watch the latency."""
        now = sent_at + latency
        self.last_answer = now
        self._share_429 -= self._share_429 / SHARE_SPAN
        self._reply(now, sent_at, False)
        self._read_headers(headers, now)
        if self.requests is not None and self.requests.busy(now) and self._calm(now):
            self._grow_rate(now)
        if not self.fixed:
            self._watch_latency(sent_at, latency / ((output_tokens or 0) + 32))

    def rate_limited_reply(self, sent_at: float, retry_after: float | None, headers: Mapping[str, str]) -> float:
        """A 429 (not an exhausted quota): returns how long that request waits before its next turn.

        Frequent 429s (at least 3, and 10% of the requests sent in the last second) also hold the whole model for
        Retry-After and plan a cut of the rate; isolated ones (a busy provider) only delay their request.
        """
        now = time.monotonic()
        self.rate_limited += 1
        self._last_429 = now
        self._rejected.append(sent_at)
        self._limited.append((now, retry_after if retry_after is not None else 60.0))
        self._reply(now, sent_at, True)
        self._read_headers(headers, now)
        rate = self.rate()
        wait = min(retry_after if retry_after is not None else (1.0 / rate if rate else 1.0), 60.0)
        limited = self._limited
        while limited[0][0] < now - WINDOW_S:
            limited.popleft()
        sent = sum(1 for t in self._sends if t >= now - WINDOW_S)
        self._share_429 += (1.0 - self._share_429) / SHARE_SPAN
        expected = self._usual() * sent                             # what the usual share of 429s would give
        frequent = len(limited) >= max(3.0, FREQUENT * max(sent, FEW_SENT), expected + 3.0 * expected ** 0.5 + 1.0)
        above_learned = rate is not None and self._drew_429 is not None and rate > self._drew_429 \
            and not self._background_explains(len(limited), sent)
        # while a cut is on trial only frequent 429s cut again: isolated ones wait for the trial's verdict, which
        # tells a limit from a busy provider (else a busy provider's 429s would ratchet the pace down cut by cut)
        if frequent or (above_learned and sent_at >= self._last_cut and self._trial is None):
            log.debug("429s read as a limit (%s): %d in the last second of %d sent, rate %s, hold %.2f s",
                      "frequent" if frequent else "above the learned rate", len(limited), sent, rate, wait)
            # frequent 429s hold the whole model for the limit's own reset (the shortest Retry-After of the last
            # second's 429s), not for a busy provider's longer one; each request waits its own Retry-After
            if frequent:
                self.hold(now + min(wait, *(after for _, after in limited)), now)
            if sent_at >= self._last_cut and self._cut_due is None:
                self._cut_due = now
        return wait

    def hold(self, until: float, now: float | None = None) -> None:
        """Let no request of this model start before monotonic time `until`."""
        now = time.monotonic() if now is None else now
        added = until - max(now, self.hold_until)
        if added > 0:
            self.wait_s += added
            self._shift += added
            self.hold_until = until
            if self.requests is not None:
                self.requests.postpone(until)

    # ------------------------------------------------------------------ rate
    def rate(self) -> float | None:
        """Requests per second this model is paced at (None: not paced)."""
        return self.requests.per_minute / 60.0 if self.requests is not None else None

    def _set_rate(self, per_second: float) -> RateLimiter:
        per_second = max(MIN_RATE, per_second)
        cap = self._cap()
        if cap is not None:
            per_second = min(per_second, cap)
        if self.requests is None:
            self.requests = RateLimiter(per_second * 60.0)
            self.requests.postpone(self.hold_until)
        else:
            self.requests.per_minute = per_second * 60.0
        self.peak_rate = max(self.peak_rate or 0.0, per_second)
        return self.requests

    def _cap(self) -> float | None:
        """The highest rate allowed: the configured one, or 98% of the server's announced limit if lower."""
        if not self.header_rpm:
            return self.ceiling
        announced = self.header_rpm * HEADER_MARGIN / 60.0
        if self.ceiling is None:
            return announced
        return self.ceiling if self.ceiling * 60.0 <= self.header_rpm else announced

    def _admitted(self, end: float) -> float:
        """Requests per second the server admitted (sent and not answered 429) in the window before `end`."""
        start = end - WINDOW_S
        sent = sum(1 for t in self._sends if start <= t <= end)
        rejected = sum(1 for t in self._rejected if start <= t <= end)
        while self._rejected and self._rejected[0] < end - 2 * WINDOW_S:
            self._rejected.popleft()
        return max(0, sent - rejected) / WINDOW_S

    def _cut_rate(self, due: float) -> None:
        self._cut_due = None
        admitted = self._admitted(due)
        if admitted <= 0:
            return                                   # nothing got through: no rate to learn, Retry-After rules
        admitted += self.background * sum(1 for t in self._sends if due - WINDOW_S <= t <= due) / WINDOW_S
        current = self.rate()
        if current is None:
            current = max(admitted, sum(1 for t in self._sends if t >= due - WINDOW_S) / WINDOW_S)
        target = max(admitted * 0.97, current * 0.5)
        if self.requests is not None:                # 429s drawn at this very pace: the limit is below it
            admitted = min(admitted, current)
            target = min(target, current * CUT)
        drew_before, self._drew_429 = self._drew_429, admitted
        if target >= current:
            return
        before, replies = self._share(due - 2 * WINDOW_S, due)
        self._set_rate(target).restart(max(time.monotonic(), self.hold_until))
        self._pace += 1                              # requests booked at the old pace book again at the new one
        self.source = "429" if self.source not in ("configured", "saved") else self.source
        self.rate_cuts += 1
        self._last_cut = self._last_grow = time.monotonic()
        log.debug("cut %.2f -> %.2f/s (admitted %.2f, 429 share before %s, background %.3f)", current, target,
                  admitted, before, self.background)
        if replies:
            self._trial = Trial(since=self._last_cut, rate=current, share=before, replies=replies, target=target,
                                drew=drew_before)

    # ------------------------------------------------------------------ a busy provider or a limit?
    def _reply(self, now: float, sent_at: float, limited: bool) -> None:
        """Keep the last seconds of replies; count those of requests sent after the last cut for its trial."""
        replies = self._replies
        replies.append((now, sent_at, limited))
        while replies[0][0] < now - 4 * WINDOW_S:
            replies.popleft()
        if self.found is not None and (self.rate() or 0.0) <= self.found * ADMITTED:
            self._count_background(limited, 1)       # a pace the server admits: what 429s come now come at any pace
        trial = self._trial
        if trial is not None and sent_at >= trial.since:
            trial.n += 1
            trial.limited += int(limited)
            if trial.n >= TRIAL_REPLIES:
                self._judge_cut(trial)

    def _share(self, start: float, end: float) -> tuple[float, int]:
        """The share of 429s among the replies to requests sent between `start` and `end`, and how many replies."""
        outcomes = [limited for _, sent, limited in self._replies if start <= sent <= end]
        return (sum(outcomes) / len(outcomes) if outcomes else 0.0), len(outcomes)

    def _judge_cut(self, trial: Trial) -> None:
        """A cut after which the share of 429s fell (two-proportion z >= HELPED_Z) met a limit: the rate admitted then
        is the limit found. One after which it did not met a busy provider: it is undone (the rate restored, the
        limit it assumed forgotten) and the share after it is the background share of 429s at any pace.
        """
        self._trial = None
        before, after, n1, n2 = trial.share, trial.limited / trial.n, trial.replies, trial.n
        pooled = (before * n1 + after * n2) / (n1 + n2)
        spread = (pooled * (1.0 - pooled) * (1.0 / n1 + 1.0 / n2)) ** 0.5
        helped = spread > 0 and (before - after) / spread >= HELPED_Z
        log.debug("cut from %.2f/s judged: 429 share %.3f of %d before, %.3f of %d after: %s", trial.rate, before,
                  n1, after, n2, "helped" if helped else "undone")
        self._count_background(trial.limited, n2)       # after a cut, helpful or not, the pace is one it admits
        if helped:
            self.cuts_helped += 1
            # the limit lies between the pace that drew the 429s and the one at which they fell back
            self.found = (trial.target + trial.rate) / 2
            return
        self.cuts_undone += 1
        self._drew_429 = trial.drew                 # no limit was found there: what was known before stands
        if self.rate() is not None and trial.rate > (self.rate() or 0.0):
            self._set_rate(trial.rate).restart(max(time.monotonic(), self.hold_until))
            self._pace += 1                          # requests booked at the cut's pace book again at this one

    def _count_background(self, limited: float, replies: float) -> None:
        counts = self._background_counts
        counts[0] += limited
        counts[1] += replies
        if counts[1] >= TRIAL_REPLIES:
            self.background = (counts[0] + 1.0) / (counts[1] + 2.0)   # never 0 from a few replies (Laplace)

    def _usual(self) -> float:
        """The share of 429s this server answers as a rule: the run's average, or the background once one is known."""
        return max(self._share_429, self.background)

    def _background_explains(self, limited: int, sent: int) -> bool:
        """Whether `limited` 429s among `sent` requests are no more than the busy provider's background share."""
        expected = self.background * sent
        return limited <= expected + 3.0 * expected ** 0.5 + 0.5

    def _calm(self, now: float) -> bool:
        """No 429 for CALM_S, or no more than the background share of the replies in that time."""
        if now - self._last_429 > CALM_S:
            return True
        recent = [limited for arrived, _, limited in self._replies if arrived >= now - CALM_S]
        return self._background_explains(sum(recent), len(recent))

    def _grow_rate(self, now: float) -> None:
        if now - self._last_grow < 0.25:
            return
        elapsed = min(now - self._last_grow, 1.0)
        self._last_grow = now
        current = self.rate()
        if current is None:
            return                                   # not paced: no rate to grow
        # the rate that drew 429s was measured with the busy provider's 429s counted as refused: without them it is
        # higher by 1 / (1 - background)
        near = self._drew_429 is not None and current >= 0.9 * self._drew_429 / (1.0 - min(self.background, 0.5))
        self._set_rate(current * (1.0 + (SLOW_GROWTH if near else FAST_GROWTH) * elapsed))

    def _read_headers(self, headers: Mapping[str, str], now: float) -> None:
        seen = (headers.get("x-ratelimit-limit-requests"), headers.get("x-ratelimit-remaining-requests"))
        if seen == (None, None) and headers.get("x-ratelimit-limit-tokens") is None:
            return
        if seen == self._seen_headers and seen[1] not in ("0", None):
            return
        self._seen_headers = seen
        info = rate_headers(headers)
        if info is not None:
            self._apply_headers(info, now)

    def _apply_headers(self, info: RateHeaders, now: float) -> None:
        if info.limit_requests and info.limit_requests > 0 and info.limit_requests != self.header_rpm:
            self.header_rpm = info.limit_requests
            if self.ceiling is None or self.ceiling * 60 > self.header_rpm:
                self.source = "headers"
                self._set_rate(self.header_rpm * HEADER_MARGIN / 60.0)
        if info.limit_tokens and info.limit_tokens > 0 and info.limit_tokens != self.header_tpm:
            self.header_tpm = info.limit_tokens
            target = min(info.limit_tokens, self.token_ceiling or info.limit_tokens) * HEADER_MARGIN
            if self.tokens is None:
                self.tokens = RateLimiter(target)
            else:
                self.tokens.per_minute = target
        if info.remaining_requests is not None and info.remaining_requests < 1 and self.header_rpm:
            self.hold(now + min(info.reset_requests or 60.0 / self.header_rpm, 60.0 / self.header_rpm), now)

    # ------------------------------------------------------------------ requests in flight
    def _watch_latency(self, sent_at: float, per_token: float) -> None:
        self._floor = min(self._floor * FORGET, per_token)
        self._latencies.append((per_token, sent_at))
        self._answers += 1
        slots = self.slots
        if self._answers % max(4, int(slots.limit) // 2) == 0:
            self._judge_latency(sent_at)
        if slots.limit < slots.maximum and self._ratio < FLAT_RATIO:
            if not self._slow_start:
                slots.resize(slots.limit + 1.0 / slots.limit)
            elif per_token <= FLAT_RATIO * self._floor:
                slots.resize(slots.limit + 1.0)
            else:
                self._slow_start = False

    def _judge_latency(self, now: float) -> None:
        want = max(4, min(32, int(self.slots.limit) // 2))
        since_cut = [v for v, t in self._latencies if t >= self._last_slot_cut][-want:]
        if len(since_cut) < want or self._floor <= 0:
            return
        self._ratio = sorted(since_cut)[want // 2] / self._floor
        if self._ratio >= FLAT_RATIO:
            self._slow_start = False
        if self._ratio > QUEUE_RATIO:
            limit = self.slots.limit
            self.slots.resize(max(limit / 2.0, limit * 2.0 / self._ratio))
            self.concurrency_cuts += 1
            self._last_slot_cut = now
            self._ratio = 1.0

    # ------------------------------------------------------------------ reporting
    def learned(self) -> dict[str, Any] | None:
        """The limit worth saving for the next run (rpm, tpm, source), or None if nothing was learned.

        Announced limits (headers) are saved; a limit learned from 429s only on strong evidence: at least STRONG
        cuts that each lowered the share of 429s, the last of them too. A saved limit this run went past without
        meeting it again is returned with rpm None: forget it (`forget`), the next run starts unpaced.
        """
        if self.source == "headers" and self.header_rpm:
            return {"rpm": round(self.header_rpm, 3), "tpm": self.header_tpm, "source": "headers"}
        if self.source in ("429", "saved") and self.cuts_helped >= STRONG and self.found is not None:
            return {"rpm": round(self.found * 60.0, 3), "tpm": self.header_tpm, "source": "429"}
        if self._saved_rpm and (self.cuts_undone or (self.peak_rate or 0.0) * 60.0 > self._saved_rpm * 1.02) \
                and self.cuts_helped == 0:
            return {"rpm": None, "tpm": None, "source": "forget"}
        return None

    def summary(self) -> dict[str, Any]:
        """State for the run's stats."""
        rate = self.rate()
        return {"concurrency": int(self.slots.limit), "max_concurrency": self.slots.maximum,
                "rate_per_s": round(rate, 3) if rate else None, "limit_source": self.source,
                "header_rpm": self.header_rpm, "header_tpm": self.header_tpm, "rate_limited": self.rate_limited,
                "rate_cuts": self.rate_cuts, "cuts_helped": self.cuts_helped, "cuts_undone": self.cuts_undone,
                "background_429_share": round(self.background, 4), "concurrency_cuts": self.concurrency_cuts,
                "rate_limit_wait_s": round(self.wait_s, 3)}
