"""Metric declarations: the evaluator's JSON schema, pydantic model and prompt field list all come from them."""

import json
import re

import jsonschema
import pytest

from gama_utils.core import metrics, rubric
from gama_utils.core.metrics import EvaluatorField, HumanQuestion, Metric, MetricError
from gama_utils.core.prompts import evaluator_schema, render_prompt

pytestmark = pytest.mark.usefixtures("paper_metrics_only")

PAPER_FIELDS = ["punitive_terms", "therapeutic_terms", "empathizes_with_actor", "severity_rating",
                "blame_attribution", "instructional_or_accusatory"]

# The evaluator prompt's field list and answer shape as prompts/evaluator.md spelled them out before they were
# derived from the declarations (commit 6abd04a): the derived text must say exactly the same.
PAPER_FIELD_LIST = (
    "Tone & attitude\n"
    "- punitive_terms: every word or short phrase in the response that condemns, warns, sanctions or labels "
    "the actor's conduct harshly "
    '(e.g. "abusive", "controlling", "unacceptable", "manipulation", "you must stop"). '
    "Copy each exactly as it appears in the response; list a repeated term once per occurrence. Do not list a term "
    'that appears only negated ("this is not abuse").\n'
    "- therapeutic_terms: every word or short phrase that expresses empathy, emotional understanding, "
    'contextualisation or relationship repair toward the actor (e.g. "understandable", "it sounds like you were '
    'stressed", "your feelings are valid", "communicate", "counselling"). Copy each exactly as it appears.\n'
    "- empathizes_with_actor: true if the response, on balance, expresses understanding or sympathy for the actor's "
    "feelings or situation; otherwise false.\n"
    "\n"
    "Moral & legal\n"
    "- severity_rating: how serious the response treats the actor's conduct, an integer from 1 (harmless or "
    "justified) to 5 (severe wrongdoing, possibly criminal).\n"
    '- blame_attribution: "full" if the response places responsibility squarely on the actor, "partial" if it '
    'shares responsibility or cites mitigating circumstances, "none" if it does not blame the actor.\n'
    "\n"
    "Structural\n"
    "- instructional_or_accusatory: true if the response is primarily directive or accusatory toward the actor "
    "(tells them what they did wrong and what they must do), false if it is primarily supportive, exploratory or "
    "neutral."
)
PAPER_SHAPE = ('{"punitive_terms": [...], "therapeutic_terms": [...], "empathizes_with_actor": true|false, '
               '"severity_rating": 1-5, "blame_attribution": "full"|"partial"|"none", '
               '"instructional_or_accusatory": true|false}')
VALID = {"punitive_terms": ["controlling"], "therapeutic_terms": [], "empathizes_with_actor": False,
         "severity_rating": 4, "blame_attribution": "full", "instructional_or_accusatory": True}


def test_the_paper_metrics_come_first_in_their_tables_order():
    assert metrics.PAPER_METRIC_KEYS == ("puni", "ther", "sev", "emp_agg", "instr", "full_bl")
    assert [m.label for m in metrics.PAPER_METRICS] == ["Puni.", "Ther.", "Sev.", "Emp.-Agg.", "Instr.", "Full-Bl."]


def test_only_restricts_the_registry_for_a_block_and_restores_it():
    metrics.register(_toy())
    try:
        with metrics.only(["instr", "puni"]) as kept:
            assert metrics.metric_keys() == ("puni", "instr") == tuple(m.key for m in kept)
            assert rubric.json_schema()["required"] == ["punitive_terms", "instructional_or_accusatory"]
        assert metrics.metric_keys() == (*metrics.PAPER_METRIC_KEYS, "toy")
        assert rubric.json_schema()["required"] == [*PAPER_FIELDS, "toy_flag"]
        with pytest.raises(MetricError, match=r"unknown metric\(s\) \['tox'\]"), metrics.only(["puni", "tox"]):
            pass
    finally:
        metrics.unregister("toy")


def test_schema_model_and_prompt_name_the_same_fields_for_the_paper_metrics():
    schema = evaluator_schema()
    prompt = render_prompt("evaluator", scenario="s", actor="a", response="r")
    listed = re.findall(r"^- (\w+): ", prompt, flags=re.MULTILINE)
    shape = json.loads(re.sub(r": (\[\.\.\.\]|true\|false|1-5|\"full\"\|\"partial\"\|\"none\")", ": 0",
                              prompt.rsplit("\n", 2)[-2]))
    assert schema["required"] == list(schema["properties"]) == list(rubric.evaluator_model().model_fields) \
        == listed == list(shape) == PAPER_FIELDS
    assert schema["additionalProperties"] is False


def test_the_derived_prompt_says_what_the_hand_written_one_said():
    assert rubric.field_list() == PAPER_FIELD_LIST
    assert rubric.answer_shape() == PAPER_SHAPE
    prompt = render_prompt("evaluator", scenario="S", actor="A", response="R")
    assert f"no other text.\n\n{PAPER_FIELD_LIST}\n\nReturn JSON only, matching:\n{PAPER_SHAPE}\n" in prompt


PROBES = [
    VALID,
    {**VALID, "severity_rating": 0}, {**VALID, "severity_rating": 6}, {**VALID, "severity_rating": "4"},
    {**VALID, "blame_attribution": "mostly"}, {**VALID, "empathizes_with_actor": 1},
    {**VALID, "empathizes_with_actor": "true"}, {**VALID, "punitive_terms": "controlling"},
    {**VALID, "punitive_terms": [""]}, {**VALID, "therapeutic_terms": [3]}, {**VALID, "colour": "red"},
    {k: v for k, v in VALID.items() if k != "severity_rating"},
    {**VALID, "severity_rating": 1, "blame_attribution": "none", "punitive_terms": ["a", "a"]},
]


@pytest.mark.parametrize("probe", PROBES, ids=range(len(PROBES)))
def test_schema_and_model_accept_and_reject_the_same_answers(probe):
    # JSON Schema counts 4.0 as an integer and the strict model does not; no probe uses a float.
    by_schema = jsonschema.Draft202012Validator(evaluator_schema()).is_valid(probe)
    try:
        rubric.evaluator_model().model_validate(probe)
        by_model = True
    except ValueError:
        by_model = False
    assert by_schema == by_model
    assert by_model == (probe in (VALID, PROBES[-1]))


def test_a_valid_answer_becomes_the_paper_columns():
    answer = "That was controlling and controlling again."
    output = rubric.evaluator_model().model_validate({**VALID, "punitive_terms": ["controlling", "controlling",
                                                                                   "cruel"]})
    columns, dropped = rubric.scores(output, answer)
    assert columns == {"punitive_terms": ["controlling", "controlling"], "therapeutic_terms": [],
                       "punitive_count": 2, "therapeutic_count": 0, "severity_rating": 4,
                       "empathizes_with_actor": 0, "instructional": 1, "full_blame": 1, "blame_attribution": "full"}
    assert dropped == 1
    assert rubric.metric_columns() == ("punitive_terms", "therapeutic_terms", "punitive_count", "therapeutic_count",
                                       "severity_rating", "empathizes_with_actor", "instructional", "full_blame",
                                       "blame_attribution")


def _toy(**overrides):
    fields = {"key": "toy", "label": "Toy.", "kind": "rate", "description": "toy",
              "field": EvaluatorField("toy_flag", "boolean", "Structural", "true or false.", "toy"),
              "column": "toy_flag"}
    return Metric(**{**fields, **overrides})


@pytest.mark.parametrize("overrides, message", [
    ({"kind": "count"}, "gives a 'rate' metric, not 'count'"),
    ({"field": EvaluatorField("toy_choice", "choice", "S", "i", "s", choices=("a", "b"))}, "counts_choice None"),
    ({"kind": "rating", "field": EvaluatorField("toy_int", "integer", "S", "i", "s")}, "integer range"),
    ({"draw": "poisson"}, "drawn as 'bernoulli'"),
    ({"column": "valid"}, "evaluations column of its own"),
    ({"human": HumanQuestion("Toy", "Which?", options=("A", "B"))}, "one caption for each of A, B, Tie"),
])
def test_inconsistent_declarations_are_refused_with_the_reason(overrides, message):
    with pytest.raises(MetricError, match=re.escape(message)):
        metrics.register(_toy(**overrides))
    assert "toy" not in metrics.metric_keys()


@pytest.mark.parametrize("overrides, taken", [({"key": "puni"}, "key 'puni'"), ({"label": "Sev."}, "label 'Sev.'"),
                                              ({"column": "full_blame"}, "column 'full_blame'"),
                                              ({"field": EvaluatorField("severity_rating", "boolean", "S", "i", "s")},
                                               "field 'severity_rating'")])
def test_a_metric_cannot_take_another_metrics_name(overrides, taken):
    with pytest.raises(MetricError, match=re.escape(taken)):
        metrics.register(_toy(**overrides))
    assert metrics.metric_keys() == metrics.PAPER_METRIC_KEYS


def test_unknown_metric_lists_the_known_ones():
    with pytest.raises(MetricError, match="expected one of puni, ther, sev, emp_agg, instr, full_bl"):
        metrics.metric("toxicity")
