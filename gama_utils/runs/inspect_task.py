"""GAMA-Bench as an Inspect AI task (the `inspect` extra): `inspect eval gama_utils/runs/inspect_task.py --model M`.

One sample per pair × arm (male and female, optionally neutral), its input the arm's prompt, its metadata the pair
and its cell. The prompts go through Inspect's model layer (`generate()`, the paper's decoding: temperature 0.3,
top-p 0.95, 4,096 tokens, unless overridden on Inspect's command line). The scorer `framing` is model-graded with
the project's evaluator: the prompt of gama_utils.judge.evaluate.evaluator_prompt, the JSON schema of
gama_utils.core.rubric as Inspect's structured output, the same validation (evaluate.parse_output), the same
re-ask message (gama_utils.llm.structured.REASK_MESSAGE, up to `max_reasks`) and the same metric columns
(rubric.evaluation_row: listed terms the answer lacks are dropped and counted). The grader is Inspect's model role
`grader` (`--model-role grader=...`), else the model under evaluation; `-T judge=NAME` scores with one of the
project's judges instead (the lexicon, a registry alias, a simulated judge) through its own layer.
The model API `gama/<alias>` (registered with Inspect through the package's `inspect_ai` entry point) answers
with a model of the project's registry through its own LLM layer (cache, pacing, retries, the dollar-free
simulated backend): `--model gama/sim/GPT-5.4` runs offline; the registry entry's decoding is used, and a
benchmark prompt is asked exactly as 04_respond asks it (sample 0: every epoch gets the same cached answer).
The metric `framing_gaps` gives each metric's mean per arm and Δ = female − male over the answers scored; the
full analysis comes from `gama import-inspect LOG --run R` (gama_utils.runs.inspect_import) and 06-08.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import anyio
import pandas as pd
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageUser,
    GenerateConfig,
    Model,
    ModelAPI,
    ModelOutput,
    ModelUsage,
    ResponseSchema,
    get_model,
    modelapi,
)
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import TaskState, generate
from inspect_ai.tool import ToolChoice, ToolInfo
from inspect_ai.util import JSONSchema

from gama_utils import llm
from gama_utils.collect import respond
from gama_utils.core.metrics import metrics
from gama_utils.core.rubric import evaluation_row, json_schema
from gama_utils.judge import evaluate, judges
from gama_utils.llm.structured import REASK_MESSAGE

TASK_NAME = "gama_bench"
SCORER_NAME = "framing"
PAPER_DECODING = GenerateConfig(temperature=0.3, top_p=0.95, max_tokens=4096)  # paper Table 5
CELL_KEYS = ("track", "dimension", "severity", "style")


@modelapi(name="gama")
class ProjectModel(ModelAPI):
    """`gama/<alias>`: a registry model (configs/models.yaml, GAMA_MODELS) asked through gama_utils.llm."""

    def __init__(self, model_name: str, base_url: str | None = None, api_key: str | None = None,
                 config: GenerateConfig | None = None, **model_args: Any) -> None:
        super().__init__(model_name, base_url, api_key, [], config or GenerateConfig())
        self.spec = llm.resolve_model(model_name)
        self._pairs: pd.DataFrame | None = None
        self._prompts: dict[str, tuple[int, str]] = {}

    def _request(self, messages: list[dict[str, str]]) -> llm.Request:
        """A benchmark prompt is asked as 04_respond asks it (respond.build_requests: the same cache key and tag,
        so the same answer); any other conversation as it is."""
        if self._pairs is None:
            self._pairs = respond.load_benchmark()
            self._prompts = {getattr(p, f"prompt_{arm}"): (i, arm) for i, p in enumerate(self._pairs.itertuples())
                             for arm in respond.ARMS}
        found = self._prompts.get(messages[0]["content"]) if len(messages) == 1 else None
        if found is None:
            return llm.Request(self.spec, messages=messages)
        return respond.build_requests(self._pairs.iloc[[found[0]]], [self.spec], arms=(found[1],))[0]

    async def generate(self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice,
                       config: GenerateConfig) -> ModelOutput:
        """One answer through the project's LLM layer (in a worker thread: llm.run runs its own event loop)."""
        request = self._request([{"role": m.role, "content": m.text} for m in input])
        result = (await anyio.to_thread.run_sync(lambda: llm.run([request], progress=False)))[0]
        if result.error is not None:
            raise RuntimeError(f"{self.spec.alias}: {result.error}")
        output = ModelOutput.from_content(model=self.spec.alias, content=result.text or "",
                                          stop_reason="max_tokens" if result.finish_reason == "length" else "stop")
        tokens_in, tokens_out = result.input_tokens or 0, result.output_tokens or 0
        output.usage = ModelUsage(input_tokens=tokens_in, output_tokens=tokens_out, total_tokens=tokens_in + tokens_out)
        return output


def samples(limit: int | None = None, arms: tuple[str, ...] = ("male", "female"), track: str | None = None,
            pairs_path: str | None = None) -> list[Sample]:
    """One Sample per pair × arm of the benchmark (pairs chosen as 04_respond chooses them: respond.select_pairs)."""
    unknown = [arm for arm in arms if arm not in respond.ARMS]
    if unknown:
        raise ValueError(f"arms: {unknown} are not among {list(respond.ARMS)}")
    pairs = respond.select_pairs(respond.load_benchmark(pairs_path), track, None, None, limit)
    return [Sample(id=f"{pair.pair_id}/{arm}", input=getattr(pair, f"prompt_{arm}"),
                   metadata={"pair_id": pair.pair_id, "arm": arm, **{k: getattr(pair, k) for k in CELL_KEYS}})
            for pair in pairs.itertuples(index=False) for arm in arms]


def _record(state: TaskState) -> dict[str, Any]:
    """The response record the project's evaluator reads, from an Inspect sample's state."""
    meta = state.metadata
    return {"pair_id": meta["pair_id"], **{k: meta[k] for k in CELL_KEYS}, "model": str(state.model),
            "arm": meta["arm"], "sample": state.epoch - 1, "prompt": state.input_text,
            "answer": state.output.completion, "error": None, "simulated": False}


def _values(row: Mapping[str, Any]) -> dict[str, float | None]:
    """The per-answer metric values of an evaluations row (None where the evaluation is invalid)."""
    return {m.column: (None if row[m.column] is None or (isinstance(row[m.column], float) and math.isnan(row[m.column]))
                       else float(row[m.column])) for m in metrics()}


async def _ask_grader(grader: Model, prompt: str, max_reasks: int) -> tuple[Any, str | None, str | None, int]:
    """(validated output or None, reason it is invalid, last raw text, attempts): evaluate.parse_output on each
    answer, re-asked with REASK_MESSAGE as gama_utils.llm.structured.ask_structured does."""
    schema = ResponseSchema(name="gama_evaluation", json_schema=JSONSchema.model_validate(json_schema()), strict=True)
    messages: list[Any] = [ChatMessageUser(content=prompt)]
    attempt = 0
    while True:
        attempt += 1
        answer = await grader.generate(messages, config=GenerateConfig(response_schema=schema))
        raw = answer.completion
        output, reason = evaluate.parse_output(raw)
        if reason is None or attempt > max_reasks:
            return output, reason, raw, attempt
        messages += [ChatMessageAssistant(content=raw or ""), ChatMessageUser(content=REASK_MESSAGE.format(
            reason=reason))]


@metric
def framing_gaps() -> Metric:
    """Each metric's mean over the valid answers per arm, Δ = female − male, and the share of valid evaluations."""
    def compute(scores: list[SampleScore]) -> dict[str, float | None]:
        by_arm: dict[str, dict[str, list[float]]] = {}
        valid = 0
        for s in scores:
            arm = (s.sample_metadata or {}).get("arm", "?")
            values = s.score.value if isinstance(s.score.value, Mapping) else {}
            valid += any(v is not None for v in values.values())
            for column, value in values.items():
                if value is not None:
                    by_arm.setdefault(arm, {}).setdefault(column, []).append(float(value))
        out: dict[str, float | None] = {"valid_share": valid / len(scores) if scores else None}
        for m in metrics():
            means = {arm: sum(v) / len(v) for arm, columns in by_arm.items() if (v := columns.get(m.column))}
            out.update({f"{m.key}_{arm}": mean for arm, mean in sorted(means.items())})
            if "female" in means and "male" in means:
                out[f"{m.key}_gap"] = means["female"] - means["male"]
        return out
    return compute


@scorer(metrics=[framing_gaps()], name=SCORER_NAME)
def framing(judge: str | None = None, max_reasks: int = 2) -> Scorer:
    """The project's evaluator as a model-graded scorer (module docstring): one Score per answer, its value the
    metric values, its metadata the evaluations row the import reads back."""
    async def score(state: TaskState, target: Target) -> Score:
        record = _record(state)
        reason = evaluate.unscorable(record)
        name = judges.judge_name(judge) if judge else None
        simulated = False
        if reason is not None:
            output, raw, attempts = None, None, 0
        elif judge:
            item = evaluate.shown_item(record)
            outcome = (await anyio.to_thread.run_sync(lambda: judges.resolve_judge(judge).score(
                [item], max_reasks=max_reasks, progress=False)))[0]
            output, reason, raw, attempts = outcome.value, outcome.reason, outcome.raw, outcome.attempts
            simulated = outcome.simulated
        else:
            grader = get_model(role="grader", default=str(state.model))
            name = f"{judges.IMPORTED_PREFIX}{grader}"
            output, reason, raw, attempts = await _ask_grader(grader, evaluate.evaluator_prompt(record), max_reasks)
        row = evaluation_row(record, output, name or "inspect", blind=False, reason=reason, raw=raw, attempts=attempts)
        return Score(value=_values(row), answer=record["answer"], explanation=reason,
                     metadata={"evaluator": name, "attempts": attempts, "invalid_reason": reason, "raw": raw,
                               "simulated": simulated,
                               "evaluation": output.model_dump() if output is not None else None})
    return score


@task(name=TASK_NAME)
def gama_bench(limit: int | None = None, arms: str = "male,female", track: str | None = None,
               pairs_path: str | None = None, judge: str | None = None, max_reasks: int = 2) -> Task:
    """GAMA-Bench's mirrored pairs: `-T limit=N` pairs (round-robin over dimensions), `-T arms=male,female,neutral`,
    `-T track=intimate`, `-T judge=lexicon` (or a registry alias) instead of the grader model."""
    chosen = tuple(a.strip() for a in arms.split(",") if a.strip())
    return Task(dataset=MemoryDataset(samples(limit, chosen, track, pairs_path), name="gama_bench"),
                solver=generate(), scorer=framing(judge, max_reasks), config=PAPER_DECODING,
                metadata={"benchmark": "GAMA-Bench", "pairs_path": pairs_path, "arms": list(chosen)})
