import pandas as pd
import pytest

from gama_utils import llm
from gama_utils.runs import costs


def _pairs(n, chars=400):
    text = "x" * (chars - len("I am a man. "))
    return pd.DataFrame({"prompt_male": ["I am a man. " + text] * n, "prompt_female": ["I am a man. " + text] * n})


def test_estimate_counts_calls_tokens_and_dollars_from_registry_prices():
    spec = llm.resolve_model("gpt-5.2")
    est = costs.estimate_run_cost(_pairs(100, chars=400), ["gpt-5.2"], answer_tokens=700)
    row = est.iloc[0]
    # 100 pairs x 2 arms = 200 calls; 400 chars / 4 = 100 input tokens each; 700 output tokens each
    assert (row.calls, row.input_tokens, row.output_tokens) == (200, 20_000, 140_000)
    expected = 20_000 / 1e6 * spec.price_input_per_m + 140_000 / 1e6 * spec.price_output_per_m
    assert row.usd == pytest.approx(expected)
    assert est.iloc[-1].model == "TOTAL" and est.iloc[-1].usd == pytest.approx(expected)


def test_simulated_models_cost_nothing_and_pass_any_limit():
    est = costs.estimate_run_cost(_pairs(10), ["sim/GPT-5.4"], evaluator="sim/Gemini-3-Pro")
    assert est.usd.sum() == 0 and est.iloc[-1].simulated
    costs.check_cost(est, max_usd=0.0)


def test_a_run_above_max_usd_or_without_prices_is_stopped_before_sending():
    est = costs.estimate_run_cost(_pairs(1000), ["gpt-5.2"])
    with pytest.raises(costs.CostLimitExceeded, match="raise max_usd"):
        costs.check_cost(est, max_usd=0.01)
    unpriced = costs.estimate_run_cost(_pairs(10), [{"base_url": "https://api.example.com/v1", "model": "m"}])
    with pytest.raises(costs.CostLimitExceeded, match="no price"):
        costs.check_cost(unpriced, max_usd=100)
    costs.check_cost(unpriced, max_usd=None)


@pytest.mark.parametrize("base_url", ["http://127.0.0.1:9/v1", "http://localhost:8000/v1", "http://[::1]:8000/v1",
                                      "http://192.168.1.20:8000/v1", "http://10.0.0.5/v1"])
def test_a_server_of_ones_own_costs_nothing_per_token(base_url):
    local = costs.estimate_run_cost(_pairs(10), [{"base_url": base_url, "model": "m"}])
    assert local.usd.tolist() == [0.0, 0.0] and local.priced.all()
    costs.check_cost(local, max_usd=0.0)


def test_a_public_host_without_prices_is_not_free():
    spec = llm.resolve_model({"base_url": "https://8.8.8.8/v1", "model": "m"})
    assert not spec.is_local and llm.estimate_cost(spec, 1000, 1000) is None


def test_scoring_cost_counts_one_call_per_response_and_blind_mode():
    responses = pd.DataFrame({"prompt": ["p" * 400] * 10, "answer": ["a" * 2800] * 10})
    est = costs.estimate_scoring_cost(responses, "gemini-3-pro", blind_modes=[False, True])
    spec = llm.resolve_model("gemini-3-pro")
    overhead = len(costs.render_prompt("evaluator", scenario="", actor="the narrator, a person", response="")) / 4
    row = est.iloc[0]
    # 10 responses x 2 modes = 20 calls; each: prompt template + 100 (scenario) + 700 (answer) tokens in, 250 out
    assert row.calls == 20 and row.input_tokens == int(20 * (overhead + 100 + 700)) and row.output_tokens == 5000
    assert row.usd == pytest.approx(row.input_tokens / 1e6 * spec.price_input_per_m
                                    + 5000 / 1e6 * spec.price_output_per_m)
    assert costs.estimate_scoring_cost(responses, "lexicon").usd.sum() == 0
