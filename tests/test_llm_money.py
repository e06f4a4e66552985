"""Money: max_cost_usd is a hard cap while sending, cached answers are free, two processes never pay twice,
the cache key names the server."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
from fake_openai import FakeOpenAI

from gama_utils import llm
from gama_utils.runs import costs

ROOT = Path(__file__).resolve().parent.parent
FAST = {"backoff_s": 0.05, "max_backoff_s": 0.2, "progress": False}
PRICE = {"price_input_per_m": 1.0, "price_output_per_m": 1000.0}       # $0.001 per output token


def ask(spec, n, prefix="q"):
    return [llm.Request(spec, [{"role": "user", "content": f"{prefix} {i}"}]) for i in range(n)]


def long_answer(body):
    return {"content": "word " * 2400}                  # the fake bills len/4 + 1 = 3,001 output tokens


def spent(results, spec):
    """Dollars actually billed, from the token counts the server reported (computed here, not by the client)."""
    return sum((r.input_tokens * spec.price_input_per_m + r.output_tokens * spec.price_output_per_m) / 1e6
               for r in results if r.ok and not r.cached)


def test_cap_holds_when_answers_are_longer_than_assumed(fake_openai, outputs):
    # No max_tokens in the body: each answer costs $3.001, far above a 1,024-token assumption ($1.02).
    fake_openai.responder = long_answer
    fake_openai.configure(latency=0.05)
    spec = fake_openai.spec(**PRICE, max_concurrency=8)
    budget = llm.Budget(max_cost_usd=15.5)
    with pytest.raises(llm.BudgetExceeded, match="max_cost_usd") as caught:
        llm.run(ask(spec, 40), budget=budget, **FAST)
    results = caught.value.results
    paid = spent(results, spec)
    assert paid <= 15.5 and budget.cost_usd == pytest.approx(paid)
    assert sum(r.ok for r in results) == fake_openai.answered >= 3            # stopped cleanly, kept what it got
    assert len(llm.Cache()) == fake_openai.answered


def test_unpriced_model_with_a_cost_cap_is_refused_before_sending(fake_openai, outputs):
    """A remote server without prices cannot be capped in dollars: refused before any request or probe."""
    spec = fake_openai.spec(alias="my-vllm", base_url="https://8.8.8.8:9/v1")
    with pytest.raises(llm.ConfigError, match=r"my-vllm.*no price.*price_output_per_m.*max_usd=None"):
        llm.run(ask(spec, 3), budget=llm.Budget(max_cost_usd=5.0), **FAST)
    assert fake_openai.received == 0


def test_a_server_of_ones_own_is_free_under_a_cost_cap(fake_openai, outputs):
    """The local test server has no price: it costs nothing per token, so a $0 cap lets it answer."""
    results = llm.run(ask(fake_openai.spec(alias="my-vllm"), 3), budget=llm.Budget(max_cost_usd=0.0), **FAST)
    assert all(r.ok for r in results) and fake_openai.received == 3


def test_cached_answers_cost_nothing_and_never_trip_the_cap(fake_openai, outputs):
    unpriced, priced = fake_openai.spec(), fake_openai.spec(alias="priced", model="priced-model", **PRICE)
    llm.run(ask(unpriced, 5) + ask(priced, 5), **FAST)
    sent = fake_openai.received
    budget = llm.Budget(max_cost_usd=0.0)
    results = llm.run(ask(unpriced, 5) + ask(priced, 5), budget=budget, **FAST)
    assert all(r.cached for r in results) and fake_openai.received == sent and budget.cost_usd == 0.0


def _pairs(n):
    return pd.DataFrame({"pair_id": [f"p{i}" for i in range(n)], "template_id": "t", "track": "intimate",
                         "dimension": "d", "severity": "s", "style": "x", "relationship": "r",
                         "prompt_male": [f"I am a man {i}." for i in range(n)],
                         "prompt_female": [f"I am a woman {i}." for i in range(n)],
                         "prompt_neutral": [f"I am a person {i}." for i in range(n)]})


def test_estimate_counts_cached_answers_at_zero(fake_openai, outputs):
    from gama_utils.collect import respond

    spec = fake_openai.spec(**PRICE)
    pairs = _pairs(6)
    full = costs.estimate_run_cost(pairs, [spec], cache=llm.Cache())
    assert full.iloc[0].calls == 12 and full.iloc[0].cached == 0 and full.iloc[-1].usd > 0
    llm.run(respond.build_requests(pairs.head(3), [spec]), **FAST)                    # 6 of 12 answered
    half = costs.estimate_run_cost(pairs, [spec], cache=llm.Cache())
    assert (half.iloc[0].calls, half.iloc[0].cached) == (6, 6)
    assert half.iloc[0].usd == pytest.approx(full.iloc[0].usd / 2)
    llm.run(respond.build_requests(pairs, [spec]), **FAST)
    rerun = costs.estimate_run_cost(pairs, [spec], cache=llm.Cache())
    assert rerun.iloc[-1].usd == 0.0
    costs.check_cost(rerun, max_usd=0.01)                                               # not refused
    with pytest.raises(costs.CostLimitExceeded):
        costs.check_cost(full, max_usd=0.01)


def test_scoring_estimate_counts_cached_evaluations_at_zero(fake_openai, outputs):
    from gama_utils.judge import evaluate

    judge = fake_openai.spec(alias="judge", model="judge-model", **PRICE)
    responses = pd.DataFrame({"model": "m", "pair_id": [f"p{i}" for i in range(4)], "arm": "male", "sample": 0,
                              "prompt": [f"scenario {i}" for i in range(4)],
                              "answer": [f"an answer {i}" for i in range(4)]})
    requests = [llm.Request(judge, [{"role": "user", "content": evaluate.evaluator_prompt(r, False)}])
                for r in responses.head(3).to_dict("records")]
    llm.run(requests, **FAST)
    est = costs.estimate_scoring_cost(responses, judge, cache=llm.Cache())
    assert (est.iloc[0].calls, est.iloc[0].cached) == (1, 3)


def test_cache_key_names_the_server(fake_openai, outputs):
    spec = fake_openai.spec()
    llm.run(ask(spec, 3), **FAST)
    with FakeOpenAI(api_key=fake_openai.config["api_key"]) as other:
        moved = spec.model_copy(update={"base_url": other.base_url})
        results = llm.run(ask(moved, 3), **FAST)
        assert other.received == 3 and not any(r.cached for r in results)
    assert llm.prepare(ask(spec, 1)[0]).key != llm.prepare(ask(moved, 1)[0]).key
    report = llm.Cache().explain_miss(ask(spec.model_copy(update={"base_url": "http://gpu-box.invalid:8000/v1"}), 1)[0])
    assert not report["hit"] and len(report["differs"]) == 1 and "server" in report["reason"]
    assert report["differs"][0]["request"] == "gpu-box.invalid:8000/v1"
    assert report["differs"][0]["cached"] in (f"127.0.0.1:{fake_openai.port}/v1", f"127.0.0.1:{other.port}/v1")


def test_key_holds_only_host_and_path_of_the_server():
    plain = llm.resolve_model({"base_url": "https://api.example.com/v1", "model": "m"})
    other = llm.resolve_model({"base_url": "http://API.example.com/v1/?region=eu", "model": "m"})
    assert llm.prepare(ask(plain, 1)[0]).server == llm.prepare(ask(other, 1)[0]).server == "api.example.com/v1"
    with pytest.raises(llm.ConfigError, match="carries credentials"):  # never reaches a key at all
        llm.resolve_model({"base_url": "https://user:pw@API.example.com/v1/?token=abc", "model": "m"})


CLIENT = textwrap.dedent("""
    import json, sys
    from gama_utils import llm
    spec = llm.resolve_model({"base_url": sys.argv[1], "model": "fake-model", "alias": "fake",
                              "api_key_env": "FAKE_OPENAI_KEY", "timeout_s": 60})
    requests = [llm.Request(spec, [{"role": "user", "content": f"shared {i}"}]) for i in range(40)]
    results = llm.run(requests, cache=sys.argv[2], concurrency=8, progress=False)
    print(json.dumps({"ok": sum(r.ok for r in results), "cached": sum(r.cached for r in results),
                      "elsewhere": results.stats["answered_elsewhere"]}))
""")


def test_two_processes_on_one_cache_never_pay_twice(fake_openai, tmp_path):
    from conftest import FAKE_KEY

    fake_openai.configure(latency=0.1)
    path = tmp_path / "shared.sqlite"
    llm.Cache(path)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FAKE_OPENAI_KEY": FAKE_KEY}
    runs = [subprocess.Popen([sys.executable, "-c", CLIENT, fake_openai.base_url, str(path)], env=env,
                             stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [json.loads(p.communicate(timeout=120)[0].strip().splitlines()[-1]) for p in runs]
    assert [p.returncode for p in runs] == [0, 0]
    assert [o["ok"] for o in outs] == [40, 40]
    assert fake_openai.billed_twice == 0 and fake_openai.answered == 40
    assert sum(o["elsewhere"] + o["cached"] for o in outs) >= 40           # the other process's answers were used


def test_a_dead_owners_lease_does_not_block(fake_openai, outputs):
    spec = fake_openai.spec()
    requests = ask(spec, 4)
    cache = llm.Cache()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    owner = f"{os.uname().nodename}:{dead.stdout.strip()}:gone"
    far = time.time() + 3600
    with sqlite3.connect(cache.path) as conn:
        conn.executemany("INSERT INTO leases VALUES (?, ?, ?)",
                         [(llm.prepare(r).key, owner, far) for r in requests[:2]]
                         + [(llm.prepare(requests[2]).key, "elsewhere:1:x", time.time() - 1)])
    results = llm.run(requests, cache=cache, **FAST)  # a lease that blocked would wait out its hour (the timeout)
    assert all(r.ok for r in results) and fake_openai.received == 4
