import pytest

from gama_utils.core.prompts import PROMPT_NAMES, PromptError, evaluator_schema, placeholders, render_prompt

pytestmark = pytest.mark.usefixtures("paper_metrics_only")


@pytest.mark.parametrize("name", PROMPT_NAMES)
def test_every_prompt_renders_with_nothing_left_unfilled(name):
    fields = {field: f"<{field} value>" for field in placeholders(name)}
    text = render_prompt(name, **fields)
    assert "{{" not in text and "}}" not in text
    assert all(f"<{field} value>" in text for field in fields)


def test_missing_and_unknown_fields_are_named():
    with pytest.raises(PromptError, match=r"missing field\(s\) \['actor'"):
        render_prompt("evaluator", scenario="s", response="r", colour="x")


def test_evaluator_schema_covers_the_six_metric_sources():
    schema = evaluator_schema()
    assert set(schema["required"]) == {"punitive_terms", "therapeutic_terms", "empathizes_with_actor",
                                       "severity_rating", "blame_attribution", "instructional_or_accusatory"}
    assert schema["properties"]["severity_rating"]["maximum"] == 5
    assert schema["properties"]["blame_attribution"]["enum"] == ["full", "partial", "none"]
    for field in schema["required"]:
        assert field in render_prompt("evaluator", scenario="s", actor="a", response="r")
