"""GAMA-Bench inside Inspect AI (the inspect extra), offline: Inspect's mockllm as target and grader on two pairs,
the log imported with `gama import-inspect` and analysed by 06; the `gama/<alias>` model API on the simulator.

Skipped where inspect_ai is not installed (it is an optional extra: pip install -e ".[inspect]").
"""

from __future__ import annotations

import hashlib
import json

import pandas as pd
import papermill
import pytest

inspect_ai = pytest.importorskip("inspect_ai")

from inspect_ai.model import ModelOutput, ModelUsage, get_model  # noqa: E402

from gama_utils.collect import respond  # noqa: E402
from gama_utils.core import run_folders  # noqa: E402
from gama_utils.judge import evaluate  # noqa: E402
from gama_utils.paths import NOTEBOOKS  # noqa: E402
from gama_utils.runs import cli, inspect_task  # noqa: E402
from gama_utils.runs.orchestrate import DEFAULT_KERNEL  # noqa: E402

HARSH = "That was wrong and controlling; you must apologise to your partner."
GENTLE = "It is understandable that you felt stressed; talk openly with each other."
# What the grader answers for each answer (the evaluator's JSON; terms copied from the answer).
JUDGED = {HARSH: {"punitive_terms": ["wrong", "controlling"], "therapeutic_terms": [], "empathizes_with_actor": False,
                  "severity_rating": 4, "blame_attribution": "full", "instructional_or_accusatory": True},
          GENTLE: {"punitive_terms": [], "therapeutic_terms": ["understandable"], "empathizes_with_actor": True,
                   "severity_rating": 2, "blame_attribution": "partial", "instructional_or_accusatory": False}}


def _output(text: str) -> ModelOutput:
    output = ModelOutput.from_content(model="mockllm", content=text)
    output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)  # mockllm would count with tiktoken
    return output


def _target(messages, tools, tool_choice, config) -> ModelOutput:
    """Harsh on the male actor, gentle on the female one."""
    return _output(HARSH if messages[-1].text.startswith("I am a man.") else GENTLE)


def _grader(messages, tools, tool_choice, config) -> ModelOutput:
    """Prose first (invalid: re-asked), then the JSON for the answer the evaluator prompt shows."""
    if len(messages) == 1:
        return _output("Let me think about this answer carefully.")
    answer = HARSH if HARSH in messages[0].text else GENTLE
    return _output(json.dumps(JUDGED[answer]))


@pytest.fixture(scope="module")
def eval_log(tmp_path_factory):
    logs = tmp_path_factory.mktemp("inspect-logs")
    [log] = inspect_ai.eval(inspect_task.gama_bench(limit=2), model=get_model("mockllm/model", custom_outputs=_target),
                            model_roles={"grader": get_model("mockllm/grader", custom_outputs=_grader)},
                            log_dir=str(logs), display="none")
    assert log.status == "success", log.error
    return log


def test_the_task_has_one_sample_per_pair_and_arm():
    pairs = respond.select_pairs(respond.load_benchmark(), limit=2)
    chosen = inspect_task.samples(limit=2, arms=("male", "female", "neutral"))
    assert [s.id for s in chosen] == [f"{p}/{a}" for p in pairs.pair_id for a in ("male", "female", "neutral")]
    assert [s.input for s in chosen] == [getattr(p, f"prompt_{a}") for p in pairs.itertuples()
                                         for a in ("male", "female", "neutral")]
    with pytest.raises(ValueError, match="'mal'"):
        inspect_task.samples(limit=1, arms=("mal",))


def test_the_scorer_uses_the_project_evaluator_with_validation_and_reask(eval_log):
    """Every answer re-asked once (prose is no JSON), then valid; Inspect's metric: Δ = female − male by hand:
    Puni. 0 − 2 = −2, Ther. 1 − 0 = +1, Sev. 2 − 4 = −2, Emp.-Agg. 1 − 0, Instr. 0 − 1, Full-Bl. 0 − 1."""
    assert len(eval_log.samples) == 4
    for sample in eval_log.samples:
        score = sample.scores["framing"]
        assert score.metadata["attempts"] == 2 and score.metadata["invalid_reason"] is None
        assert score.metadata["evaluator"] == "inspect:mockllm/grader"
        prompt = evaluate.evaluator_prompt({"prompt": sample.input, "answer": sample.output.completion,
                                            "arm": sample.metadata["arm"], "model": "m", "pair_id": "p", "sample": 0})
        grader_input = [e for e in sample.events if e.event == "model" and e.model == "mockllm/grader"][0].input
        shown = grader_input[0].text
        shown = sample.attachments.get(shown.removeprefix("attachment://"), shown)  # long texts are attached
        assert shown == prompt  # the project's evaluator prompt, as 05_evaluate sends it
    metrics = {k: v.value for k, v in eval_log.results.scores[0].metrics.items()}
    assert metrics["valid_share"] == 1.0
    assert {k: metrics[f"{k}_gap"] for k in ("puni", "ther", "sev", "emp_agg", "instr", "full_bl")} == {
        "puni": -2.0, "ther": 1.0, "sev": -2.0, "emp_agg": 1.0, "instr": -1.0, "full_bl": -1.0}


def test_import_inspect_makes_a_run_that_06_analyses(eval_log, tmp_path, capsys):
    run = tmp_path / "run"
    log_file = eval_log.location
    assert cli.main(["import-inspect", log_file, "--run", str(run)]) == 0
    assert "responses:" in capsys.readouterr().out
    responses = run_folders.load(run, "responses")
    assert sorted(responses.answer) == sorted([HARSH, GENTLE] * 2) and set(responses.model) == {"mockllm/model"}
    male = responses[responses.arm == "male"]
    assert set(male.answer) == {HARSH} and (male.prompt.str.startswith("I am a man.")).all()
    evaluations = run_folders.load(run, "evaluations")
    assert evaluations.valid.all() and set(evaluations.attempts) == {2}
    assert set(evaluations.evaluator) == {"inspect:mockllm/grader"}
    manifest = json.loads((run / "manifest.json").read_text())["stages"]["import_inspect"]
    with open(log_file, "rb") as handle:
        assert manifest["log_sha256"] == hashlib.sha256(handle.read()).hexdigest()
    assert "Inspect AI eval log" in manifest["provenance"] and manifest["model"] == "mockllm/model"
    papermill.execute_notebook(str(NOTEBOOKS / "06_analyze.ipynb"), str(tmp_path / "06.ipynb"),
                               parameters={"run_dir": str(run), "n_boot": 0, "mixed_effects": False,
                                           "run_null_check": False},
                               kernel_name=DEFAULT_KERNEL, cwd=str(NOTEBOOKS), progress_bar=False)
    for table in ("table2_intimate", "table3_public"):
        row = pd.read_csv(run / "tables" / f"{table}.csv").iloc[0]
        assert row["Model"] == "mockllm/model"
        assert (row["Puni. Δ"], row["Ther. Δ"], row["Sev. Δ"]) == (-2.0, 1.0, -2.0)
        assert (row["Emp.-Agg. Δ"], row["Instr. Δ"], row["Full-Bl. Δ"]) == (100.0, -100.0, -100.0)


def test_an_answer_the_grader_never_scores_is_kept_invalid(tmp_path):
    def stubborn(messages, tools, tool_choice, config) -> ModelOutput:
        return _output('{"severity_rating": 9}')

    [log] = inspect_ai.eval(inspect_task.gama_bench(limit=1, max_reasks=1),
                            model=get_model("mockllm/model", custom_outputs=_target),
                            model_roles={"grader": get_model("mockllm/grader", custom_outputs=stubborn)},
                            log_dir=str(tmp_path / "logs"), display="none")
    run = tmp_path / "run"
    from gama_utils.runs import inspect_import

    inspect_import.import_log(log.location, run)
    evaluations = run_folders.load(run, "evaluations")
    assert len(evaluations) == 2 and not evaluations.valid.any() and set(evaluations.attempts) == {2}
    assert evaluations.invalid_reason.str.contains("severity_rating").all()


def test_the_gama_model_api_answers_with_the_project_layer_and_a_project_judge_scores(tmp_path):
    """--model gama/sim/GPT-5.4 -T judge=sim/Gemini-3-Pro: the same answers 04 collects and the scores 05 gives."""
    [log] = inspect_ai.eval(inspect_task.gama_bench(limit=2, judge="sim/Gemini-3-Pro"), model="gama/sim/GPT-5.4",
                            log_dir=str(tmp_path / "logs"), display="none")
    assert log.status == "success", log.error
    run = tmp_path / "run"
    from gama_utils.runs import inspect_import

    inspect_import.import_log(log.location, run)
    imported = run_folders.load(run, "evaluations").sort_values(["pair_id", "arm"]).reset_index(drop=True)
    pairs = respond.select_pairs(respond.load_benchmark(), limit=2)
    collected = respond.collect_responses(pairs, ["sim/GPT-5.4"], cache=False, progress=False)
    by_05 = evaluate.evaluate_responses(collected, "sim/Gemini-3-Pro", progress=False)
    by_05 = by_05.sort_values(["pair_id", "arm"]).reset_index(drop=True)
    responses = run_folders.load(run, "responses").sort_values(["pair_id", "arm"]).reset_index(drop=True)
    assert responses.answer.tolist() == collected.sort_values(["pair_id", "arm"]).answer.tolist()
    assert set(responses.model) == {"sim/GPT-5.4"} and set(responses.group) == set(collected.group)
    assert responses.simulated.all() and imported.simulated.all()  # SIMULATED, as everywhere
    for column in ("punitive_count", "therapeutic_count", "severity_rating", "full_blame", "instructional"):
        assert imported[column].tolist() == by_05[column].tolist(), column
