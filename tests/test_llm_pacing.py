"""Issue 14: rate limits without configuration, fast defaults, servers that queue (against tests/fake_openai.py)."""

from __future__ import annotations

import asyncio

import pytest

from gama_utils import llm
from gama_utils.llm import pacing
from gama_utils.llm.limits import RateLimiter

FAST = {"backoff_s": 0.05, "max_backoff_s": 0.2, "progress": False}


def ask(spec, n, prefix="q"):
    return [llm.Request(spec, [{"role": "user", "content": f"{prefix} {i}"}]) for i in range(n)]


def test_default_concurrency_is_fast():
    assert llm.client.DEFAULT_CONCURRENCY == 64 and pacing.INITIAL_CONCURRENCY == 16


def test_429_is_a_wait_not_a_failure(fake_openai, outputs):
    fake_openai.configure(retry_after=0.02)
    fake_openai.enqueue(*["429"] * 12)                               # far more than max_attempts
    result = llm.run(ask(fake_openai.spec(), 1), max_attempts=3, **FAST)[0]
    assert result.ok and result.attempts == 13 and fake_openai.received == 13


def test_a_model_that_answers_only_429s_stops_the_run_after_the_wait_limit(fake_openai, outputs):
    fake_openai.configure(p_429=1.0, retry_after=0.05)
    with pytest.raises(llm.RateLimited, match="max_rate_limit_wait_s") as caught:
        llm.run(ask(fake_openai.spec(), 5), max_rate_limit_wait_s=1.0, **FAST)
    assert all(not r.ok for r in caught.value.results)
    assert fake_openai.answered == 0


def test_frequent_429s_hold_the_model_and_cut_the_rate_to_what_was_admitted():
    pacer = pacing.Pacer(maximum=64, fixed=False, rpm=None, tpm=None)
    sent = [pacer.sent() for _ in range(30)]
    waits = [pacer.rate_limited_reply(t, 0.05, {}) for t in sent[:10]]
    assert waits == [0.05] * 10 and pacer.hold_until > sent[-1]
    asyncio.run(pacer.turn(1))                                        # the cut happens when the hold is over
    assert pacer.rate() == pytest.approx(20 * 0.97)                   # 30 sent - 10 rejected in the last second
    assert pacer.rate_cuts == 1 and pacer.source == "429"


def test_a_cut_books_again_the_requests_already_waiting_at_the_old_pace(monkeypatch):
    pacer = pacing.Pacer(maximum=64, fixed=True, rpm=None, tpm=None)
    pacer._set_rate(40.0)                                             # learned earlier: 40 a second
    booked: dict[object, float] = {}                                  # each request's last booked start
    book = RateLimiter.delay

    def recording(limiter: RateLimiter, cost: float = 1.0) -> float:
        wait = book(limiter, cost)
        booked[asyncio.current_task()] = limiter._tat - cost * limiter._interval  # the slot, not when it woke
        return wait

    monkeypatch.setattr(RateLimiter, "delay", recording)

    async def one() -> None:
        await pacer.turn(1)

    async def main() -> None:
        waiting = [asyncio.create_task(one()) for _ in range(12)]      # booked 25 ms apart
        await asyncio.sleep(0.01)
        sent = [pacer.sent() for _ in range(30)]
        for t in sent[:10]:
            pacer.rate_limited_reply(t, 0.0, {})                      # frequent 429s: 20 admitted a second
        await asyncio.gather(*waiting)

    asyncio.run(main())
    assert pacer.rate() == pytest.approx(20.0)                        # halved: a cut never goes further at once
    departures = sorted(booked.values())                              # slots, so a busy machine cannot shift them
    gaps = [b - a for a, b in zip(departures[2:], departures[3:])]
    assert len(departures) == 12 and len(gaps) == 9
    assert min(gaps) >= 1 / 20.0 - 1e-9                               # booked again at 50 ms, not the old 25 ms


def test_a_pace_that_draws_429s_again_is_cut_below_itself():
    pacer = pacing.Pacer(maximum=64, fixed=True, rpm=None, tpm=None)
    pacer._set_rate(20.0)
    pacer._drew_429 = 19.0                                            # the limit learned earlier in the run
    sent = [pacer.sent() for _ in range(20)]
    pacer.rate_limited_reply(sent[-1], 0.0, {})                       # one 429 while paced above it
    asyncio.run(pacer.turn(1))
    assert pacer.rate() < 20.0 * pacing.CUT + 1e-9 and pacer.rate_cuts == 1
    for _ in range(40):                                               # below the learned limit an isolated 429
        t = pacer.sent()                                              # (a busy provider) changes nothing
        pacer.answered(t, 0.01, 10, {})
    rate = pacer.rate()
    pacer.rate_limited_reply(pacer.sent(), 0.0, {})
    asyncio.run(pacer.turn(1))
    assert pacer.rate() == rate and pacer.rate_cuts == 1


def test_an_isolated_429_delays_only_its_own_request():
    pacer = pacing.Pacer(maximum=64, fixed=False, rpm=None, tpm=None)
    for _ in range(40):
        t = pacer.sent()
        pacer.answered(t, 0.01, 10, {})
    assert pacer.rate_limited_reply(pacer.sent(), 0.5, {}) == 0.5
    assert pacer.hold_until == 0.0 and pacer.rate() is None


def test_unconfigured_limit_is_learned_without_losing_answers(fake_openai, outputs):
    fake_openai.configure(rpm=600, rate_headers=False, latency=0.2)     # 10 a second (burst 10), no headers
    results = llm.run(ask(fake_openai.spec(), 70), **FAST)
    assert all(r.ok for r in results) and fake_openai.answered == 70
    model = results.stats["models"]["fake"]
    assert model["limit_source"] == "429" and 5 <= model["rate_per_s"] <= 12
    assert fake_openai.statuses[429] <= 0.2 * fake_openai.received


def test_rate_headers_pace_before_any_429(fake_openai, outputs):
    fake_openai.configure(rpm=1200, latency=0.05)                       # x-ratelimit-* headers on every reply
    results = llm.run(ask(fake_openai.spec(), 100), **FAST)
    assert all(r.ok for r in results) and fake_openai.statuses[429] == 0
    model = results.stats["models"]["fake"]
    assert model["limit_source"] == "headers" and model["header_rpm"] == 1200
    assert model["rate_per_s"] == pytest.approx(1200 * 0.98 / 60)


def test_a_learned_limit_is_saved_and_reused(fake_openai, outputs):
    fake_openai.configure(rpm=1200, latency=0.05)
    llm.run(ask(fake_openai.spec(), 30, "first"), **FAST)
    assert llm.Cache().learned_limit(fake_openai.spec())["rpm"] == 1200
    fake_openai.reset(api_key=fake_openai.config["api_key"], rpm=1200, rate_headers=False, latency=0.05)
    results = llm.run(ask(fake_openai.spec(), 60, "second"), concurrency=64, **FAST)
    assert all(r.ok for r in results) and fake_openai.statuses[429] == 0     # 64 at once would draw 44 429s
    assert results.stats["models"]["fake"]["limit_source"] == "saved"


def test_flat_latency_grows_the_limit_from_16_to_the_maximum_one_per_answer():
    """The growth rule on synthetic answers (no clock, no scheduling): 16 → 64 in flight, then no further."""
    pacer = pacing.Pacer(maximum=64, fixed=False, rpm=None, tpm=None)
    assert pacer.slots.limit == pacing.INITIAL_CONCURRENCY == 16
    for i in range(48):
        pacer.answered(i * 0.001, 0.2, 10, {})
    assert pacer.slots.limit == 64          # slow start: one more per answer while latency stays flat
    for i in range(48, 400):
        pacer.answered(i * 0.001, 0.2, 10, {})
    assert pacer.slots.limit == 64 and pacer.concurrency_cuts == 0


def test_a_default_run_never_has_more_than_64_in_flight(fake_openai, outputs):
    """How fast it gets there depends on the machine: benchmarks/bench_llm.py prints it."""
    fake_openai.configure(latency=0.2)
    results = llm.run(ask(fake_openai.spec(), 400), **FAST)
    assert all(r.ok for r in results) and fake_openai.answered == 400
    assert fake_openai.max_in_flight <= 64 and results.stats["models"]["fake"]["concurrency"] <= 64


def test_a_server_that_queues_is_detected_and_nothing_is_lost(fake_openai, outputs):
    fake_openai.configure(slots=1, latency=0.05)                        # one request at a time, the rest queue
    results = llm.run(ask(fake_openai.spec(), 60), **FAST)
    assert all(r.ok for r in results) and results.stats["attempts"] == 60
    model = results.stats["models"]["fake"]
    assert model["concurrency_cuts"] >= 1 and model["concurrency"] <= 4


def test_pressure_shows_in_the_progress_bar(fake_openai, outputs, capsys):
    fake_openai.configure(rpm=1200, rate_headers=False, latency=0.05)
    results = llm.run(ask(fake_openai.spec(), 80), backoff_s=0.05, progress=True)
    assert results.stats["rate_limited"] > 0
    shown = capsys.readouterr().err
    assert "in flight" in shown and "/min (429)" in shown and "429x" in shown
