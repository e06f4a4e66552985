"""Answers of another origin are never replaced silently: imported vs collected answers, another model set,
other settings, another benchmark file, another evaluator's scores. A resumed run of the same origin passes."""

import json

import pandas as pd
import papermill
import pytest

from gama_utils import llm
from gama_utils.collect import respond
from gama_utils.collect.respond import OriginError
from gama_utils.core import run_folders
from gama_utils.judge import evaluate
from gama_utils.paths import NOTEBOOKS

MODELS = ["sim/GPT-5.2", "sim/Qwen3.5"]


@pytest.fixture(scope="module")
def pairs():
    return respond.select_pairs(respond.load_benchmark(), limit=3)


@pytest.fixture
def collected(tmp_path, pairs):
    """A run whose responses 04_respond collected from two simulated models."""
    run = tmp_path / "run"
    frame = respond.collect_responses(pairs, MODELS, progress=False)
    respond.save_responses(frame, run, MODELS)
    return run, frame


def _imported(tmp_path, pairs, model="imported-model", answer="an answer written elsewhere"):
    path = tmp_path / f"{model.replace('/', '_')}.csv"
    pd.DataFrame([{"pair_id": p, "model": model, "arm": arm, "answer": answer}
                  for p in pairs.pair_id for arm in ("male", "female")]).to_csv(path, index=False)
    return respond.import_responses(str(path), pairs)


def test_a_resumed_run_of_the_same_origin_passes(collected, pairs):
    run, frame = collected
    respond.check_responses_origin(run, MODELS)
    respond.check_responses_origin(run, [*MODELS, "sim/GPT-5.4"])  # more models keep every answer there
    again = respond.collect_responses(pairs, MODELS, progress=False)
    respond.save_responses(again, run, MODELS)
    record = json.loads((run / respond.ORIGIN_FILE).read_text())
    assert sorted(record) == MODELS and record["sim/GPT-5.2"]["answers_sha256"] == respond.answers_fingerprint(
        frame[frame.model == "sim/GPT-5.2"])


def test_collecting_over_imported_answers_is_refused_and_says_how_to_replace(tmp_path, pairs):
    run = tmp_path / "run"
    imported = _imported(tmp_path, pairs)
    respond.save_responses(imported, run, None)
    with pytest.raises(OriginError) as caught:
        respond.check_responses_origin(run, MODELS)
    message = str(caught.value)
    assert "answers 04_respond did not collect here (imported or written by hand): 'imported-model' (6)" in message
    assert "Pass replace=True (the parameter `replace` of 04_respond, or --set replace=true)" in message
    respond.check_responses_origin(run, MODELS, replace=True)
    assert run_folders.load(run, "responses").answer.eq("an answer written elsewhere").all()


def test_another_model_set_is_refused(collected):
    run, _ = collected
    with pytest.raises(OriginError, match=r"answers of models this run does not ask \(another model set\): "
                                          r"'sim/Qwen3.5' \(6\)"):
        respond.check_responses_origin(run, ["sim/GPT-5.2"])


def test_other_settings_or_another_benchmark_file_are_refused(collected, tmp_path, pairs):
    run, _ = collected
    other = llm.resolve_model("sim/GPT-5.2").model_copy(update={"decoding": {"temperature": 1.0}})
    with pytest.raises(OriginError, match=r"answers collected with other settings: 'sim/GPT-5.2' \(6; decoding "
                                          r"\{.*\} → \{'temperature': 1.0\}\)"):
        respond.check_responses_origin(run, [other, "sim/Qwen3.5"])
    benchmark = tmp_path / "pairs.jsonl"
    pairs.head(2).to_json(benchmark, orient="records", lines=True)
    with pytest.raises(OriginError, match=r"answers collected on another benchmark file: 'sim/GPT-5.2' \(6\), "
                                          r"'sim/Qwen3.5' \(6\)"):
        respond.check_responses_origin(run, MODELS, pairs_path=str(benchmark))


def test_answers_edited_after_collection_are_refused(collected):
    run, frame = collected
    edited = frame.copy()
    edited.loc[0, "answer"] = "replaced by hand"
    run_folders.save(edited, run, "responses")  # around save_responses, as a hand edit would be
    with pytest.raises(OriginError, match=r"answers changed since 04_respond collected them \(imported or edited\): "
                                          r"'.*' \(6\)\."):
        respond.check_responses_origin(run, MODELS)


def test_imported_answers_may_be_added_but_never_replace_collected_ones(collected, tmp_path, pairs):
    run, frame = collected
    added = pd.concat([frame, _imported(tmp_path, pairs)], ignore_index=True)
    respond.save_responses(added, run, None)
    assert len(run_folders.load(run, "responses")) == len(frame) + 6
    clash = _imported(tmp_path, pairs, model="sim/GPT-5.2")
    with pytest.raises(OriginError, match=r"holds \d+ answers these imported answers would drop or replace"):
        respond.save_responses(clash, run, None)
    respond.save_responses(clash, run, None, replace=True)
    assert set(run_folders.load(run, "responses").model) == {"sim/GPT-5.2"}


def test_older_runs_fall_back_to_the_manifest_record(tmp_path, pairs):
    run = tmp_path / "run"
    run_folders.save(respond.collect_responses(pairs, MODELS, progress=False), run, "responses")
    run_folders.update_manifest(run, "04_respond", targets=[llm.resolve_model(m).public_dict() for m in MODELS],
                         benchmark_sha256=run_folders.file_sha256(respond.benchmark_file()))  # what 04 records
    origins = respond.collected_origins(run)
    assert sorted(origins) == MODELS
    respond.check_responses_origin(run, MODELS)
    with pytest.raises(OriginError, match="answers of models this run does not ask"):
        respond.check_responses_origin(run, MODELS[:1])


def test_another_evaluators_scores_are_never_replaced_silently(tmp_path):
    run = tmp_path / "run"
    rows = pd.DataFrame({"evaluator": ["gemini-3-pro"] * 4, "blind": [False, False, True, True]})
    run_folders.save(rows, run, "evaluations")
    evaluate.check_evaluations_origin(run, "gemini-3-pro")
    with pytest.raises(OriginError, match=r"holds scores of another evaluator \(4 by 'gemini-3-pro'\), which scoring "
                                          "with lexicon would replace"):
        evaluate.save_evaluations(pd.DataFrame({"evaluator": ["lexicon"]}), run)
    evaluate.save_evaluations(pd.DataFrame({"evaluator": ["lexicon"]}), run, replace=True)
    assert run_folders.load(run, "evaluations").evaluator.tolist() == ["lexicon"]


@pytest.mark.slow
def test_the_notebook_refuses_to_collect_over_imported_answers_before_sending(tmp_path, pairs):
    run = tmp_path / "run"
    respond.save_responses(_imported(tmp_path, pairs), run, None)
    before = (run / "responses.jsonl").read_bytes()
    with pytest.raises(papermill.PapermillExecutionError) as caught:
        papermill.execute_notebook(str(NOTEBOOKS / "04_respond.ipynb"), str(tmp_path / "04.ipynb"),
                                   parameters={"run_dir": str(run), "limit": 3}, kernel_name="gama-bench",
                                   progress_bar=False)
    assert caught.value.ename == "ParameterError" and "did not collect here" in caught.value.evalue
    assert (run / "responses.jsonl").read_bytes() == before
