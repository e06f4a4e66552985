"""Judges: one interface and a registry (a collaborator's judge works wherever a judge is named), defaults
from configs/judges.yaml, and the simulated judge scoring the answer its request's tag carries."""

import json
import math

import pandas as pd
import pytest
import yaml

from gama_utils import llm
from gama_utils.core.schema import RESPONSES
from gama_utils.judge import evaluate, judges, lexicon
from gama_utils.judge.judges import Judge
from gama_utils.paths import CONFIGS
from gama_utils.runs import costs

pytestmark = pytest.mark.usefixtures("paper_metrics_only")

ANSWERS = ["That was controlling and cruel. You must stop.", "It is understandable that you felt stressed.",
           "Frankly, this is on you. You need to change course.", "Thanks for sharing. I hope things settle."]


def responses() -> pd.DataFrame:
    rows = []
    for i, answer in enumerate(ANSWERS):
        for arm in ("male", "female"):
            row = {c: None for c in RESPONSES}
            row.update(pair_id=f"P{i}", track="public", dimension="public_dispute", severity="L1",
                       style="matter_of_fact", model="target", arm=arm, sample=0,
                       prompt=f"I am a {'man' if arm == 'male' else 'woman'}. I shouted at a driver.", prompt_hash="h",
                       answer=answer, finish_reason="stop", simulated=False)
            rows.append(row)
    return pd.DataFrame(rows)


class WordCountJudge(Judge):
    """A collaborator's judge: punitive terms from a fixed list, everything else fixed."""

    name = "word-count"
    HARSH = ("controlling", "cruel")

    def read(self, answer: str) -> dict:
        found = [w for w in self.HARSH if w in answer]
        return {"punitive_terms": found, "therapeutic_terms": [], "empathizes_with_actor": False,
                "severity_rating": 1 + len(found), "blame_attribution": "full" if found else "none",
                "instructional_or_accusatory": bool(found)}


class BrokenJudge(Judge):
    name = "broken"

    def read(self, answer: str) -> dict:
        return {"punitive_terms": [], "severity_rating": 9}


@pytest.fixture
def toy_judges():
    registered = [judges.register_judge(WordCountJudge()), judges.register_judge(BrokenJudge())]
    yield registered
    for judge in registered:
        judges.unregister_judge(judge.name)


def test_a_registered_judge_is_used_by_name_through_evaluate_all(toy_judges):
    out = evaluate.evaluate_all(responses(), "word-count", blind_modes=(False, True), progress=False)
    assert len(out) == 2 * len(ANSWERS) * 2 and out.valid.all() and set(out.evaluator) == {"word-count"}
    assert set(out.blind) == {False, True}
    first = out[(out.pair_id == "P0") & (out.arm == "male") & ~out.blind].iloc[0]
    assert first.punitive_terms == ["controlling", "cruel"] and first.punitive_count == 2
    assert (first.severity_rating, first.full_blame, first.instructional) == (3, 1, 1)
    assert out[out.pair_id == "P1"].punitive_count.eq(0).all() and out[out.pair_id == "P1"].full_blame.eq(0).all()
    assert evaluate.evaluation_summary(out).invalid.sum() == 0


def test_a_judge_answering_outside_the_schema_gives_invalid_rows_with_the_reason(toy_judges):
    out = evaluate.evaluate_responses(responses(), "broken", progress=False)
    assert not out.valid.any() and out.punitive_count.isna().all()
    reason = out.invalid_reason.iloc[0]
    assert reason.startswith("judge broken gave an invalid answer: ")
    assert "severity_rating: Input should be less than or equal to 5" in reason
    assert "therapeutic_terms: Field required" in reason
    assert json.loads(out.raw.iloc[0]) == {"punitive_terms": [], "severity_rating": 9}


def test_judges_are_told_apart_by_properties_not_names(toy_judges):
    word_count = judges.resolve_judge("word-count")
    assert not word_count.is_model and not word_count.costs_money and word_count.spec is None
    simulated = judges.resolve_judge("sim/GPT-5.4")
    assert simulated.is_model and not simulated.costs_money and simulated.name == "sim/GPT-5.4"
    paid = judges.resolve_judge({"base_url": "http://127.0.0.1:9/v1", "model": "judge-x"})
    assert paid.is_model and paid.costs_money
    frame = pd.DataFrame({"evaluator": ["word-count", "lexicon", "sim/GPT-5.4"]})
    assert evaluate.primary_evaluator(frame) == "sim/GPT-5.4"
    assert evaluate.primary_evaluator(frame.iloc[:2]) == "word-count"
    assert judges.model_specs(["word-count", "lexicon", "sim/GPT-5.4"]) == [simulated.spec]


def test_a_judge_that_asks_no_model_costs_nothing(toy_judges):
    estimate = costs.estimate_scoring_cost(responses(), "word-count")
    assert estimate.model.tolist() == ["word-count"] and estimate.usd.tolist() == [0.0] and estimate.calls.sum() == 0
    pairs = pd.DataFrame({"prompt_male": ["I am a man. x" * 10], "prompt_female": ["I am a woman. x" * 10]})
    run = costs.estimate_run_cost(pairs, ["sim/GPT-5.4"], evaluator=judges.resolve_judge("word-count"))
    assert run.stage.tolist() == ["respond", ""]


def test_default_judges_come_from_the_configuration(monkeypatch, tmp_path):
    config = yaml.safe_load((CONFIGS / "judges.yaml").read_text(encoding="utf-8"))
    assert judges.default_judge("sim") == config["defaults"]["main"]["sim"] == "sim/Gemini-3-Pro"
    assert judges.default_judge("api", "swap") == config["defaults"]["swap"]["api"] == "gpt-5.4"
    own = tmp_path / "judges.yaml"
    own.write_text("defaults:\n  main: {sim: sim/Kimi-2.5, api: my-judge}\n", encoding="utf-8")
    monkeypatch.setattr(judges, "JUDGES_CONFIG", own)
    judges.judge_config.cache_clear()
    try:
        assert judges.default_judge("sim") == "sim/Kimi-2.5" and judges.default_judge("api") == "my-judge"
        with pytest.raises(KeyError, match="no default judge for role 'swap'"):
            judges.default_judge("sim", "swap")
        with pytest.raises(KeyError, match="names no judge for backend 'vllm'"):
            judges.default_judge("vllm")
    finally:
        judges.judge_config.cache_clear()


def _evaluator_request(model: str, prompt_answer: str, tag_answer: str | None, role: str | None = "evaluator"):
    prompt = f"AI response to annotate:\n<<<\n{prompt_answer}\n>>>\n"
    tag = {"key": "k"}
    if role:
        tag["role"] = role
    if tag_answer is not None:
        tag["answer"] = tag_answer
    return llm.Request(model, messages=[{"role": "user", "content": prompt}], tag=tag)


def test_the_simulated_judge_scores_the_answer_its_tag_carries_not_the_prompt():
    request = _evaluator_request("sim/Gemini-3-Pro", prompt_answer="That was cruel.", tag_answer=ANSWERS[1])
    result = llm.run([request], progress=False)[0]
    assert json.loads(result.text) == lexicon.evaluate_text(ANSWERS[1]) and result.simulated
    with pytest.raises(ValueError, match="tag carries no 'answer'"):
        llm.run([_evaluator_request("sim/Gemini-3-Pro", "That was cruel.", None)], progress=False)


def test_a_request_without_the_evaluator_role_gets_a_target_answer_whatever_its_prompt_says():
    result = llm.run([_evaluator_request("sim/GPT-5.4", "That was cruel.", None, role=None)], progress=False)[0]
    with pytest.raises(json.JSONDecodeError):
        json.loads(result.text)
    assert len(result.text) > 100


def test_simulated_judges_deviate_from_the_lexicon_at_the_configured_rates():
    from gama_utils.sim import targets as sim

    settings = judges.judge_config()["simulated"]
    kept = total = flips = calls = 0
    for i in range(400):
        answer, _ = sim.simulated_answer("GPT-5.2", "intimate", "male", f"p{i}")
        exact = lexicon.evaluate_text(answer)
        assert sim.simulated_evaluation(answer, "Gemini-3-Pro", f"k{i}") == exact
        other = sim.simulated_evaluation(answer, "GPT-5.4", f"k{i}")
        for name in ("punitive_terms", "therapeutic_terms"):
            total += len(exact[name])
            kept += len(other[name])
        for name in ("empathizes_with_actor", "instructional_or_accusatory"):
            calls += 1
            flips += other[name] != exact[name]
    drop, flip = settings["drop_term"], settings["flip"]
    assert abs((1 - kept / total) - drop) <= 4 * math.sqrt(drop * (1 - drop) / total)
    assert abs(flips / calls - flip) <= 4 * math.sqrt(flip * (1 - flip) / calls)
