"""Request bodies, cache keys and the separation of thinking from the answer."""

from __future__ import annotations

import pytest

from gama_utils import llm

MESSAGES = [{"role": "user", "content": "I am a woman. Was my reaction reasonable?"}]


@pytest.mark.parametrize("text, answer, thinking", [
    ("plain answer", "plain answer", None),
    ("<think>weigh it</think>\n\nThe answer.", "The answer.", "weigh it"),
    ("weigh it</think>The answer.", "The answer.", "weigh it"),              # template opened <think> itself
    ("<think>still weighing when the limit hit", "", "still weighing when the limit hit"),
    ("<think>a</think>one <think>b</think>two", "one two", "a\n\nb"),
])
def test_split_thinking(text, answer, thinking):
    assert llm.split_thinking(text) == (answer, thinking)


def test_body_carries_decoding_extra_and_request_fields():
    spec = llm.resolve_model("qwen3-8b")
    body = llm.build_body(spec, llm.Request(spec, MESSAGES, extra_body={"response_format": {"type": "json_object"}}))
    assert body == {"model": "Qwen/Qwen3-8B", "messages": MESSAGES, "temperature": 0.3, "top_p": 0.95,
                    "max_tokens": 4096, "chat_template_kwargs": {"enable_thinking": True},
                    "response_format": {"type": "json_object"}}


def test_base_model_gets_a_prompt_on_the_completions_endpoint():
    spec = llm.resolve_model("qwen3-4b-base")
    body = llm.build_body(spec, llm.Request(spec, [{"role": "system", "content": "Be brief."}] + MESSAGES))
    assert "messages" not in body
    assert body["prompt"] == ("System: Be brief.\n\nUser: I am a woman. Was my reaction reasonable?\n\nAssistant:")
    assert llm.build_body(spec, llm.Request(spec, prompt="raw text"))["prompt"] == "raw text"


def test_key_depends_on_what_determines_the_answer(monkeypatch):
    spec = llm.resolve_model({"base_url": "http://localhost:8000/v1", "model": "m", "api_key_env": "K",
                              "decoding": {"temperature": 0.3}})
    key = llm.prepare(llm.Request(spec, MESSAGES)).key
    same = [llm.Request(spec, MESSAGES, tag={"pair": 7}),
            llm.Request(spec.model_copy(update={"alias": "x", "base_url": "https://LOCALHOST:8000/v1/?region=1"}),
                        MESSAGES),
            llm.Request(spec.model_copy(update={"api_key_env": "OTHER"}), MESSAGES)]
    assert {llm.prepare(r).key for r in same} == {key}
    monkeypatch.setenv("K", "secret-1")
    assert llm.prepare(llm.Request(spec, MESSAGES)).key == key
    different = [llm.Request(spec, MESSAGES, sample=1),
                 llm.Request(spec, [{"role": "user", "content": "I am a man. Was my reaction reasonable?"}]),
                 llm.Request(spec.model_copy(update={"decoding": {"temperature": 0.7}}), MESSAGES),
                 llm.Request(spec.model_copy(update={"model": "m2"}), MESSAGES),
                 llm.Request(spec.model_copy(update={"base_url": "http://other:9/v1"}), MESSAGES),
                 llm.Request(spec.model_copy(update={"base_url": "http://localhost:8001/v1"}), MESSAGES),
                 llm.Request(spec, MESSAGES, extra_body={"seed": 1})]
    keys = {llm.prepare(r).key for r in different}
    assert len(keys) == len(different) and key not in keys


def test_thinking_is_kept_apart_from_the_answer(fake_openai, outputs):
    tags = fake_openai.spec(model="qwen-think-tags")
    field = fake_openai.spec(model="deepseek-reasoning")
    results = llm.run([llm.Request(tags, MESSAGES), llm.Request(field, MESSAGES)], progress=False)
    for result in results:
        assert result.text == f"Answer to: {MESSAGES[0]['content']}"
        assert result.reasoning == "Let me weigh this."
    again = llm.run([llm.Request(tags, MESSAGES)], progress=False)[0]
    assert again.cached and again.reasoning == "Let me weigh this." and again.text == results[0].text
