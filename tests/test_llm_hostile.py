"""Servers that lie: usage missing, negative, as text or beyond the output limit; keys echoed back encoded.

The dollar figures the assertions compare with are worked out here from what the fake server would bill
(its honest usage: len(prompt JSON) // 4 + 1 in, len(answer) // 4 + 1 out), not from the client's counters.
"""

from __future__ import annotations

import json

import pytest
from fake_openai import FakeOpenAI
from test_llm_money import _pairs

from gama_utils import llm
from gama_utils.collect import respond

FAST = {"backoff_s": 0.05, "max_backoff_s": 0.2, "progress": False}
PRICE = {"price_input_per_m": 1.0, "price_output_per_m": 1000.0}       # $0.001 per output token
LIMIT = 1000                                                           # max_tokens of every request here


def ask(spec, n, prefix="q"):
    return [llm.Request(spec, [{"role": "user", "content": f"{prefix} {i}"}]) for i in range(n)]


def honest_usage(body):
    prompt = json.dumps(body.get("messages", body.get("prompt", "")))
    return len(prompt) // 4 + 1, len("word " * 400) // 4 + 1


def lying_server(fake, monkeypatch, usage):
    """Answers 'word ' × 400 (401 tokens honestly) with `usage(honest)` as its usage (None: no usage at all)."""
    fake.responder = lambda body: {"content": "word " * 400}

    def answer(body, chat):
        out = FakeOpenAI.answer_body(fake, body, chat)
        told = usage(out["usage"])
        if told is None:
            del out["usage"]
        else:
            out["usage"] = told
        out["system_fingerprint"] = "fp_hostile"
        return out

    monkeypatch.setattr(fake, "answer_body", answer)


def true_cost(n_answered, body):
    n_in, n_out = honest_usage(body)
    return n_answered * (n_in * PRICE["price_input_per_m"] + n_out * PRICE["price_output_per_m"]) / 1e6


@pytest.mark.parametrize("usage", [
    lambda u: None,                                                        # no usage at all
    lambda u: {"prompt_tokens": -100000, "completion_tokens": -100000},    # negative
    lambda u: {"prompt_tokens": "12", "completion_tokens": "401"},         # text
    lambda u: {"prompt_tokens": u["prompt_tokens"], "completion_tokens": 0},   # nothing for a real answer
], ids=["missing", "negative", "strings", "zero"])
def test_cap_holds_whatever_usage_the_server_reports(fake_openai, outputs, monkeypatch, usage):
    lying_server(fake_openai, monkeypatch, usage)
    spec = fake_openai.spec(**PRICE, max_concurrency=8, decoding={"max_tokens": LIMIT})
    budget = llm.Budget(max_cost_usd=5.0)
    with pytest.raises(llm.BudgetExceeded) as caught:
        llm.run(ask(spec, 40), budget=budget, **FAST)
    results = caught.value.results
    answered = [r for r in results if r.ok]
    body = llm.prepare(ask(spec, 1)[0]).body
    # each answer is charged the bound: its input estimate and the whole output limit (1,000 tokens, $1.00)
    assert all(r.usage_estimated and r.output_tokens == LIMIT for r in answered)
    assert budget.cost_usd >= true_cost(fake_openai.answered, body)       # never under-counted
    assert budget.cost_usd <= 5.0                                          # and the cap holds
    assert fake_openai.answered == len(answered) == 4                      # $1.00 + input each: 4 fit in $5
    assert results.stats["usage_estimated"] == 4


def test_plausible_usage_is_charged_as_reported(fake_openai, outputs, monkeypatch):
    lying_server(fake_openai, monkeypatch, lambda u: u)
    spec = fake_openai.spec(**PRICE, decoding={"max_tokens": LIMIT})
    budget = llm.Budget(max_cost_usd=5.0)
    results = llm.run(ask(spec, 3), budget=budget, **FAST)
    body = llm.prepare(ask(spec, 1)[0]).body
    assert [(r.input_tokens, r.output_tokens, r.usage_estimated) for r in results] == [(*honest_usage(body), False)] * 3
    assert budget.cost_usd == pytest.approx(true_cost(3, body))


def test_output_beyond_the_limit_is_charged_the_limit(fake_openai, outputs, monkeypatch):
    lying_server(fake_openai, monkeypatch, lambda u: {**u, "completion_tokens": 10 ** 9})
    spec = fake_openai.spec(**PRICE, decoding={"max_tokens": LIMIT})
    result = llm.run(ask(spec, 1), budget=llm.Budget(max_cost_usd=5.0), **FAST)[0]
    assert result.usage_estimated and result.output_tokens == LIMIT


def test_without_an_output_limit_the_bound_is_the_answers_bytes_or_4096(fake_openai, outputs, monkeypatch):
    lying_server(fake_openai, monkeypatch, lambda u: None)
    fake_openai.responder = lambda body: {"content": "x" * 6000}
    result = llm.run(ask(fake_openai.spec(**PRICE), 1), **FAST)[0]
    assert result.usage_estimated and result.output_tokens == 6008            # 6,000 bytes + 8 > 4,096


def test_rows_say_usage_estimated_and_the_summary_counts_them(fake_openai, outputs, monkeypatch):
    lying_server(fake_openai, monkeypatch, lambda u: None)
    spec = fake_openai.spec(**PRICE, decoding={"max_tokens": LIMIT})
    pairs = _pairs(2)
    requests = respond.build_requests(pairs, [spec])
    frame = respond.responses_frame(llm.run(requests, **FAST))
    assert frame["usage_estimated"].tolist() == [True] * 4
    assert frame["response_model"].tolist() == ["fake-model"] * 4
    assert frame["system_fingerprint"].tolist() == ["fp_hostile"] * 4
    assert respond.response_summary(frame).iloc[0]["usage_estimated"] == 4
    again = respond.responses_frame(llm.run(requests, **FAST))            # from the cache: the same labels
    assert again["cached"].all() and again["usage_estimated"].all()
    assert (again["system_fingerprint"] == "fp_hostile").all()


# --- prices and other numbers of a spec ------------------------------------------------------------------

@pytest.mark.parametrize("field, value", [("price_input_per_m", -1.0), ("price_output_per_m", -0.5),
                                          ("price_output_per_m", float("nan")), ("rpm", 0), ("timeout_s", -5)])
def test_a_negative_price_in_gama_models_is_refused_naming_file_and_field(tmp_path, monkeypatch, field, value):
    own = tmp_path / "my_models.yaml"
    entry = {"provider": "p", "model": "m", "base_url": "https://api.example.com/v1", "price_input_per_m": 1.0,
             "price_output_per_m": 2.0, field: value}
    own.write_text(json.dumps({"models": {"mine": entry}}), encoding="utf-8")    # JSON is YAML
    monkeypatch.setenv("GAMA_MODELS", str(own))
    with pytest.raises(llm.ConfigError, match=rf"my_models.yaml: model 'mine', field {field}: Input should be"):
        llm.load_registry()


def test_a_negative_price_in_an_inline_spec_is_refused_before_anything_is_sent(fake_openai, outputs):
    inline = f"openai-compatible:{fake_openai.base_url}#fake-model&price_input_per_m=-1&price_output_per_m=1"
    with pytest.raises(llm.ConfigError, match="field price_input_per_m: Input should be greater than or equal to 0"):
        llm.run(ask(inline, 3), budget=llm.Budget(max_cost_usd=1.0), **FAST)
    with pytest.raises(llm.ConfigError, match="field price_output_per_m"):
        llm.resolve_model({"base_url": fake_openai.base_url, "model": "m", "price_output_per_m": -3})
    assert fake_openai.received == 0


def test_a_remote_server_is_free_only_when_its_prices_are_written_as_zero():
    free = llm.resolve_model({"base_url": "https://api.example.com/v1", "model": "m", "price_input_per_m": 0,
                              "price_output_per_m": 0})
    unknown = llm.resolve_model({"base_url": "https://api.example.com/v1", "model": "m"})
    assert llm.estimate_cost(free, 10 ** 6, 10 ** 6) == 0.0 and llm.estimate_cost(unknown, 1, 1) is None
    with pytest.raises(llm.ConfigError, match="no price"):
        llm.Budget(max_cost_usd=1.0).check_priced([unknown])
    llm.Budget(max_cost_usd=1.0).check_priced([free])


def test_the_default_timeout_allows_a_long_reasoning_answer():
    spec = llm.resolve_model({"base_url": "https://api.example.com/v1", "model": "m"})
    assert spec.timeout_s >= 1800                     # 30 minutes: o-series / thinking answers can take 20+


# --- keys echoed back in other forms ----------------------------------------------------------------------

KEY = "sk-proj-Ab3/dE+9xYz_Q7w8KLmN0pRsT"


def echoed_forms(key):
    """What a hostile server sends back: the key as is, inside base64 and base64url texts at two offsets,
    URL-encoded, every byte percent-encoded, and without its prefix."""
    import base64
    from urllib.parse import quote

    return {"raw": key, "base64": base64.b64encode(f"ab: {key} end".encode()).decode(),
            "base64url": base64.urlsafe_b64encode(f"abcde{key}".encode()).decode(),
            "url": quote(key, safe=""), "percent": "".join(f"%{b:02x}" for b in key.encode()),
            "no_prefix": key.removeprefix("sk-proj-")}


def holds_key(text, key):
    """Independent of the redaction code: does `text` reveal the key, decoded in any of those ways?"""
    import base64
    import re
    from urllib.parse import unquote

    core = key.removeprefix("sk-proj-").encode()
    if core in text.encode() or core in unquote(text).encode():
        return True
    for run in re.findall(r"[A-Za-z0-9+/_-]{16,}={0,2}", text):
        for decode in (base64.b64decode, base64.urlsafe_b64decode):
            for cut in range(4):                                    # any alignment of the run
                piece = run[cut:]
                piece = piece[: len(piece) - len(piece) % 4]
                try:
                    if core[:16] in decode(piece):
                        return True
                except ValueError:
                    pass
    return False


@pytest.fixture
def keyed(fake_openai, monkeypatch):
    from conftest import FAKE_KEY_ENV

    monkeypatch.setenv(FAKE_KEY_ENV, KEY)
    fake_openai.configure(api_key=KEY)
    return fake_openai


def test_keys_echoed_in_any_form_are_blanked_before_anything_is_written(keyed, outputs, tmp_path):
    from gama_utils.core import run_folders

    forms = echoed_forms(KEY)
    assert all(holds_key(form, KEY) for form in forms.values())             # the check sees each form
    keyed.responder = lambda body: {"content": " | ".join(f"{n}={f}" for n, f in forms.items()),
                                    "reasoning_content": forms["base64"]}
    spec = keyed.spec()
    requests = respond.build_requests(_pairs(1), [spec])
    frame = respond.responses_frame(llm.run(requests, **FAST))
    assert frame["answer"].str.contains(r"raw=\*\*\*").all()
    for text in [*frame["answer"], *frame["reasoning"]]:
        assert not holds_key(text, KEY), text
    saved = run_folders.save(frame, tmp_path / "run", "responses").read_text(encoding="utf-8")
    cache = llm.Cache().path
    stored = b"".join(p.read_bytes() for p in cache.parent.glob(cache.name + "*")).decode("utf-8", "replace")
    assert not holds_key(saved, KEY) and not holds_key(stored, KEY)
    again = llm.run(requests, **FAST)                                       # the cache holds the blanked answers
    assert all(r.cached for r in again) and sorted(r.text for r in again) == sorted(frame["answer"])


def test_an_error_message_echoing_the_key_encoded_is_blanked(keyed, outputs, monkeypatch):
    forms = echoed_forms(KEY)
    plain_error = keyed._error
    monkeypatch.setattr(keyed, "_error", lambda status, message, code, *a, **k:
                        plain_error(status, f"{message}; you sent {forms['base64url']} {forms['no_prefix']}", code,
                                    *a, **k))
    keyed.enqueue("400")
    result = llm.run(ask(keyed.spec(), 1), **FAST)[0]
    assert result.error.startswith("HTTP 400") and not holds_key(result.error, KEY)


@pytest.mark.parametrize("form", ["base64", "base64url", "url", "percent", "no_prefix"])
def test_the_run_file_scan_finds_every_form(keyed, outputs, tmp_path, form):
    from gama_utils.core import credentials, run_folders

    run = tmp_path / "run"
    run.mkdir()
    (run / "notes.txt").write_text(f"the server said {echoed_forms(KEY)[form]}", encoding="utf-8")
    with pytest.raises(credentials.SecretInFileError, match="notes.txt"):
        run_folders.update_manifest(run, "04_respond", models=[keyed.spec()])


def test_the_run_file_scan_reads_the_response_cache(keyed, outputs, tmp_path):
    from gama_utils import paths
    from gama_utils.core import credentials, run_folders

    paths.CACHE.mkdir(parents=True)
    (paths.CACHE / "responses.sqlite-wal").write_bytes(b"\0\0" + echoed_forms(KEY)["url"].encode() + b"\0")
    with pytest.raises(credentials.SecretInFileError, match="responses.sqlite-wal"):
        run_folders.update_manifest(tmp_path / "run", "04_respond", models=[keyed.spec()])
