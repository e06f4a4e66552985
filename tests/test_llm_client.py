"""The async client against the local fake server: retries, limits, budget, stops, backends, secrecy."""

from __future__ import annotations

import asyncio
import time

import pytest

from gama_utils import llm
from gama_utils.llm import client as llm_client
from gama_utils.llm import registry

FAST = {"backoff_s": 0.05, "max_backoff_s": 0.2, "progress": False}


def ask(spec, n, prefix="q"):
    return [llm.Request(spec, [{"role": "user", "content": f"{prefix} {i}"}], tag={"i": i}) for i in range(n)]


def test_results_in_order_with_usage_and_latency(fake_openai, outputs):
    fake_openai.configure(latency=0.05)
    results = llm.run(ask(fake_openai.spec(), 12), **FAST)
    assert [r.text for r in results] == [f"Answer to: q {i}" for i in range(12)]
    assert [r.tag["i"] for r in results] == list(range(12))
    for r in results:
        assert r.finish_reason == "stop" and r.input_tokens > 0 and r.output_tokens > 0
        assert r.latency_s >= 0.05 and not r.cached and r.error is None and r.attempts == 1
    assert fake_openai.received == 12 and fake_openai.auth_headers_seen == 12


def test_transient_faults_are_retried_until_answered(fake_openai, outputs):
    spec = fake_openai.spec(timeout_s=1.5)
    fake_openai.configure(hang_s=4.0, retry_after=1.0)
    fake_openai.enqueue("500", "503", "drop", "truncate", "malformed", "timeout")
    results = llm.run(ask(spec, 1), **FAST)
    assert results[0].text == "Answer to: q 0" and results[0].attempts == 7
    assert fake_openai.received == 7 and results.stats["retries"] == 6
    assert results.stats["transport_errors"] == 3 and results.stats["malformed"] == 1


def test_429_waits_for_retry_after(fake_openai, outputs):
    fake_openai.configure(retry_after=1.0)
    fake_openai.enqueue("429")
    result = llm.run(ask(fake_openai.spec(), 1), **FAST)[0]
    assert result.ok and result.attempts == 2
    first, second = fake_openai.arrivals
    assert second - first >= 1.0                      # Retry-After: 1, never earlier


def test_gives_up_after_max_attempts_and_the_run_goes_on(fake_openai, outputs):
    fake_openai.fail_when("q 0", "500")
    results = llm.run(ask(fake_openai.spec(max_concurrency=1), 3), max_attempts=3, **FAST)
    assert results[0].error.startswith("gave up after 3 attempts: HTTP 500")
    assert [r.ok for r in results[1:]] == [True, True]
    assert fake_openai.received == 5


def test_bad_request_is_recorded_not_retried(fake_openai, outputs):
    fake_openai.enqueue("400")
    results = llm.run(ask(fake_openai.spec(max_concurrency=1), 2), **FAST)
    fake_openai.script.clear()
    assert results[0].error.startswith("HTTP 400") and results[1].ok
    assert fake_openai.received == 2
    rerun = llm.run(ask(fake_openai.spec(max_concurrency=1), 2), **FAST)
    assert rerun[0].ok and not rerun[0].cached and rerun[1].cached       # errors are not cached


def test_exhausted_quota_stops_the_run_and_keeps_what_was_answered(fake_openai, outputs):
    fake_openai.configure(quota_after=3)
    with pytest.raises(llm.QuotaExhausted, match="quota or credit is exhausted") as caught:
        llm.run(ask(fake_openai.spec(max_concurrency=1), 10), **FAST)
    assert "3 answered" in str(caught.value)
    assert fake_openai.received == 4                                     # the quota 429 is not retried
    assert sum(r.ok for r in caught.value.results) == 3
    assert len(llm.Cache()) == 3


def test_rejected_key_stops_with_the_variable_name_not_the_key(fake_openai, outputs, monkeypatch):
    monkeypatch.setenv("FAKE_OPENAI_KEY", "key-wrong-0123456789abcdef")
    with pytest.raises(llm.ConfigError, match="FAKE_OPENAI_KEY") as caught:
        llm.run(ask(fake_openai.spec(max_concurrency=1), 5), **FAST)
    assert "key-wrong" not in str(caught.value)
    assert fake_openai.received == 1


def test_budget_stops_before_overspending(fake_openai, outputs):
    spec = fake_openai.spec(max_concurrency=2)
    budget = llm.Budget(max_requests=5)
    with pytest.raises(llm.BudgetExceeded, match="max_requests=5") as caught:
        llm.run(ask(spec, 12), budget=budget, **FAST)
    assert fake_openai.received == 5 and budget.requests == 5
    assert sum(r.ok for r in caught.value.results) == 5 and len(llm.Cache()) == 5
    results = llm.run(ask(spec, 12), budget=llm.Budget(max_requests=7), **FAST)
    assert all(r.ok for r in results) and fake_openai.received == 12


def test_token_budget_reserves_the_worst_case_of_the_next_request(fake_openai, outputs):
    spec = fake_openai.spec(max_concurrency=1, decoding={"max_tokens": 100})
    worst = llm.prepare(ask(spec, 1)[0]).est_tokens          # input estimate + max_tokens
    used = (36 // 4 + 1) + (14 // 4 + 1)                      # fake server: len(messages JSON)/4+1, len(answer)/4+1
    budget = llm.Budget(max_tokens=5 * used + worst)          # the 7th request could overspend after 6 answers
    with pytest.raises(llm.BudgetExceeded, match="max_tokens"):
        llm.run(ask(spec, 10), budget=budget, **FAST)
    assert fake_openai.received == 6
    assert budget.tokens == 6 * used and budget.reserved_tokens == 0


def test_concurrency_is_bounded_per_model(fake_openai, outputs):
    fake_openai.configure(latency=0.15)
    llm.run(ask(fake_openai.spec(), 24), concurrency=4, **FAST)
    assert fake_openai.max_in_flight <= 4                           # without the bound: up to 24 at once


def test_rate_limiter_spaces_requests(fake_openai, outputs):
    llm.run(ask(fake_openai.spec(), 11), rpm=600, **FAST)          # 10 per second -> 10 gaps of 0.1 s
    arrivals = fake_openai.arrivals
    assert arrivals[-1] - arrivals[0] >= 0.8                       # unlimited: all 11 within milliseconds
    tokens = fake_openai.spec(decoding={"max_tokens": 50})
    cost = llm.prepare(ask(tokens, 1, "t")[0]).est_tokens
    fake_openai.reset(api_key=fake_openai.config["api_key"])
    llm.run(ask(tokens, 4, "t"), tpm=cost * 60 * 4, **FAST)        # 4 requests' worth per second
    assert fake_openai.arrivals[-1] - fake_openai.arrivals[0] >= 0.6


def test_server_limit_is_met_with_few_429s_when_configured(fake_openai, outputs):
    fake_openai.configure(rpm=1200, retry_after=1.0)                 # 20 per second, burst 20
    results = llm.run(ask(fake_openai.spec(), 40), rpm=1200, concurrency=16, **FAST)
    assert all(r.ok for r in results)
    assert fake_openai.statuses[429] <= 2


def test_identical_requests_are_sent_once(fake_openai, outputs):
    spec = fake_openai.spec()
    requests = ask(spec, 3) + ask(spec, 3)
    results = llm.run(requests, **FAST)
    assert fake_openai.received == 3
    assert [r.text for r in results[:3]] == [r.text for r in results[3:]]
    assert [r.tag["i"] for r in results] == [0, 1, 2, 0, 1, 2]


def test_run_works_inside_a_running_event_loop(fake_openai, outputs):
    async def notebook_cell():
        return llm.run(ask(fake_openai.spec(), 3), **FAST)

    results = asyncio.run(notebook_cell())
    assert [r.text for r in results] == ["Answer to: q 0", "Answer to: q 1", "Answer to: q 2"]


def test_azure_through_the_sdk_and_aiohttp(fake_openai, outputs):
    azure = llm.resolve_model({"alias": "az", "client": "azure", "base_url": fake_openai.azure_endpoint,
                               "model": "my-deployment", "api_key_env": "FAKE_OPENAI_KEY",
                               "api_version": "2025-04-01-preview"})
    assert azure.transport_kind == "sdk"
    for spec in (azure, azure.model_copy(update={"transport": "aiohttp"})):
        result = llm.run(ask(spec, 1, spec.transport_kind), cache=False, **FAST)[0]
        assert result.text == f"Answer to: {spec.transport_kind} 0"
    assert fake_openai.models["my-deployment"] == 2 and fake_openai.auth_headers_seen == 2


def test_openai_sdk_transport_retries_the_same_way(fake_openai, outputs):
    spec = fake_openai.spec(transport="sdk")
    fake_openai.enqueue("500", "malformed")
    result = llm.run(ask(spec, 1), **FAST)[0]
    assert result.ok and result.attempts == 3


def test_local_backend_bypasses_network_and_cache(fake_openai, outputs, monkeypatch):
    calls = []

    def backend(spec, request):
        calls.append(spec.paper_name)
        return f"simulated answer {request.sample}"

    monkeypatch.setitem(registry._BACKENDS, "sim", backend)
    spec = llm.resolve_model("sim/GPT-5.4")
    requests = [llm.Request(spec, [{"role": "user", "content": f"scenario {i % 50}"}], sample=i) for i in range(50_000)]
    started = time.process_time()
    results = llm.run(requests, progress=False)
    overhead = time.process_time() - started
    assert len(results) == 50_000 and results[7].text == "simulated answer 7"
    assert all(r.simulated and not r.cached for r in results[:100])
    assert len(set(calls)) == 1 and calls[0] == "GPT-5.4"
    assert fake_openai.received == 0 and not (outputs / "cache" / "responses.sqlite").exists()
    assert overhead < 60          # "a few seconds" is the target; the bound only guards against per-call asyncio


def test_api_key_is_written_nowhere(fake_openai, outputs, tmp_path):
    from conftest import FAKE_KEY

    spec = fake_openai.spec()
    fake_openai.enqueue("429", "500", "400")
    fake_openai.configure(retry_after=1.0)
    results = llm.run(ask(spec, 6), **FAST)
    llm.batch.run_batch(ask(spec, 4, "batch"), cache=llm.Cache(), poll_s=0.05, progress=False)
    assert any(r.error for r in results)
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "responses.sqlite" for p in files) and any(p.suffix == ".jsonl" for p in files)
    for path in files:
        assert FAKE_KEY.encode() not in path.read_bytes(), path
    assert all(FAKE_KEY not in (r.error or "") for r in results)


def test_backoff_grows_exponentially_with_jitter_and_retry_after_wins():
    sender = llm_client.Sender(llm_client._job([], dict(cache=False, backoff_s=1.0, max_backoff_s=6.0, progress=False)))
    plain = llm_client._Transient("HTTP 500")
    for attempt, low in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 6.0), (7, 6.0)]:
        waits = [sender._wait_for(plain, attempt) for _ in range(200)]
        assert low <= min(waits) and max(waits) < low + 1.0 and len(set(waits)) > 1
    told = llm_client._Transient("HTTP 503", retry_after=7.0)
    assert all(7.0 <= sender._wait_for(told, 1) <= 7.7 for _ in range(200))


def test_retry_after_headers():
    assert llm.retry_after_seconds({"retry-after-ms": "1500"}) == 1.5
    assert llm.retry_after_seconds({"retry-after": "20"}) == 20.0
    assert 28 <= llm.retry_after_seconds({"retry-after": time.strftime("%a, %d %b %Y %H:%M:%S GMT",
                                                                       time.gmtime(time.time() + 30))}) <= 30
    assert llm.retry_after_seconds({}) is None


def test_quota_exhaustion_is_told_apart_from_rate_limits():
    exhausted = llm_client.is_quota_exhausted
    openai_quota = {"code": "insufficient_quota", "type": "insufficient_quota"}
    assert exhausted(429, {}, openai_quota,
                     "You exceeded your current quota, please check your plan and billing details.")
    assert exhausted(402, {}, {}, "Insufficient Balance")                                   # DeepSeek
    assert not exhausted(429, {"retry-after": "2"}, {"code": "rate_limit_exceeded"},
                         "Rate limit reached for gpt-5 on requests per min (RPM): Limit 500, Used 500.")
    assert not exhausted(429, {}, {"status": "RESOURCE_EXHAUSTED"},                       # Gemini per-minute limit
                         "You exceeded your current quota. Quota exceeded for metric: ... Please retry in 37.2s.")
    assert not exhausted(500, {}, openai_quota, "")


def test_budget_counts_cost_from_registry_prices():
    budget = llm.Budget(max_cost_usd=1.0)
    assert budget.reserve(1000, 0.6) is None
    assert "max_cost_usd" in budget.reserve(1000, 0.6)                 # 0.6 reserved + 0.6 > 1.0
    budget.settle(1000, 0.6, 900, 0.3)
    assert budget.reserve(1000, 0.6) is None and budget.cost_usd == pytest.approx(0.3)


def test_the_llm_layer_knows_local_backends_only_through_the_hook():
    """No module of the LLM layer names the simulator; it is found through the entry point it declares."""
    from gama_utils.paths import ROOT

    for module in (ROOT / "gama_utils" / "llm").glob("*.py"):
        assert "gama_utils.sim.targets" not in module.read_text(encoding="utf-8"), module.name
    from importlib.metadata import entry_points

    found = entry_points(group="gama_utils.llm_backends", name="sim")
    assert [e.value for e in found] == ["gama_utils.sim.targets:answer_request"]
