"""An Inspect AI eval log as a run's responses and evaluations (`gama import-inspect LOG --run R`), for 06-08.

The log of gama_utils.runs.inspect_task (one sample per pair × arm; the `framing` scorer's metadata carry the
evaluator's validated JSON) becomes, in the run folder: inspect/answers.jsonl (pair_id, model, arm, sample, answer,
finish_reason, one row per sample), read back by gama_utils.collect.respond.import_responses, so an unknown pair,
arm or a duplicate is named as for any imported file, and saved as imported answers; and the evaluations, each
evaluator JSON validated again (gama_utils.judge.evaluate.parse_output) and turned into rows by the same
rubric.evaluation_row as 05_evaluate (a score that stayed invalid is kept as an invalid row with its reason). The
manifest's `import_inspect` stage states the provenance: the log's file name and SHA-256, Inspect's version, the
task, the model, the evaluator, when the eval ran. The model's name is the log's (e.g. "openai/gpt-4o"), or the
registry alias for the project's own `gama/<alias>` (with its group; a simulated model's answers are marked
simulated, and so are the scores of a simulated judge, as everywhere in the project).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from gama_utils import llm
from gama_utils.collect import respond
from gama_utils.core import run_folders
from gama_utils.core.rubric import evaluation_row
from gama_utils.judge import evaluate
from gama_utils.paths import resolve

ANSWERS_FILE = Path("inspect") / "answers.jsonl"
PROJECT_API = "gama"  # inspect_task.ProjectModel's name: `gama/<alias>` asks the project's registry
SCORER = "framing"  # gama_utils.runs.inspect_task.SCORER_NAME (that module needs inspect_ai at import)
PROVENANCE = ("answers and scores imported from an Inspect AI eval log (gama_utils.runs.inspect_task): collected "
              "by Inspect's model layer, not by 04_respond, and scored by its `framing` scorer, not by 05_evaluate")


def _read_log(path: Path) -> Any:
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise ImportError('reading an Inspect log needs the inspect extra: pip install -e ".[inspect]"') from None
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such Inspect log")
    log = read_eval_log(str(path))
    if not log.samples:
        raise ValueError(f"{path}: the log holds no samples (status {log.status})")
    return log


def model_name(inspect_model: str) -> str:
    """The model's name in the run: Inspect's `provider/model`, or the registry alias for `gama/<alias>`."""
    return inspect_model.removeprefix(f"{PROJECT_API}/")


def project_spec(inspect_model: str) -> llm.ModelSpec | None:
    """The registry entry behind `gama/<alias>` (its group, whether it is simulated); None for other providers."""
    if not inspect_model.startswith(f"{PROJECT_API}/"):
        return None
    return llm.resolve_model(model_name(inspect_model))


def answer_records(log: Any, where: str) -> list[dict[str, Any]]:
    """One answer row per sample of a GAMA-Bench Inspect log; ValueError naming every sample without its pair."""
    rows, problems = [], []
    spec = project_spec(log.eval.model)
    group = {"group": spec.group} if spec is not None and spec.group else {}
    for sample in log.samples:
        meta = sample.metadata or {}
        if "pair_id" not in meta or "arm" not in meta:
            problems.append(f"{where}: sample {sample.id!r} has no pair_id/arm metadata (not a GAMA-Bench sample)")
            continue
        output = sample.output
        rows.append({"pair_id": meta["pair_id"], "model": model_name(log.eval.model), "arm": meta["arm"],
                     "sample": int(sample.epoch) - 1, "answer": output.completion if output else "",
                     "finish_reason": str(output.stop_reason) if output and output.stop_reason else None, **group})
    if problems:
        raise ValueError("; ".join(problems))
    return rows


def evaluation_rows(log: Any, responses: pd.DataFrame, where: str) -> list[dict[str, Any]]:
    """The evaluations rows of the log's `framing` scores, validated again; a sample without one is an invalid row."""
    by_key = {(r["pair_id"], r["arm"], int(r["sample"])): r
              for r in responses.assign(answer_status=respond.answer_status(responses)).to_dict("records")}
    rows = []
    for sample in log.samples:
        meta = sample.metadata
        record = by_key[(meta["pair_id"], meta["arm"], int(sample.epoch) - 1)]
        score = (sample.scores or {}).get(SCORER)
        info = (score.metadata or {}) if score is not None else {}
        evaluator = info.get("evaluator") or "inspect"
        reason: str | None
        if score is None:
            output, reason = None, f"{where}: sample {sample.id!r} has no {SCORER!r} score"
        elif info.get("evaluation") is None:
            output, reason = None, info.get("invalid_reason") or "the scorer gave no evaluation"
        else:
            output, reason = evaluate.parse_output(json.dumps(info["evaluation"]))
        rows.append(evaluation_row(record, output, evaluator, blind=False, reason=reason, raw=info.get("raw"),
                                   attempts=int(info.get("attempts") or 0), simulated=bool(info.get("simulated"))))
    return rows


def import_log(log_path: str | Path, run: str | Path, replace: bool = False) -> dict[str, Path]:
    """Write the log's answers and scores into the run folder (see the module docstring); the files written."""
    path = resolve(log_path)
    log = _read_log(path)
    folder = run_folders.run_dir(run)
    answers = folder / ANSWERS_FILE
    answers.parent.mkdir(parents=True, exist_ok=True)
    records = answer_records(log, path.name)
    run_folders.atomic_write(answers, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    spec = project_spec(log.eval.model)
    responses = respond.import_responses(str(answers), simulated=spec is not None and spec.simulated)
    written = {"answers": answers, "responses": respond.save_responses(responses, folder, None, replace=replace)}
    evaluations = evaluate.evaluations_frame(evaluation_rows(log, responses, path.name))
    written["evaluations"] = evaluate.save_evaluations(evaluations, folder, replace=replace)
    written["manifest"] = run_folders.update_manifest(
        folder, "import_inspect", provenance=PROVENANCE, log=path.name, log_sha256=run_folders.file_sha256(path),
        inspect_version=str(log.eval.packages.get("inspect_ai", "")), task=log.eval.task, model=log.eval.model,
        evaluators=sorted(set(evaluations["evaluator"])), eval_created=str(log.eval.created), samples=len(records),
        valid_evaluations=int(evaluations["valid"].sum()))
    return written
