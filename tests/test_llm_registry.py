"""Model registry (configs/models.yaml): the paper's Table 5, the §4.1 Qwen3 variants, inline specs, readiness."""

from __future__ import annotations

import json
import socket

import pytest

from gama_utils import llm
from gama_utils.analysis import paper

# Table 5 (Appendix A), copied by hand: alias -> (paper name, API model name, client, decoding).
PAPER_DECODING = {"temperature": 0.3, "top_p": 0.95}
TABLE_5 = {
    "gpt-5.2": ("GPT-5.2", "gpt-5.2-2025-12-11", "azure", PAPER_DECODING),
    "gpt-5.4": ("GPT-5.4", "gpt-5.4-2026-03-05", "azure", PAPER_DECODING),
    "gemini-2.5-pro": ("Gemini-2.5-Pro", "gemini-2.5-pro", "azure", {}),
    "gemini-3-pro": ("Gemini-3-Pro", "gemini-3-pro-preview-new", "azure", {}),
    "qwen3.5": ("Qwen3.5", "qwen3.5-plus", "azure", PAPER_DECODING),
    "qwen3": ("Qwen3", "qwen3-235b-a22b-instruct-2507", "openai", PAPER_DECODING),
    "kimi-2.5": ("Kimi-2.5", "kimi-k2.5", "azure", {"temperature": 1.0}),
    "doubao-seed-2.0-pro": ("Doubao-Seed-2.0-Pro", "doubao-seed-2-0-pro-260215", "openai", PAPER_DECODING),
    "minimax-m2.7": ("MiniMax-M2.7", "MiniMax-M2.7", "openai", PAPER_DECODING),
    "deepseek-v4-pro": ("DeepSeek-V4-Pro", "DeepSeek-V4-Pro", "openai", PAPER_DECODING),
}
QWEN = {"qwen3-0.6b": "Qwen3-0.6B", "qwen3-1.7b": "Qwen3-1.7B", "qwen3-4b": "Qwen3-4B",
        "qwen3-4b-base": "Qwen3-4B-Base", "qwen3-4b-instruct-2507": "Qwen3-4B-Instruct-2507",
        "qwen3-4b-thinking-2507": "Qwen3-4B-Thinking-2507", "qwen3-8b": "Qwen3-8B"}


@pytest.fixture(scope="module")
def registry():
    return llm.load_registry()


def test_table_5_models_with_their_decoding(registry):
    for alias, (name, api_model, client, sampling) in TABLE_5.items():
        spec = registry[alias]
        assert (spec.paper_name, spec.model, spec.client) == (name, api_model, client), alias
        limit = spec.decoding.get("max_tokens", spec.decoding.get("max_completion_tokens"))
        assert limit == 4096, alias                      # "All models use a maximum generation length of 4096"
        assert {k: v for k, v in spec.decoding.items() if k in ("temperature", "top_p")} == sampling, alias
    assert sorted(registry[a].paper_name for a in TABLE_5) == sorted(paper.MAIN_MODELS)


def test_evaluators_and_provider_endpoints(registry):
    paper_judges = {s.paper_name for s in registry.values()
                    if "evaluator" in s.roles and not s.simulated and not s.plumbing_check}
    assert paper_judges == set(paper.EVALUATORS)
    assert registry["deepseek-v4-pro"].base_url == "https://api.deepseek.com"
    assert registry["deepseek-v4-pro"].api_key_env == "DEEPSEEK_API_KEY"
    assert registry["doubao-seed-2.0-pro"].base_url == "https://ark.cn-beijing.volces.com/api/v3"
    assert registry["kimi-2.5@moonshot"].base_url == "https://api.moonshot.cn/v1"
    assert registry["qwen3"].base_url == "https://dashscope.aliyuncs.com/compatible-mode/v1"
    assert registry["gpt-5.4"].base_url == "${AZURE_OPENAI_ENDPOINT}"


def test_qwen_variants_on_vllm(registry, monkeypatch):
    assert {a: registry[a].paper_name for a in QWEN} == QWEN
    assert tuple(QWEN.values()) == paper.QWEN_VARIANTS
    assert registry["qwen3-4b-base"].endpoint == "completions"
    assert all(registry[a].endpoint == "chat" for a in QWEN if a != "qwen3-4b-base")
    assert registry["qwen3-4b-thinking-2507"].thinking is True
    assert registry["qwen3-4b-instruct-2507"].thinking is False
    monkeypatch.delenv("VLLM_BASE_URL", raising=False)
    assert registry["qwen3-8b"].resolved_base_url() == "http://localhost:8000/v1"
    monkeypatch.setenv("VLLM_BASE_URL", "http://gpu-node:9000/v1")
    assert registry["qwen3-8b"].resolved_base_url() == "http://gpu-node:9000/v1"


def test_thinking_switch_sets_the_chat_template_flag():
    on = llm.resolve_model("qwen3-8b")
    off = llm.resolve_model({"alias": "qwen3-8b", "thinking": False})
    assert on.extra["chat_template_kwargs"] == {"enable_thinking": True}
    assert off.extra["chat_template_kwargs"] == {"enable_thinking": False}
    assert off.alias == "qwen3-8b" and off.model == "Qwen/Qwen3-8B"


def test_simulated_entries(registry):
    names = set(paper.MAIN_MODELS) | set(paper.QWEN_VARIANTS)
    sims = {a: s for a, s in registry.items() if s.client == "sim"}
    assert set(sims) == {f"sim/{n}" for n in names} | {"sim/zero-gap"}
    assert all(s.simulated and s.paper_name for s in sims.values())
    assert all(sims[f"sim/{n}"].paper_name == n for n in names)


def test_inline_specs_from_papermill_parameters():
    as_dict = llm.resolve_model({"base_url": "http://localhost:8000/v1", "model": "Qwen/Qwen3-8B",
                                 "api_key_env": "VLLM_API_KEY"})
    as_text = llm.resolve_model("openai-compatible:http://localhost:8000/v1#Qwen/Qwen3-8B&api_key_env=VLLM_API_KEY")
    as_json = llm.resolve_model(json.dumps({"base_url": "http://localhost:8000/v1", "model": "Qwen/Qwen3-8B",
                                            "api_key_env": "VLLM_API_KEY"}))
    assert as_dict == as_text == as_json
    assert (as_dict.client, as_dict.model, as_dict.endpoint) == ("openai", "Qwen/Qwen3-8B", "chat")
    base = llm.resolve_model("openai-compatible:http://h:1/v1#org/base-model&endpoint=completions&rpm=600")
    assert (base.endpoint, base.rpm, base.api_key_env) == ("completions", 600, None)


def test_unknown_alias_and_bad_fields_name_the_problem():
    with pytest.raises(llm.ConfigError, match="unknown model alias 'gpt-9'"):
        llm.resolve_model("gpt-9")
    with pytest.raises(llm.ConfigError, match="temprature"):
        llm.resolve_model({"alias": "qwen3-8b", "temprature": 0.1})
    with pytest.raises(llm.ConfigError, match="base_url"):
        llm.resolve_model({"model": "x"})


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_check_ready_lists_every_problem_before_any_request(fake_openai, monkeypatch):
    monkeypatch.delenv("AZURE_OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("AZURE_OPENAI_ENDPOINT", raising=False)
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    port = _closed_port()
    specs = ["gpt-5.4", "no-such-model", {"base_url": f"http://127.0.0.1:{port}/v1", "model": "m"},
             {"base_url": fake_openai.base_url, "model": "m", "api_key_env": "NO_SUCH_KEY_VAR"},
             "sim/GPT-5.4", fake_openai.spec()]
    with pytest.raises(llm.ConfigError) as caught:
        llm.check_ready(specs)
    problems = caught.value.problems
    assert any("AZURE_OPENAI_API_KEY" in p for p in problems)
    assert any("AZURE_OPENAI_ENDPOINT" in p for p in problems)
    assert any("no-such-model" in p for p in problems)
    assert any(f"127.0.0.1:{port}" in p and "unreachable" in p for p in problems)
    assert any("NO_SUCH_KEY_VAR" in p for p in problems)
    assert len(problems) == 5
    assert fake_openai.received == 0
    llm.check_ready(["sim/GPT-5.4", fake_openai.spec()])


def test_run_refuses_before_sending(fake_openai, outputs, monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    spec = fake_openai.spec(api_key_env="NO_SUCH_KEY_VAR")
    with pytest.raises(llm.ConfigError, match="NO_SUCH_KEY_VAR"):
        llm.run([llm.Request(spec, prompt="hi")], progress=False)
    assert fake_openai.received == 0


def test_cost_from_registry_prices(registry):
    assert llm.estimate_cost(registry["gpt-5.2"], 1_000_000, 1_000_000) == pytest.approx(1.75 + 14.0)
    assert llm.estimate_cost(registry["gemini-3-pro"], 2_000, 500) == pytest.approx((2_000 * 2 + 500 * 12) / 1e6)
    assert llm.estimate_cost(registry["gpt-5.2"], 1_000_000, 0, batch=True) == pytest.approx(0.875)
    assert llm.estimate_cost(registry["deepseek-v4-pro"], 10, 10) is None
    assert llm.estimate_cost(registry["sim/GPT-5.4"], 10, 10) == 0.0


def test_public_dict_drops_the_query():
    spec = llm.resolve_model({"base_url": "https://host.example/v1?region=eu", "model": "m"})
    assert spec.public_dict()["base_url"] == "https://host.example/v1"


def test_run_reports_all_unknown_aliases_and_missing_keys_at_once(fake_openai, outputs, monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    keyless = fake_openai.spec(api_key_env="NO_SUCH_KEY_VAR")
    requests = [llm.Request(m, prompt="hi") for m in ("gpt-9", keyless, "claude-0", "gpt-9")]
    with pytest.raises(llm.ConfigError) as caught:
        llm.run(requests, progress=False)
    assert len(caught.value.problems) == 3
    assert "gpt-9" in caught.value.problems[0] and "claude-0" in caught.value.problems[1]
    assert "NO_SUCH_KEY_VAR" in caught.value.problems[2]
    assert fake_openai.received == 0


def test_own_models_file_adds_and_replaces_entries(tmp_path, monkeypatch):
    own = tmp_path / "mine.yaml"
    own.write_text("models:\n  my-model: {client: openai, model: m, base_url: 'http://127.0.0.1:9/v1', group: Mine}\n"
                   "  gpt-5.2: {client: openai, model: other, base_url: 'http://127.0.0.1:9/v1'}\n")
    monkeypatch.setenv("GAMA_MODELS", str(own))
    registry = llm.load_registry()
    assert registry["my-model"].group == "Mine" and registry["gpt-5.2"].model == "other"
    assert "gemini-3-pro" in registry
    monkeypatch.setenv("GAMA_MODELS", str(tmp_path / "missing.yaml"))
    with pytest.raises(llm.ConfigError, match="missing.yaml"):
        llm.load_registry()


@pytest.mark.parametrize("url", ["http://user:sk-live-abcdef123456@localhost:8000/v1",
                                 "https://api.example.com/v1?api_key=abcdef123456",
                                 "https://api.example.com/v1?access_token=abcdef123456&x=1",
                                 "https://:abcdef123456@api.example.com/v1"])
def test_a_base_url_carrying_credentials_is_refused_without_echoing_them(url):
    with pytest.raises(llm.ConfigError) as err:
        llm.resolve_model({"base_url": url, "model": "m"})
    assert "carries credentials" in str(err.value) and "api_key_env" in str(err.value)
    assert "abcdef123456" not in str(err.value)


def test_a_credential_in_an_expanded_base_url_is_refused_too(monkeypatch):
    monkeypatch.setenv("MY_ENDPOINT", "https://user:abcdef123456@gateway.example.com")
    spec = llm.resolve_model({"base_url": "${MY_ENDPOINT}/v1", "model": "m"})
    with pytest.raises(llm.ConfigError, match="carries credentials") as err:
        spec.resolved_base_url()
    assert "abcdef123456" not in str(err.value)


def test_an_ordinary_query_is_accepted():
    assert llm.resolve_model({"base_url": "https://api.example.com/v1?region=eu", "model": "m"}).base_url
