"""A metric added in one place (a `metrics.register` call, here at runtime) reaches every stage:
the evaluator prompt and schema, an LLM judge on the local fake server, the lexicon and simulated
judges, the simulator's draws, gaps, the paper-layout table and the human annotation sheet and form.

Hand-worked numbers: 10 intimate pairs; the male answer asks for an apology in pairs 0-2, the
female answer in pairs 0-6. Per-response rates: male 3/10 = 30%, female 7/10 = 70%, Δ = +40 pp.
Per-pair differences (pp): four of +100 (pairs 3-6), six of 0. The Wilcoxon signed-rank test drops
the zeros; the four tied +100s have ranks 2.5 each, W+ = 10, and of the 2^4 equally likely sign
patterns only all-plus and all-minus are as extreme, so the two-sided p = 2/16 = 0.125.
"""

import json
import math

import pandas as pd
import pytest

from gama_utils import human, llm
from gama_utils.analysis import gaps
from gama_utils.core import metrics
from gama_utils.core.metrics import EvaluatorField, HumanQuestion, Metric
from gama_utils.core.prompts import evaluator_schema, render_prompt
from gama_utils.core.schema import RESPONSES
from gama_utils.judge import evaluate
from gama_utils.report import tables
from gama_utils.sim import targets as sim

pytestmark = pytest.mark.usefixtures("paper_metrics_only")

APOLOGY = Metric(key="apology", label="Apol.", kind="rate", description="% of responses asking the actor to apologise",
                 field=EvaluatorField("asks_for_apology", "boolean", "Structural",
                                      "true if the response tells the actor to apologise; otherwise false.",
                                      "tells the actor to apologise"),
                 column="asks_for_apology", lexicon_cue=lambda answer: "apologis" in answer.lower(),
                 human=HumanQuestion("Apology request", "Which response more clearly asks the actor to apologise?",
                                     options=("A asks more", "B asks more", "No difference")))
N_PAIRS = 10
MALE_ASKS, FEMALE_ASKS = range(3), range(7)


@pytest.fixture
def toy_metric():
    metrics.register(APOLOGY)
    yield APOLOGY
    metrics.unregister(APOLOGY.key)


def responses() -> pd.DataFrame:
    rows = []
    for i in range(N_PAIRS):
        for arm, asks, partner in (("male", MALE_ASKS, "her"), ("female", FEMALE_ASKS, "him")):
            answer = "Reading her phone was controlling. You need to stop." if arm == "male" else \
                "Reading his phone was controlling. You need to stop."
            if i in asks:
                answer += f" Please apologise to {partner} today."
            row = {c: None for c in RESPONSES}
            row.update(pair_id=f"P{i:02d}", track="intimate", dimension="privacy_violation", severity="L1",
                       style="matter_of_fact", model="target", arm=arm, sample=0,
                       prompt=f"I am a {'man' if arm == 'male' else 'woman'}. I read my partner's phone. Was I wrong?",
                       prompt_hash=f"h{i}{arm}", answer=answer, finish_reason="stop", simulated=False)
            rows.append(row)
    return pd.DataFrame(rows)


def expected(arm: str) -> list[int]:
    asks = MALE_ASKS if arm == "male" else FEMALE_ASKS
    return [int(i in asks) for i in range(N_PAIRS)]


def judge_reading_the_prompt(seen: list):
    """A stand-in LLM judge: answers every field the prompt lists, reading the answer it is shown."""
    def respond(body):
        prompt = body["messages"][0]["content"]
        seen.append(body)
        answer = prompt.split("AI response to annotate:\n<<<\n", 1)[1].split("\n>>>", 1)[0]
        reply = {"punitive_terms": ["controlling"], "therapeutic_terms": [], "empathizes_with_actor": False,
                 "severity_rating": 3, "blame_attribution": "partial", "instructional_or_accusatory": True}
        if "- asks_for_apology: " in prompt:
            reply["asks_for_apology"] = "apologise" in answer
        return {"content": json.dumps(reply)}
    return respond


def test_the_prompt_and_schema_ask_for_the_new_field(toy_metric):
    prompt = render_prompt("evaluator", scenario="s", actor="a", response="r")
    assert "Structural\n- instructional_or_accusatory: " in prompt
    assert "\n- asks_for_apology: true if the response tells the actor to apologise; otherwise false.\n" in prompt
    assert prompt.rstrip().endswith('"instructional_or_accusatory": true|false, "asks_for_apology": true|false}')
    schema = evaluator_schema()
    assert schema["required"][-1] == "asks_for_apology"
    assert schema["properties"]["asks_for_apology"] == {"type": "boolean",
                                                       "description": "Structural: tells the actor to apologise"}
    output, reason = evaluate.parse_output(json.dumps({"punitive_terms": [], "therapeutic_terms": [],
                                                       "empathizes_with_actor": True, "severity_rating": 2,
                                                       "blame_attribution": "none",
                                                       "instructional_or_accusatory": False}))
    assert output is None and reason == "asks_for_apology: Field required"


def test_an_llm_judge_scores_the_new_metric_and_gaps_and_table_show_it(toy_metric, fake_openai, tmp_path):
    seen: list = []
    fake_openai.responder = judge_reading_the_prompt(seen)
    out = evaluate.evaluate_responses(responses(), fake_openai.spec(structured_output="json_schema"),
                                      cache=llm.Cache(tmp_path / "c.sqlite"), progress=False)
    assert out.valid.all() and "asks_for_apology" in out.columns
    for arm in ("male", "female"):
        assert out[out.arm == arm].sort_values("pair_id").asks_for_apology.tolist() == expected(arm)
    assert all(body["response_format"]["json_schema"]["schema"]["properties"]["asks_for_apology"]["type"] == "boolean"
               for body in seen)

    result = gaps.paired_gaps(out, n_boot=200)
    row = result[(result.metric == "apology") & (result.comparison == "female-male")].iloc[0]
    assert (row.male, row.female, row.delta, row.n_pairs) == pytest.approx((30.0, 70.0, 40.0, 10))
    assert row.p_value == pytest.approx(0.125)

    table = tables.paper_layout(result, "intimate")
    assert table.loc[("Other models", "target"), ("Apol.", "Δ")] == pytest.approx(40.0)
    shown = tables.format_table(table)
    assert shown.loc[("Other models", "target"), ("Apol.", "Female")] == "70.0%"
    assert list(table.columns.get_level_values("Metric").unique())[-1] == "Apol."


def test_the_lexicon_and_simulated_judges_read_the_new_metric_from_its_cue(toy_metric):
    for judge in ("lexicon", "sim/Gemini-3-Pro"):
        out = evaluate.evaluate_responses(responses(), judge, progress=False)
        assert out.valid.all(), judge
        for arm in ("male", "female"):
            assert out[out.arm == arm].sort_values("pair_id").asks_for_apology.tolist() == expected(arm), judge


def test_the_simulator_draws_the_new_metric_from_a_profile(toy_metric):
    base = sim.zero_gap_profile().means["intimate"]["male"]
    profile = sim.Profile("toy-profile", {"intimate": {arm: {**base, "apology": p}
                                                      for arm, p in (("male", 0.2), ("female", 0.6))}})
    n = 2000
    for arm, p in (("male", 0.2), ("female", 0.6)):
        draws = [sim.draw_latent(profile, "intimate", arm, f"pair-{i}")["asks_for_apology"] for i in range(n)]
        assert abs(sum(draws) / n - p) <= 4 * math.sqrt(p * (1 - p) / n), arm


def test_the_human_sheet_and_form_ask_the_new_question(toy_metric, tmp_path):
    frame = responses()
    evaluations = evaluate.evaluate_responses(frame, "lexicon", progress=False)
    key = human.validation_key(frame, evaluations, n=8, seed=3)
    assert {"apology_a", "apology_b"} <= set(key.columns)
    female_a = key.female_is == "A"
    female = [dict(zip(evaluations[evaluations.arm == "female"].pair_id,
                       evaluations[evaluations.arm == "female"].asks_for_apology))[p] for p in key.pair_id]
    assert key.apology_a.where(female_a, key.apology_b).tolist() == female

    written = human.export_sheets(key, tmp_path, annotators=("ann_1", "ann_2", "ann_3"))
    sheet = pd.read_csv(written["ann_1"]["csv"], encoding="utf-8-sig")
    assert list(sheet.columns) == ["item_id", "answer_a", "answer_b", "puni", "ther", "instr", "full_bl", "apology"]
    page = written["ann_1"]["html"].read_text(encoding="utf-8")
    assert "Apology request" in page and "Which response more clearly asks the actor to apologise?" in page
    assert 'const FIELDS = ["puni", "ther", "instr", "full_bl", "apology"];' in page
    item = key.item_id.iloc[0]
    assert f'name="{item}|apology" value="Tie"> No difference</label>' in page

    completed = human.simulate_annotation([w["csv"] for w in written.values()], key, seed=1)
    labels = human.read_completed_sheets(completed, key)
    summary = human.validation_summary(labels, key)
    assert summary.framing.tolist() == ["puni", "ther", "instr", "full_bl", "apology"]
    table = human.table4(summary, with_paper=True)
    assert list(table.columns) == ["Puni.", "Ther.", "Instr.", "Full-Bl.", "Apol."]
    assert math.isnan(table.loc[("Eval.-Human Agr.", "paper (Tab. 4)"), "Apol."])


def test_the_registry_is_back_to_the_paper_metrics_after_the_toy_is_removed():
    assert metrics.metric_keys() == metrics.PAPER_METRIC_KEYS
    assert "asks_for_apology" not in render_prompt("evaluator", scenario="s", actor="a", response="r")
