"""A busy provider is not a rate limit: the pacer's rules on synthetic replies (no clock, no scheduling).

Each trial feeds the Pacer a cut (429s above a learned rate) and then the replies to requests sent after it;
whether the share of 429s fell decides whether the cut stays (a limit) or is undone (a busy provider).
"""

from __future__ import annotations

import asyncio

import pytest

from gama_utils import llm
from gama_utils.llm import pacing


def paced(rate=20.0, drew=19.0, **options):
    pacer = pacing.Pacer(maximum=64, fixed=True, rpm=None, tpm=None, **options)
    pacer._set_rate(rate)
    pacer._drew_429 = drew                                   # the limit learned earlier in the run
    return pacer


def replies(pacer, ok, limited, retry_after=0.0):
    """`ok + limited` requests sent, then their replies: `ok` answers and `limited` 429s."""
    sent = [pacer.sent() for _ in range(ok + limited)]
    for t in sent[:ok]:
        pacer.answered(t, 0.01, 10, {})
    for t in sent[ok:]:
        pacer.rate_limited_reply(t, retry_after, {})


def cut(pacer, ok=16, limited=4):
    """429s above the learned rate: a cut is planned and made once its hold is over."""
    replies(pacer, ok, limited)
    assert pacer._cut_due is not None
    before = pacer.rate()
    asyncio.run(pacer.turn(1))
    assert pacer.rate() < before
    return before


def test_a_cut_after_which_the_429s_keep_coming_is_undone():
    pacer = paced()
    before = cut(pacer)                                       # 4 of 20 replies were 429s
    replies(pacer, 64, 16)                                    # after the cut: 16 of 80, the same 20%
    assert pacer.cuts_undone == 1 and pacer.cuts_helped == 0
    assert pacer.rate() == pytest.approx(before)              # the pace is restored
    assert pacer.background == pytest.approx((16 + 1) / (80 + 2))  # the busy provider's share, estimated
    assert pacer.learned() is None                            # nothing worth saving for the next run


def test_a_cut_after_which_the_429s_stop_found_the_limit():
    pacer = paced()
    before = cut(pacer)
    target = pacer.rate()
    replies(pacer, 80, 0)
    assert pacer.cuts_helped == 1 and pacer.found == pytest.approx((before + target) / 2)   # the limit is between


def judged(pacer, before, after, target):
    """A cut from 20/s to `target` judged on 50 replies before it (share `before` of 429s) and 80 after (`after`)."""
    pacer._judge_cut(pacing.Trial(since=0.0, rate=20.0, share=before, replies=50, target=target, drew=None,
                                  n=80, limited=round(80 * after)))


def test_a_learned_limit_is_saved_only_after_repeated_cuts_that_each_helped():
    pacer = paced()
    pacer.source = "429"
    judged(pacer, 0.40, 0.0, 18.0)
    assert pacer.cuts_helped == 1 and pacer.learned() is None        # one cut: not evidence enough
    judged(pacer, 0.10, 0.075, 17.0)                                  # 10% -> 7.5%: no evidence of a limit
    assert pacer.cuts_undone == 1 and pacer.learned() is None
    judged(pacer, 0.30, 0.025, 19.0)
    assert pacer.cuts_helped == 2
    assert pacer.learned() == {"rpm": (19.0 + 20.0) / 2 * 60, "tpm": None, "source": "429"}


def test_429s_within_the_background_share_neither_cut_nor_hold():
    pacer = paced()
    pacer.background = 0.05                                  # known: 5% 429s at any pace
    replies(pacer, 19, 1)                                     # one 429 in 20, above the learned rate
    assert pacer._cut_due is None and pacer.hold_until == 0.0 and pacer.rate_cuts == 0
    unknown = paced()                                         # without a background the same 429 is the limit
    replies(unknown, 19, 1)
    assert unknown._cut_due is not None


def test_frequent_429s_hold_the_model_for_the_shortest_retry_after():
    pacer = pacing.Pacer(maximum=64, fixed=False, rpm=None, tpm=None)
    sent = [pacer.sent() for _ in range(30)]
    assert pacer.rate_limited_reply(sent[0], 0.05, {}) == 0.05     # the limit's own short Retry-After ...
    before = pacing.time.monotonic()
    for t in sent[1:10]:
        assert pacer.rate_limited_reply(t, 1.0, {}) == 1.0         # ... and a busy provider's long one
    assert before < pacer.hold_until <= pacing.time.monotonic() + 0.05


def test_a_saved_limit_the_run_went_past_is_forgotten(outputs):
    pacer = pacing.Pacer(maximum=64, fixed=False, rpm=None, tpm=None, saved={"rpm": 600.0})
    assert pacer.rate() == pytest.approx(600 * 0.98 / 60)    # the run starts at the saved limit ...
    pacer._set_rate(12.5)                                     # ... and probes above it without meeting a limit
    assert pacer.learned() == {"rpm": None, "tpm": None, "source": "forget"}
    spec = llm.resolve_model({"base_url": "http://127.0.0.1:9/v1", "model": "m"})
    cache = llm.Cache()
    cache.save_learned_limit(spec, 600.0, None, "429")
    cache.save_learned_limit(spec, None, None, "forget")
    assert cache.learned_limit(spec) is None


def test_a_busy_provider_loses_nothing(fake_openai, outputs):
    fake_openai.configure(rpm=1200, rate_headers=False, latency=0.05, p_429=0.05, p_500=0.05, p_truncate=0.05,
                          retry_after=0.2, seed=3)
    requests = [llm.Request(fake_openai.spec(), [{"role": "user", "content": f"q {i}"}]) for i in range(80)]
    results = llm.run(requests, backoff_s=0.05, max_backoff_s=0.2, progress=False)
    assert all(r.ok for r in results) and len({r.text for r in results}) == 80
    assert fake_openai.faults["truncate"] > 0 and fake_openai.faults["429"] > 0


def test_isolated_429s_do_not_cut_again_while_a_cut_is_on_trial():
    pacer = paced()
    cut(pacer, ok=19, limited=1)                              # on trial: its 80 replies are not all back
    rate = pacer.rate()
    pacer._drew_429 = rate / 2                                # even far above the rate that drew 429s
    replies(pacer, 19, 1)
    assert pacer._trial is not None and pacer._cut_due is None and pacer.rate() == rate


def test_a_saved_limit_is_probed_not_taken_as_met():
    pacer = pacing.Pacer(maximum=64, fixed=False, rpm=None, tpm=None, saved={"rpm": 1200.0})
    assert pacer._drew_429 is None and pacer.found == pytest.approx(20.0) and pacer.source == "saved"
