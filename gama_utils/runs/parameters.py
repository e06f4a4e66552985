"""Notebook parameters: one typed schema per notebook, shared by the notebook, the profiles and `--set`.

Each schema's fields carry the default and the description of one parameter; the notebook's cell tagged
`parameters` is generated from it (gama_utils.runs.parameter_cells), so the two never drift. Values are
checked strictly: a whole number where one is expected (limit=1.5, seed="3" and limit=True are refused),
ranges (a negative limit, max_usd=-1), a list where one is expected, and credentials (gama_utils.core.credentials).
`python -m gama_utils.runs reproduce` checks every value of the profile and of `--set` before any notebook
runs; inside a notebook, its first line (`parameters.check("04_respond", globals())`) checks the values
papermill or JupyterLab gave it, and the names papermill injected that the notebook does not declare
(papermill itself only warns "Passed unknown parameter"), each with the closest known name.
"""

from __future__ import annotations

import ast
import contextlib
import difflib
import json
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, InstanceOf, ValidationError

from gama_utils.core import credentials, run_folders
from gama_utils.llm.registry import ModelSpec

ModelRef = str | dict[str, Any] | InstanceOf[ModelSpec]
Count = Annotated[int, Field(ge=1)]
Seed = Annotated[int, Field(ge=0)]
Usd = Annotated[float, Field(ge=0)]
Filter = str | list[str] | None
INJECTED_HEADER = "# Parameters\n"  # the first line of the cell papermill injects (its Python translator)


class ParameterError(ValueError):
    """One error listing every problem found in a set of parameters."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        listed = "\n- ".join(problems)
        super().__init__(f"{len(problems)} problem(s) with the parameters, nothing was run:\n- {listed}")


class NotebookParameters(BaseModel):
    """Parameters every notebook has."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    run_dir: str = Field("outputs/runs/offline", description="the run folder (under outputs/): every output of this "
                                                             "notebook is written here")

    def preflight(self) -> None:
        """Checks on the files the notebook will touch, before it does anything (the run folder's place)."""
        run_folders.run_dir(self.run_dir)

    def models(self) -> list[ModelSpec]:
        """The models this notebook will ask, targets and judges (none here; ConfigError for an unknown one)."""
        return []

    def after(self) -> tuple[str, ...] | None:
        """The notebooks of the same run whose files this one reads; None: every earlier one (the safe default).

        `gama reproduce` starts a notebook once these have finished, so independent ones run side by side.
        """
        return None

    def publishes(self) -> bool:
        """Whether it writes files outside its run that later notebooks read (then every later one waits for it)."""
        return False


class Generate(NotebookParameters):
    """01_generate."""

    generators: Annotated[list[ModelRef], Field(min_length=1)] = Field(
        ["sim/GPT-5.4", "sim/Gemini-3-Pro", "sim/Qwen3.5"],
        description="registry aliases or inline specs; sim/: offline")
    n_per_cell: Count | None = Field(None, description="candidates asked per cell (a positive int); None: as many as "
                                                       "the template bank holds there")
    templates_path: str | None = Field(None, description="a template .jsonl file or folder; None: data/templates")

    def models(self) -> list[ModelSpec]:
        """The generators 01 will ask."""
        from gama_utils import llm

        return [llm.resolve_model(m) for m in self.generators]

    def after(self) -> tuple[str, ...]:
        """The first notebook: it reads nothing of the run."""
        return ()


class Review(NotebookParameters):
    """02_review."""

    reviewers: Annotated[list[ModelRef], Field(min_length=2)] = Field(
        ["sim/GPT-5.4", "sim/Gemini-3-Pro", "sim/Qwen3.5"],
        description="registry aliases or inline specs; two models at least (none reviews its own generation)")
    templates_path: str | None = Field(None, description="the bank the simulated reviewers lint (a .jsonl file or "
                                                         "folder); None: data/templates")

    def models(self) -> list[ModelSpec]:
        """The reviewers 02 will ask."""
        from gama_utils import llm

        return [llm.resolve_model(m) for m in self.reviewers]

    def after(self) -> tuple[str, ...]:
        """It reviews 01's candidates."""
        return ("01_generate",)


class Compile(NotebookParameters):
    """03_compile."""

    compiler: ModelRef = Field("sim/DeepSeek-V4-Pro", description="registry alias (or inline spec) of the model that "
                                                                  "writes the posts")
    embedding_backend: Annotated[str, Field(pattern=r"^(tfidf|minilm|openai:.+)$")] = Field(
        "tfidf", description='within-cell near-duplicates: "tfidf" | "openai:<registry alias>" | "minilm"')
    dedup_threshold: Annotated[float, Field(gt=0, le=1)] | None = Field(
        None, description="within-cell cosine threshold; None: the backend's default (TF-IDF 0.60)")
    cross_bank_threshold: Annotated[float, Field(gt=0, le=1)] | None = Field(
        None, description="premise cosine across the whole bank; None: embeddings.CROSS_BANK_THRESHOLD (0.30)")
    screening_sheet: str | None = Field(None, description="a filled-in screening sheet (CSV; relative paths from the "
                                                          "repository root); None: none")
    publish: bool = Field(False, description="also copy the benchmark to data/gama_bench/ (refused when a grid cell is "
                                             "empty or templates dropped)")
    allow_drops: bool = Field(False, description="publish even when templates were dropped (each is listed in the "
                                                 "datasheet)")
    templates_path: str | None = Field(None, description="the bank the simulated compiler copies texts from (.jsonl "
                                                         "file or folder); None: data/templates")

    def models(self) -> list[ModelSpec]:
        """The compiler 03 will ask, and the embedding model when the backend is "openai:<alias>"."""
        from gama_utils import llm

        embedder = self.embedding_backend.partition("openai:")[2]
        return [llm.resolve_model(m) for m in (self.compiler, *([embedder] if embedder else []))]

    def after(self) -> tuple[str, ...]:
        """It compiles 02's reviewed candidates."""
        return ("02_review",)

    def publishes(self) -> bool:
        """With publish=True it replaces data/gama_bench/, which 04 and 07 read by default."""
        return self.publish


class _Paid(NotebookParameters):
    """Parameters of the notebooks that send requests (and may cost money)."""

    def preflight(self) -> None:
        """The run folder's place, then every model's environment variables (all missing ones in one ParameterError)."""
        from gama_utils.llm.registry import unset_variables

        super().preflight()
        problems = unset_variables(self.models())
        if problems:
            raise ParameterError(problems)

    backend: Literal["sim", "api"] = Field("sim", description='"sim": offline simulated models; "api": the paper\'s '
                                                              "models (keys from the environment)")
    concurrency: Count | None = Field(None, description="requests in flight per model (None: the layer's default, "
                                                        "adapting to the server)")
    max_requests: Count | None = Field(None, description="stop after this many API requests (None: no cap)")
    max_usd: Usd | None = Field(25.0, description="a hard cap on what this notebook spends; refused up front if the "
                                                  "estimate is higher (None: no cap)")


class Respond(_Paid):
    """04_respond."""

    target_models: list[ModelRef] | None = Field(
        None, description='None: the paper\'s ten models on `backend`; or aliases / inline specs, e.g. '
                          '[{"base_url": "http://localhost:8000/v1", "model": "Qwen/Qwen3-8B"}]')
    arms: Annotated[list[Literal["male", "female", "neutral"]], Field(min_length=1)] = Field(
        ["male", "female"], description='add "neutral" for the control arm')
    samples_per_prompt: Count = Field(1, description="answers per prompt (sample index 0, 1, ...)")
    pairs_path: str | None = Field(None, description="None: the shipped benchmark data/gama_bench/pairs.jsonl")
    track: Filter = Field(None, description="keep this track (or list of tracks); None: both")
    dimension: Filter = Field(None, description="keep this dimension (or list); None: all")
    severity: Filter = Field(None, description="keep this severity (or list: L1, L2, L3); None: all")
    limit: Count | None = Field(None, description="at most this many pairs (taken round-robin over dimensions); "
                                                  "None: all")
    seed: Seed = Field(0, description="the seed of the request order")
    max_tokens: Count | None = Field(None, description="stop after this many input + output tokens in all (None: no "
                                                       "cap)")
    replace: bool = Field(False, description="replace answers of another origin already in run_dir (imported ones, "
                                             "another model set or benchmark); False refuses")

    def preflight(self) -> None:
        """The run folder's place, and the answers already in it (refused when of another origin)."""
        from gama_utils.collect import respond

        super().preflight()
        respond.check_responses_origin(run_folders.run_dir(self.run_dir), self.targets(), self.pairs_path,
                                       self.replace)

    def targets(self) -> list[ModelRef]:
        """The target models as 04 reads them: target_models, or the paper's ten on `backend`."""
        from gama_utils.analysis import paper

        return list(self.target_models or paper.model_aliases(self.backend))

    def models(self) -> list[ModelSpec]:
        """The target models 04 will ask."""
        from gama_utils import llm

        return [llm.resolve_model(m) for m in self.targets()]

    def after(self) -> tuple[str, ...] | None:
        """The shipped benchmark needs no earlier notebook; a benchmark file given may be 03's, so then all."""
        return () if self.pairs_path is None else None


class Evaluate(_Paid):
    """05_evaluate."""

    backend: Literal["sim", "api"] = Field("sim", description='"sim": a simulated evaluator; "api": the paper\'s '
                                                              "evaluator (key from the environment)")
    evaluator: ModelRef | None = Field(None, description="None: the main judge of configs/judges.yaml on `backend`; "
                                                         'or an alias, inline spec, or "lexicon"')
    blind: bool = Field(False, description="score with every gender marker masked")
    also_blind: bool = Field(True, description="also score blinded, so evaluator and target bias can be told apart")
    max_reasks: Annotated[int, Field(ge=0)] = Field(2, description="re-asks of an invalid evaluator answer")
    replace: bool = Field(False, description="replace another evaluator's scores already in run_dir; False refuses")

    def judge(self) -> ModelRef:
        """The judge 05 scores with: `evaluator`, or the main judge of configs/judges.yaml on `backend`."""
        from gama_utils.judge import judges

        return self.evaluator or judges.default_judge(self.backend)

    def preflight(self) -> None:
        """The run folder's place, the keys, and the scores already in it (refused when another evaluator's)."""
        from gama_utils.judge import evaluate

        super().preflight()
        evaluate.check_evaluations_origin(run_folders.run_dir(self.run_dir), evaluate.evaluator_name(self.judge()),
                                          self.replace)

    def models(self) -> list[ModelSpec]:
        """The evaluator 05 will ask (none for the lexicon)."""
        from gama_utils.judge import judges

        return judges.model_specs([self.judge()])

    def after(self) -> tuple[str, ...]:
        """It scores 04's answers."""
        return ("04_respond",)


class Analyze(NotebookParameters):
    """06_analyze."""

    evaluator: ModelRef | None = Field(None, description='None: the run\'s sighted LLM evaluator (05_evaluate); or '
                                                         '"lexicon", an alias, ...')
    n_boot: Annotated[int, Field(ge=0)] = Field(2000, description="bootstrap resamples for the CIs (0: no CIs)")
    seed: Seed = Field(0, description="bootstrap seed")
    mixed_effects: bool = Field(True, description="beyond the paper: a mixed model per model with scenario random "
                                                  "intercepts (Puni., Ther., Sev.)")
    run_null_check: bool | None = Field(None, description="the zero-gap simulated model through this analysis; None: "
                                                          "in simulated runs with an offline judge")

    def after(self) -> tuple[str, ...]:
        """It analyses 05's evaluations (and 04's answers)."""
        return ("05_evaluate",)


class Ablation(_Paid):
    """07_ablation."""

    backend: Literal["sim", "api"] = Field("sim", description='"sim": simulated Qwen3 profiles (Tables 7-8); "api": '
                                                              "the registry's Qwen3 entries (vLLM)")
    variants: list[ModelRef] | None = Field(None, description="None: the paper's seven Qwen3 variants on `backend`; "
                                                              "or aliases / inline specs of one family, each with "
                                                              "family, size_b, post_training, thinking (and release) "
                                                              "fields")
    base_urls: dict[str, str] = Field({}, description="alias -> base URL, e.g. one vLLM server per variant")
    evaluator: ModelRef | None = Field(None, description="None: the main judge of configs/judges.yaml on `backend`; "
                                                         'or an alias, inline spec or "lexicon"')
    pairs_path: str | None = Field(None, description="None: the shipped benchmark data/gama_bench/pairs.jsonl")
    limit: Count | None = Field(None, description="at most this many pairs (taken round-robin over dimensions); "
                                                  "None: all")
    n_boot: Annotated[int, Field(ge=0)] = Field(2000, description="bootstrap resamples for the CIs (0: no CIs)")
    seed: Seed = Field(0, description="request order and bootstrap seed")

    def models(self) -> list[ModelSpec]:
        """The variants 07 will ask (with their base_urls) and its evaluator."""
        from gama_utils import llm
        from gama_utils.analysis import paper
        from gama_utils.judge import judges

        variants = [llm.resolve_model(v) for v in (self.variants or paper.model_aliases(self.backend,
                                                                                        paper.QWEN_VARIANTS))]
        variants = [v.model_copy(update={"base_url": self.base_urls[v.alias]}) if v.alias in self.base_urls else v
                    for v in variants]
        return variants + judges.model_specs([self.evaluator or judges.default_judge(self.backend)])

    def after(self) -> tuple[str, ...] | None:
        """It asks its own variants on the shipped benchmark; a benchmark file given may be 03's, so then all."""
        return () if self.pairs_path is None else None


class Robustness(_Paid):
    """08_robustness."""

    backend: Literal["sim", "api"] = Field("sim", description='"sim": simulated judges; "api": the paper\'s GPT-5.4 '
                                                              "(key from the environment)")
    evaluator_a: ModelRef | None = Field(None, description="None: the run's own judge (05_evaluate); or any alias, "
                                                           'inline spec or "lexicon"')
    swap_evaluator: ModelRef | None = Field(None, description="evaluator B; None: the swap judge of "
                                                              "configs/judges.yaml on `backend`; or any alias, inline "
                                                              'spec or "lexicon"')
    third_judge: ModelRef | None = Field("lexicon", description="a third evaluator compared with A as well; None to "
                                                                "skip")
    limit: Count | None = Field(None, description="re-score at most this many pairs (taken round-robin over "
                                                  "dimensions); None: all")
    n_boot: Annotated[int, Field(ge=0)] = Field(2000, description="bootstrap resamples for the CIs (0: no CIs)")
    seed: Seed = Field(0, description="bootstrap and sampling seed")
    human_n: Count = Field(200, description="mirrored answer pairs in the human-validation sample")
    annotators: Annotated[list[str], Field(min_length=2)] = Field(
        ["annotator_1", "annotator_2", "annotator_3"], description="annotator names (two at least), one sheet each")
    completed_sheets_dir: str | None = Field(None, description="folder with <annotator>_completed.csv files from "
                                                               "real annotators")
    simulated_annotators: bool = Field(True, description="with no completed sheets: True lets SIMULATED annotators "
                                                         "fill them; False exports only")

    def models(self) -> list[ModelSpec]:
        """The judges 08 may ask: evaluator A when given, evaluator B (the swap judge) and the third judge."""
        from gama_utils.judge import judges

        swap = self.swap_evaluator or judges.default_judge(self.backend, "swap")
        return judges.model_specs([j for j in (self.evaluator_a, swap, self.third_judge) if j])

    def after(self) -> tuple[str, ...]:
        """It re-scores 04's answers and compares with 05's evaluations."""
        return ("05_evaluate",)


SCHEMAS: dict[str, type[NotebookParameters]] = {
    "01_generate": Generate, "02_review": Review, "03_compile": Compile, "04_respond": Respond,
    "05_evaluate": Evaluate, "06_analyze": Analyze, "07_ablation": Ablation, "08_robustness": Robustness}


def schema(notebook: str) -> type[NotebookParameters]:
    """The parameter schema of a notebook (by stem, e.g. "04_respond")."""
    if notebook not in SCHEMAS:
        raise KeyError(f"no parameter schema for {notebook!r}{closest(notebook, SCHEMAS)}; "
                       f"known notebooks: {', '.join(SCHEMAS)}")
    return SCHEMAS[notebook]


def closest(name: str, known: Mapping[str, Any] | list[str] | set[str]) -> str:
    """", did you mean X?" for the closest known name (difflib), or ""."""
    match = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    return f"; did you mean {match[0]!r}?" if match else ""


def problems(notebook: str, values: Mapping[str, Any], where: str | None = None) -> list[str]:
    """Every problem with these values for this notebook: credentials, unknown names, wrong types and ranges."""
    where = where or notebook
    model = schema(notebook)
    found: list[str] = []
    known: dict[str, Any] = {}
    for name, value in values.items():
        secret = credentials.parameter_problems({name: value}, where)
        if secret:
            found.extend(secret)
        elif name not in model.model_fields:
            found.append(f"{where}: {name}: unknown parameter{closest(name, model.model_fields)}")
        else:
            known[name] = value
    try:
        model(**known)
    except ValidationError as err:
        found.extend(_type_problems(err, known, where))
    return found


def _type_problems(err: ValidationError, values: Mapping[str, Any], where: str) -> list[str]:
    """One line per parameter: its value and what pydantic expected (union alternatives merged)."""
    by_field: dict[str, list[str]] = {}
    for error in err.errors():
        field, inner = str(error["loc"][0]), [str(part) for part in error["loc"][1:] if isinstance(part, int)]
        label = field + "".join(f"[{i}]" for i in inner)
        message = error["msg"]
        if message != "Input should be None":
            by_field.setdefault(label, [])
            if message not in by_field[label]:
                by_field[label].append(message)
    lines = []
    for label, messages in by_field.items():
        value = values.get(label.split("[")[0])
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        lines.append(f"{where}: {label} = {shown}: {'; or '.join(messages) or 'Input should be None'}")
    return lines


def validate(notebook: str, values: Mapping[str, Any], where: str | None = None) -> NotebookParameters:
    """The notebook's parameters from these values (defaults for the rest); ParameterError listing every problem."""
    found = problems(notebook, values, where)
    if found:
        raise ParameterError(found)
    return schema(notebook)(**values)


def injected_names(namespace: Mapping[str, Any]) -> list[str]:
    """The names papermill assigned in the parameters cell it injected, read from the kernel's input history.

    papermill's cell starts with the line "# Parameters" (the notebook's own parameters cell says more), so
    a name given with `-p` that the notebook does not declare is found here; in JupyterLab there is none.
    """
    history = namespace.get("In")
    names: list[str] = []
    for source in history if isinstance(history, list) else []:
        if isinstance(source, str) and source.startswith(INJECTED_HEADER):
            with contextlib.suppress(SyntaxError):
                names += [target.id for node in ast.parse(source).body if isinstance(node, ast.Assign)
                          for target in node.targets if isinstance(target, ast.Name)]
    return list(dict.fromkeys(names))


def how_run(namespace: Mapping[str, Any]) -> str:
    """"papermill" when the kernel's input history holds papermill's injected parameters cell, else "interactive"."""
    history = namespace.get("In")
    injected = isinstance(history, list) and any(isinstance(source, str) and source.startswith(INJECTED_HEADER)
                                                 for source in history)
    return "papermill" if injected else "interactive"


def check(notebook: str, namespace: Mapping[str, Any]) -> NotebookParameters:
    """A notebook's first line: validate its parameters as they stand in its namespace, then the files it will
    touch (run folder, answers of another origin); one ParameterError with every problem before anything runs.

    Inside a kernel (the namespace has IPython's get_ipython), the run is then recorded in the run's
    manifest.json ("notebook_runs": how it ran, when, the parameters), from papermill or JupyterLab alike.
    """
    model = schema(notebook)
    values = {name: namespace[name] for name in model.model_fields if name in namespace}
    stray = {name: value for name, value in namespace.items()
             if not name.startswith("_") and name not in model.model_fields and credentials.credential_name(name)
             and isinstance(value, (str, dict, list))}
    unknown = [f"{notebook}: {name}: this notebook has no such parameter{closest(name, model.model_fields)}"
               for name in injected_names(namespace) if name not in model.model_fields and name not in stray]
    found = credentials.parameter_problems(stray, notebook) + unknown + problems(notebook, values)
    if found:
        raise ParameterError(found)
    params = model(**values)
    try:
        params.preflight()
    except ParameterError as err:
        raise ParameterError([f"{notebook}: {p}" for p in err.problems]) from None
    except ValueError as err:
        raise ParameterError([f"{notebook}: {err}"]) from None
    if "get_ipython" in namespace:
        recorded = json.loads(json.dumps(params.model_dump(), default=str))
        run_folders.record_notebook_run(params.run_dir, notebook, how_run(namespace), recorded)
    return params
