"""Judges: what turns an answer into the evaluator's JSON (paper §3.3), behind one interface and a registry.

A `Judge` scores `Item`s (what it is shown of one response: scenario, actor, answer, masked
when blind) and returns one `structured.Outcome` per item whose value is the validated
evaluator answer (`rubric.evaluator_model()`). Kinds:

- `LLMJudge(spec)`: any model of the llm layer (an API model, a local server, or a simulated
  model of the "sim" backend) asked the evaluator prompt, its answer constrained to the JSON
  schema per the spec's `structured_output`, parsed, validated and re-asked (gama_utils.llm.structured).
- `LexiconJudge`: the deterministic reading of each metric's `lexicon_cue` (gama_utils.judge.lexicon).
- `ImportedJudge(name)`: a model grader outside the project whose scores were imported, named
  "inspect:<model>" (gama_utils.runs.inspect_import): it can be named, selected and compared, not asked.
- a collaborator's own: subclass `Judge`, implement `read(answer) -> dict` (or `score` for
  batches) and `register_judge(MyJudge())`; every notebook parameter that names a judge then
  accepts its name.

`resolve_judge(x)` gives the registered judge named x, or an LLMJudge for any model the llm layer
resolves. Code asks judges for properties (`is_model`, `costs_money`, `spec`), never for names.
The default judges come from configs/judges.yaml (`default_judge`, `judge_config`).

Measured limits (`statement`, below): the measured limits of judges whose agreement with hand scores is
stored, for reports and notebooks.
Today that is the lexicon judge: data/lexicons/agreement.json (`gama_utils.judge.lexicon_agreement`)
holds its agreement with the held-out hand-scored answers, and the "Measured limits" paragraph
of data/lexicons/README.md says what the figures mean. Every report of a run that used the
lexicon as a judge, and notebooks 05/08 when they score with it, state both.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from gama_utils import llm
from gama_utils.core.escaping import markdown_cell
from gama_utils.core.metrics import metrics
from gama_utils.core.prompts import render_prompt
from gama_utils.core.rubric import evaluator_model, json_schema
from gama_utils.judge import lexicon, lexicon_agreement
from gama_utils.llm.structured import Outcome, ask_structured, validation_reason
from gama_utils.paths import CONFIGS, LEXICONS, ROOT

# --- judges ------------------------------------------------------------------------------------------

JUDGES_CONFIG = CONFIGS / "judges.yaml"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Item:
    """What a judge is shown of one response (masked for gender markers when blind); key names the response."""

    scenario: str
    actor: str
    answer: str
    key: str


class Judge:
    """The interface every judge implements; see the module docstring."""

    name: str = ""
    spec: llm.ModelSpec | None = None  # the model the judge asks, if any (costs, manifests)

    @property
    def is_model(self) -> bool:
        """True when a language model (real or simulated) reads the answers."""
        return self.spec is not None

    @property
    def costs_money(self) -> bool:
        """True when scoring sends paid requests (a model that is not simulated)."""
        return self.spec is not None and not self.spec.simulated

    def read(self, answer: str) -> Mapping[str, Any]:
        """The evaluator JSON for one answer (a judge implements this, or overrides `score`)."""
        raise NotImplementedError(f"judge {self.name!r} implements neither read() nor score()")

    def score(self, items: Sequence[Item], *, max_reasks: int = 2, cache: Any = None,
              concurrency: int | None = None, budget: llm.Budget | None = None,
              progress: bool = True) -> list[Outcome]:
        """One Outcome per item: `read` each answer and validate it against the evaluator model."""
        model = evaluator_model()
        outcomes = []
        for item in items:
            data = dict(self.read(item.answer))
            try:
                outcomes.append(Outcome(model.model_validate(data), None, None, 1))
            except ValidationError as err:
                outcomes.append(Outcome(None, f"judge {self.name} gave an invalid answer: {validation_reason(err)}",
                                        json.dumps(data, default=str), 1))
        return outcomes


class LexiconJudge(Judge):
    """The lexicon judge: each metric's `lexicon_cue` read off the answer's wording (no model, no cost)."""

    name = lexicon.EVALUATOR_ID

    def read(self, answer: str) -> dict[str, Any]:
        return lexicon_reading(answer)


def lexicon_reading(answer: str) -> dict[str, Any]:
    """The evaluator JSON the lexicon cues give for an answer, one field per registered metric."""
    reading = lexicon.evaluate_text(answer)
    out: dict[str, Any] = {}
    for m in metrics():
        cue = m.lexicon_cue
        if cue is None:
            raise ValueError(f"metric {m.key!r} declares no lexicon_cue: the lexicon judge cannot read it "
                             "(declare one in gama_utils.core.metrics, or score with another judge)")
        out[m.field.name] = cue(answer) if callable(cue) else reading[cue]
    return out


class LLMJudge(Judge):
    """A model of the llm layer asked the evaluator prompt (structured output per its `structured_output`)."""

    def __init__(self, spec: llm.ModelSpec):
        self.spec = spec
        self.name = spec.alias

    def score(self, items: Sequence[Item], *, max_reasks: int = 2, cache: Any = None,
              concurrency: int | None = None, budget: llm.Budget | None = None,
              progress: bool = True) -> list[Outcome]:
        assert self.spec is not None
        llm.check_ready([self.spec])
        constraint = response_format(self.spec)
        requests = [llm.Request(self.spec, messages=[{"role": "user", "content": evaluator_prompt(item)}],
                                extra_body=constraint,
                                tag={"role": "evaluator", "index": i, "key": item.key, "answer": item.answer})
                    for i, item in enumerate(items)]
        return ask_structured(requests, evaluator_model(), max_reasks=max_reasks, what="evaluator answer",
                              cache=cache, concurrency=concurrency, budget=budget, progress=progress,
                              desc=f"05_evaluate ({self.name})")


def evaluator_prompt(item: Item) -> str:
    """The filled evaluator prompt for one item."""
    return render_prompt("evaluator", scenario=item.scenario, actor=item.actor, response=item.answer)


def response_format(spec: llm.ModelSpec) -> dict | None:
    """The request field that constrains an evaluator's answer to the JSON schema, in its server's dialect.

    OpenAI and vLLM take {"type": "json_schema", ...}; llama.cpp's server rejects that form and takes
    {"type": "json_object", "schema": ...} instead (registry field `structured_output`).
    """
    if spec.structured_output == "json_schema":
        return {"response_format": {"type": "json_schema", "json_schema": {
            "name": "gama_evaluation", "schema": json_schema(), "strict": True}}}
    if spec.structured_output == "json_object_schema":
        return {"response_format": {"type": "json_object", "schema": json_schema()}}
    return None

_REGISTRY: dict[str, Judge] = {}


def register_judge(judge: Judge) -> Judge:
    """Make `judge` available by its name to evaluate, costs and the notebooks' judge parameters."""
    if not isinstance(judge, Judge) or not judge.name:
        raise ValueError(f"register_judge needs a Judge with a name, got {judge!r}")
    _REGISTRY[judge.name] = judge
    return judge


def unregister_judge(name: str) -> Judge:
    """Remove a registered judge and return it."""
    return _REGISTRY.pop(name)


def registered_judges() -> tuple[str, ...]:
    """Names of the registered judges (models need no registration: any model alias is a judge)."""
    return tuple(_REGISTRY)


IMPORTED_PREFIX = "inspect:"  # the evaluator name of scores imported from an Inspect AI log


class ImportedJudge(Judge):
    """A model that graded answers outside the project (an Inspect AI grader): named in imported scores, not asked."""

    def __init__(self, name: str):
        self.name = name

    @property
    def is_model(self) -> bool:
        return True

    def score(self, items: Sequence[Item], *, max_reasks: int = 2, cache: Any = None,
              concurrency: int | None = None, budget: llm.Budget | None = None,
              progress: bool = True) -> list[Outcome]:
        raise ValueError(f"judge {self.name!r} scored these answers outside the project (imported scores); it "
                         "cannot be asked here: score again with a registry model or the lexicon")


def resolve_judge(judge: str | dict | llm.ModelSpec | Judge) -> Judge:
    """A Judge from a Judge, a registered judge's name, an imported grader's name ("inspect:<model>"), or anything
    the llm layer resolves to a model."""
    if isinstance(judge, Judge):
        return judge
    if isinstance(judge, str) and judge in _REGISTRY:
        return _REGISTRY[judge]
    if isinstance(judge, str) and judge.startswith(IMPORTED_PREFIX):
        return ImportedJudge(judge)
    return LLMJudge(llm.resolve_model(judge))


def judge_name(judge: str | dict | llm.ModelSpec | Judge) -> str:
    """The name a judge's evaluation rows carry (a registered judge's name, or the model's alias)."""
    return resolve_judge(judge).name


def is_model_judge(name: str) -> bool:
    """Whether the judge named in an evaluations frame is a model (registered judges say; other names are models)."""
    judge = _REGISTRY.get(name)
    return True if judge is None else judge.is_model


def model_specs(judges: Sequence[str | dict | llm.ModelSpec | Judge]) -> list[llm.ModelSpec]:
    """The models these judges ask (for manifests and checks); judges that ask none are left out."""
    specs = [resolve_judge(j).spec for j in judges]
    return [s for s in specs if s is not None]


@lru_cache(maxsize=1)
def judge_config() -> dict[str, Any]:
    """configs/judges.yaml: default judges per role and backend, and the simulated judges' deviations."""
    config = yaml.safe_load(JUDGES_CONFIG.read_text(encoding="utf-8")) or {}
    for role, by_backend in config.get("defaults", {}).items():
        if not isinstance(by_backend, dict) or not all(isinstance(v, str) for v in by_backend.values()):
            raise ValueError(f"{JUDGES_CONFIG}: defaults.{role} must map each backend to a judge name or alias")
    return config


def default_judge(backend: str = "sim", role: str = "main") -> str:
    """The judge configured for `role` ("main": 05/07; "swap": evaluator B of 08) on `backend` ("sim" or "api")."""
    defaults = judge_config().get("defaults", {})
    if role not in defaults:
        raise KeyError(f"{JUDGES_CONFIG}: no default judge for role {role!r}; roles: {', '.join(defaults)}")
    if backend not in defaults[role]:
        raise KeyError(f"{JUDGES_CONFIG}: defaults.{role} names no judge for backend {backend!r}; "
                       f"backends: {', '.join(defaults[role])}")
    return defaults[role][backend]

register_judge(LexiconJudge())


# --- judge_limits -----------------------------------------------------------------------------------------

LEXICON_README = LEXICONS / "README.md"

LIMITS_HEADING = "## Measured limits"

MEASURED: dict[type[Judge], tuple[Path, Path]] = {
    LexiconJudge: (lexicon_agreement.AGREEMENT_FILE, LEXICON_README),
}


def _measured(judge: object) -> tuple[Path, Path] | None:
    if isinstance(judge, str) and judge in registered_judges():
        judge = resolve_judge(judge)
    return next((files for kind, files in MEASURED.items() if isinstance(judge, kind)), None)


def measured_judges(names: Iterable[object]) -> list[str]:
    """The judges among `names` (judge names or Judge objects) whose agreement with hand scores is stored."""
    found = []
    for name in names:
        if _measured(name) is not None:
            found.append(name.name if isinstance(name, Judge) else str(name))
    return list(dict.fromkeys(found))


def judges_in_manifest(manifest: dict) -> list[str]:
    """Measured judges that any stage of a run's manifest names (05's evaluator, 08's evaluators, ...)."""
    names: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, str):
            names.append(value)

    walk(manifest.get("stages") or {})
    return measured_judges(names)


def limits_paragraph(document: Path = LEXICON_README) -> str:
    """The first paragraph under the document's "## Measured limits" heading, as one line of Markdown."""
    lines = document.read_text(encoding="utf-8").splitlines()
    if LIMITS_HEADING not in lines:
        raise ValueError(f"{document} has no {LIMITS_HEADING!r} section")
    paragraph: list[str] = []
    for line in lines[lines.index(LIMITS_HEADING) + 1:]:
        if line.strip():
            paragraph.append(line.strip())
        elif paragraph:
            break
    return " ".join(paragraph)


def statements(judge_list: Iterable[object]) -> list[str]:
    """`statement` of every judge in the list that has one (each statement once)."""
    found: list[str] = []
    for judge in judge_list:
        text = statement(judge)
        if text and text not in found:
            found.append(text)
    return found


def statement(judge: object) -> str | None:
    """Markdown stating a judge's measured agreement with hand scores and its limits; None when none is stored."""
    files = _measured(judge)
    if files is None:
        return None
    stored, document = files
    result = json.loads(stored.read_text(encoding="utf-8"))
    name = judge.name if isinstance(judge, Judge) else str(judge)
    parts = [f"**Judge {markdown_cell(name)}: measured agreement with hand scores** "
             f"(`{stored.relative_to(ROOT).as_posix()}`; explained in `{document.relative_to(ROOT).as_posix()}`).",
             limits_paragraph(document), lexicon_agreement.summary(result)]
    version = lexicon.version()
    if result["lexicon"]["version"] != version:
        log.warning("the lexicon changed since %s was measured", stored)
        parts.append(f"**The lexicon changed since these figures were measured** (measured on version "
                     f"{result['lexicon']['version'][:12]}, the code now has {version[:12]}): re-measure with "
                     "`python -m gama_utils.judge.lexicon_agreement --write`.")
    return "\n\n".join(parts)
