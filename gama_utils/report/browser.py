"""The answer browser: one self-contained offline page per run (<run>/browser.html) with every pair, answer and score.

`browser_data` turns the run's pairs, responses and evaluations into one compact JSON object (pairs, models
and judges listed once, answers and scores by index); `build_browser` writes it, gzip-compressed and
base64-encoded, into report/jinja/browser.html.j2. The page decompresses it in the browser
(DecompressionStream), filters by model, track, dimension, severity, arm and judge, and shows a page of
pairs at a time (so 50,000 answers do not freeze it): the two or three prompts and answers side by side,
each judge's JSON, and the terms the judge listed marked in the answer. Every text reaches the page
through textContent, never as markup. `python -m gama_utils.report.browser <run>` builds it.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import sys
from pathlib import Path

import pandas as pd

from gama_utils.core.metrics import metric, metric_keys
from gama_utils.core.run_folders import atomic_write, load, run_dir
from gama_utils.report import headline
from gama_utils.report.run_report import BROWSER_FILE, environment

__all__ = ["browser_data", "build_browser", "main"]

TEMPLATE = "browser.html.j2"
ARM_ORDER = ("female", "male", "neutral")
PAIR_FIELDS = headline.PAIR_FIELDS
ANSWER_KEY = ["pair_id", "model", "arm", "sample"]
# Shown with the pair or the answer already; the judge's JSON shows the rest of its row.
SHOWN_ELSEWHERE = {*ANSWER_KEY, "track", "dimension", "severity", "style", "evaluator", "blind", "group",
                   "simulated", "prompt", "prompt_hash"}
PAGE_SIZE = 20


def judge_label(evaluator: str, blind: bool) -> str:
    """The judge as the page names it: the evaluator, "(blind)" when it scored with gender markers masked."""
    return f"{evaluator} (blind)" if blind else str(evaluator)


def browser_data(pairs: pd.DataFrame, responses: pd.DataFrame, evaluations: pd.DataFrame, run: str = "",
                 simulated: bool = False) -> dict:
    """The page's data: pairs, models, judges, answers [pair, model, arm, sample, answer, status] and scores.

    `scores` are [answer index, judge index, the judge's row as JSON text]; an evaluation of no answer in
    `responses` is left out. `terms` maps a metric label to the evaluator field listing its terms.
    """
    prompts = [c for c in (f"prompt_{arm}" for arm in ARM_ORDER) if c in pairs.columns]
    pair_rows = pairs[[*PAIR_FIELDS, *prompts]].drop_duplicates("pair_id")
    pair_index = {p: i for i, p in enumerate(pair_rows["pair_id"])}
    answers = responses[responses["pair_id"].isin(pair_index)]
    models = list(dict.fromkeys(answers["model"].astype(str)))
    model_index = {m: i for i, m in enumerate(models)}
    status = answers["answer_status"] if "answer_status" in answers.columns else pd.Series("", index=answers.index)
    answer_rows = [[pair_index[p], model_index[str(m)], str(a), int(s), "" if t is None else str(t),
                    "" if st is None or st != st else str(st)]
                   for p, m, a, s, t, st in zip(answers["pair_id"], answers["model"], answers["arm"],
                                                answers["sample"], answers["answer"], status)]
    answer_index = {(r[0], r[1], r[2], r[3]): i for i, r in enumerate(answer_rows)}
    judges: list[str] = []
    score_rows = []
    if len(evaluations):
        blind = evaluations["blind"].astype(bool) if "blind" in evaluations.columns else False
        labels = [judge_label(e, b) for e, b in zip(evaluations["evaluator"],
                                                    blind if isinstance(blind, pd.Series) else [False] * len(
                                                        evaluations))]
        judges = list(dict.fromkeys(labels))
        judge_index = {j: i for i, j in enumerate(judges)}
        shown = [c for c in evaluations.columns if c not in SHOWN_ELSEWHERE]
        for label, row in zip(labels, evaluations[[*ANSWER_KEY, *shown]].to_dict("records")):
            key = (pair_index.get(row["pair_id"]), model_index.get(str(row["model"])), str(row["arm"]),
                   int(row["sample"]))
            if key in answer_index:
                body = {c: row[c] for c in shown}
                score_rows.append([answer_index[key], judge_index[label],
                                   json.dumps(body, ensure_ascii=False, default=str)])
    terms = {metric(k).label: metric(k).field.name for k in metric_keys() if metric(k).field.type == "terms"}
    return {"run": run, "simulated": bool(simulated), "page_size": PAGE_SIZE, "arms": list(ARM_ORDER),
            "pair_fields": [*PAIR_FIELDS, *prompts], "pairs": pair_rows.astype(object).where(pair_rows.notna(), None)
            .values.tolist(), "models": models, "judges": judges, "answers": answer_rows, "scores": score_rows,
            "terms": terms}


def encode(data: dict) -> str:
    """The data as base64 of gzip-compressed JSON (only [A-Za-z0-9+/=]: safe inside a script element)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
    return base64.b64encode(gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0)).decode("ascii")


def frames(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The run's pairs (pairs.jsonl, else as its answers carry them), every responses*.jsonl and every
    evaluations*.jsonl (empty frames for missing ones)."""
    def every(prefix: str) -> pd.DataFrame:
        names = sorted(p.stem for p in folder.glob(f"{prefix}*.jsonl"))
        loaded = [load(folder, name) for name in names]
        loaded = [f for f in loaded if len(f)]
        return pd.concat(loaded, ignore_index=True) if loaded else pd.DataFrame(columns=ANSWER_KEY)

    responses = every("responses")
    evaluations = every("evaluations")
    if "answer" not in responses.columns:
        responses = pd.DataFrame(columns=[*ANSWER_KEY, "answer"])
    if "evaluator" not in evaluations.columns:
        evaluations = pd.DataFrame(columns=[*ANSWER_KEY, "evaluator", "blind"])
    pairs = load(folder, "pairs") if (folder / "pairs.jsonl").exists() else headline.pairs_from_responses(responses)
    return pairs, responses, evaluations


def build_browser(run: str | Path) -> Path:
    """Write <run>/browser.html (self-contained, offline) from the run's pairs, responses and evaluations; returns
    its path (a run with no answers yet gets a page that says so)."""
    folder = run_dir(run)
    pairs, responses, evaluations = frames(folder)
    simulated = any(bool(f["simulated"].astype(bool).any()) for f in (responses, evaluations)
                    if "simulated" in f.columns and len(f))
    data = browser_data(pairs, responses, evaluations, folder.name, simulated)
    page = environment().get_template(TEMPLATE).render(
        name=folder.name, data=encode(data), simulated=simulated, answers=len(data["answers"]),
        pairs=len(data["pairs"]))
    return atomic_write(folder / BROWSER_FILE, page)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gama_utils.report.browser", description=build_browser.__doc__)
    parser.add_argument("run", help="run folder, or a run name under outputs/runs/")
    print(build_browser(parser.parse_args(argv).run))
    return 0


if __name__ == "__main__":
    sys.exit(main())
