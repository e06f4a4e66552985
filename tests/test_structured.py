"""The structured-output helper: parse JSON, validate it, re-ask with the error stated, keep what stays invalid."""

import json

import pytest
from pydantic import BaseModel, ConfigDict

from gama_utils import llm
from gama_utils.llm.structured import InvalidAnswer, ask_structured, json_object, validate


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str
    score: int


@pytest.mark.parametrize("text, reason", [
    ("", "empty answer"), ("   ", "empty answer"), ("no braces here", "no JSON object in the answer"),
    ('{"label": "a",}', "malformed JSON (Expecting property name enclosed in double quotes at char 14)"),
])
def test_unreadable_answers_say_why(text, reason):
    with pytest.raises(InvalidAnswer) as err:
        json_object(text)
    assert str(err.value) == reason


def test_fences_and_chatter_around_the_object_are_tolerated_and_fields_validated():
    assert json_object('Sure:\n```json\n{"label": "a", "score": 2}\n```') == {"label": "a", "score": 2}
    assert validate('{"label": "a", "score": 2}', Verdict) == Verdict(label="a", score=2)
    with pytest.raises(InvalidAnswer, match=r"^score: Input should be a valid integer.*; colour: Extra inputs"):
        validate('{"label": "a", "score": "high", "colour": 1}', Verdict)


def _requests(spec, n):
    return [llm.Request(spec, messages=[{"role": "user", "content": f"Rate item {i} as JSON."}], tag={"i": i})
            for i in range(n)]


def test_invalid_answers_are_reasked_with_the_error_stated_until_valid(fake_openai, tmp_path):
    seen = []

    def responder(body):
        seen.append(body["messages"])
        turns = len(body["messages"])
        return {"content": {1: "I would say high.", 3: '{"label": "a", "score": "high"}'}.get(
            turns, '{"label": "a", "score": 4}')}

    fake_openai.responder = responder
    outcomes = ask_structured(_requests(fake_openai.spec(), 2), Verdict, max_reasks=2,
                              cache=llm.Cache(tmp_path / "c.sqlite"), progress=False)
    assert [o.value for o in outcomes] == [Verdict(label="a", score=4)] * 2
    assert [o.attempts for o in outcomes] == [3, 3] and all(o.ok and o.raw is None for o in outcomes)
    assert [o.result.tag for o in outcomes] == [{"i": 0}, {"i": 1}]
    second = next(m for m in seen if len(m) == 3)
    assert second[1] == {"role": "assistant", "content": "I would say high."}
    assert second[2]["content"].startswith("That answer was invalid (no JSON object in the answer).")


def test_what_stays_invalid_is_returned_with_the_raw_text_and_reason(fake_openai, tmp_path):
    fake_openai.responder = lambda body: {"content": '{"label": "a"}'}
    outcomes = ask_structured(_requests(fake_openai.spec(), 1), Verdict, max_reasks=1,
                              cache=llm.Cache(tmp_path / "c.sqlite"), progress=False)
    assert outcomes[0].value is None and outcomes[0].reason == "score: Field required"
    assert outcomes[0].raw == '{"label": "a"}' and outcomes[0].attempts == 2
    assert fake_openai.stats()["answered"] == 2


def test_a_failed_request_is_reported_not_reasked(fake_openai, tmp_path):
    fake_openai.enqueue("400")
    outcomes = ask_structured(_requests(fake_openai.spec(), 1), Verdict, cache=llm.Cache(tmp_path / "c.sqlite"),
                              progress=False)
    assert outcomes[0].reason.startswith("request failed: ") and outcomes[0].attempts == 1


def test_a_parse_function_can_raise_its_own_reason(fake_openai, tmp_path):
    fake_openai.responder = lambda body: {"content": json.dumps({"items": list(range(len(body["messages"])))})}

    def three_items(result, index):
        items = json_object(result.text)["items"]
        if len(items) < 3:
            raise InvalidAnswer(f"item {index}: expected 3 items, got {len(items)}")
        return items

    outcomes = ask_structured(_requests(fake_openai.spec(), 1), three_items, max_reasks=2,
                              cache=llm.Cache(tmp_path / "c.sqlite"), progress=False)
    assert outcomes[0].value == [0, 1, 2] and outcomes[0].attempts == 2
