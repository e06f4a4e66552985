"""A provider whose API is not OpenAI-compatible, registered outside llm/, against a local server of that shape.

The server (tests/other_api.py, started and stopped by each test) has its own request and response shape, and its
key in a header of its own.
"""

from __future__ import annotations

import json

import pytest
from other_api import KEY, OtherServer

from gama_utils import llm
from gama_utils.llm import registry

KEY_ENV = "OTHER_API_KEY"


def other_request(spec: llm.ModelSpec, body: dict) -> dict:
    """The project's OpenAI chat body → the other API's request."""
    system = " ".join(m["content"] for m in body["messages"] if m["role"] == "system")
    turns = [{"who": m["role"], "text": m["content"]} for m in body["messages"] if m["role"] != "system"]
    return {"model_name": body["model"], "input": {"system": system, "turns": turns},
            "generation": {"max_new_tokens": body.get("max_tokens", 256)}}


def other_response(spec: llm.ModelSpec, data: dict) -> dict:
    """The other API's reply → an OpenAI chat completion."""
    return {"choices": [{"message": {"role": "assistant", "content": data["output"]["text"]},
                         "finish_reason": "stop" if data["output"]["stop"] == "done" else "length"}],
            "usage": {"prompt_tokens": data["meter"]["tokens_in"], "completion_tokens": data["meter"]["tokens_out"]}}


OTHER = llm.Provider(url=lambda spec: spec.resolved_base_url() + "/v2/generate",
                     request=other_request, response=other_response,
                     headers=lambda spec, key: {"Content-Type": "application/json", "X-Api-Key": key or ""})


@pytest.fixture
def other(monkeypatch, outputs):
    server = OtherServer().start()
    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.setitem(registry._PROVIDERS, "other-api", OTHER)
    registry.client_kinds.cache_clear()
    yield server
    server.stop()
    registry.client_kinds.cache_clear()


def _spec(server: OtherServer, **fields) -> dict:
    return {"alias": "other-model", "client": "other-api", "model": "other-1", "api_key_env": KEY_ENV,
            "base_url": server.base_url, "price_input_per_m": 1.0, "price_output_per_m": 10.0,
            **fields}


def test_an_unregistered_client_kind_is_refused_naming_the_kinds():
    with pytest.raises(llm.ConfigError, match=r"client 'other-api' is not a registered client kind \(openai, azure"):
        llm.resolve_model({"alias": "x", "client": "other-api", "model": "m", "base_url": "http://127.0.0.1:1"})


def test_a_registered_provider_answers_through_its_own_shape_and_is_not_simulated(other):
    spec = llm.resolve_model(_spec(other))
    assert not spec.simulated and not spec.plumbing_check
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello there"}]
    results = llm.run([llm.Request(spec, messages=messages, extra_body={"max_tokens": 1000})], progress=False)
    assert [r.text for r in results] == ["echo: Hello there"]
    assert results[0].simulated is False and results[0].error is None
    sent = other.received[0]
    assert sent == {"model_name": "other-1", "input": {"system": "Be brief.", "turns": [{"who": "user",
                    "text": "Hello there"}]}, "generation": {"max_new_tokens": 1000}}
    # usage read from the provider's meter: 7 in, 1,000 out (within max_tokens), at $1 and $10 per million tokens
    assert (results[0].input_tokens, results[0].output_tokens) == (7, 1000)
    assert llm.estimate_cost(spec, 7, 1000) == pytest.approx(7 * 1e-6 + 1000 * 10e-6)


def test_the_layer_retries_caches_and_caps_a_provider_like_any_server(other):
    spec = llm.resolve_model(_spec(other))
    other.faults = [503, 500]
    one = llm.Request(spec, messages=[{"role": "user", "content": "one"}], extra_body={"max_tokens": 20})
    first = llm.run([one], progress=False, backoff_s=0.01, max_backoff_s=0.02)
    assert first[0].text == "echo: one" and len(other.received) == 3  # two faults retried, then answered
    again = llm.run([one], progress=False)
    assert again[0].text == "echo: one" and again[0].cached and len(other.received) == 3  # from the cache
    # the dollar cap: each answer costs ~$0.01 (1,000 output tokens at $10/M); $0.025 allows two of five
    requests = [llm.Request(spec, messages=[{"role": "user", "content": f"q{i}"}], extra_body={"max_tokens": 1000})
                for i in range(5)]
    with pytest.raises(llm.BudgetExceeded):
        llm.run(requests, budget=llm.Budget(max_cost_usd=0.025), progress=False, concurrency=1)
    assert len(other.received) - 3 <= 2


def test_the_key_goes_only_in_the_providers_header_and_a_bad_key_is_a_config_error(other, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "wrong")
    spec = llm.resolve_model(_spec(other, alias="other-wrong"))
    with pytest.raises(llm.ConfigError):
        llm.run([llm.Request(spec, messages=[{"role": "user", "content": "x"}])], progress=False)
    assert not any("wrong" in json.dumps(body) for body in other.received)
