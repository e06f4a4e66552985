"""Generation of gender-neutral scenario skeletons from the condition grid (paper §3.2, Fig 5, Fig 19).

Every cell of the condition grid asks for `n` candidates (by default as many as the template
bank holds in that cell). Candidate slots are dealt to the generator models round-robin over
the whole grid, so each model writes about the same share of every track and severity; one
request per cell × generator asks for that model's slots at once. Answers are the generator
prompt's JSON, read with pydantic; an unreadable answer is asked again (next sample index) and
what stays unreadable is reported, never silently dropped.

candidates (01_generate → 02_review), one row per skeleton:
    candidate_id ("<dimension>-<severity>-<style>-NN", NN = slot in the cell from 01), cell_id,
    track, dimension, severity, style, generator (registry alias), generator_model (the underlying
    model, `model_identity`: what "not reviewed by its generator" compares), setting, skeleton,
    relationship (intimate: partner/dating/spouse when the generator names one, else None),
    lang, source_template_id (the bank template a simulated generator replayed, else None),
    setting_region, partner_occupation (intimate), narrator_occupation, affected_third_party (the template metadata of
    `gama_utils.bench.bank_metadata` when the generator gives it, else None), simulated (bool)
problems, one row per shortfall or unreadable answer: cell_id, generator, candidate_ids, problem
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal, TypeVar

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from gama_utils import llm
from gama_utils.bench import bank_metadata
from gama_utils.bench.mirror import normalise_relationship
from gama_utils.bench.templates import METADATA_FIELDS, load_templates
from gama_utils.core import grid
from gama_utils.core.prompts import render_prompt
from gama_utils.llm.registry import INLINE_PREFIX
from gama_utils.llm.structured import InvalidAnswer, Outcome, ask_structured, json_object
from gama_utils.paths import TEMPLATES, resolve

CANDIDATE_COLUMNS = ("candidate_id", "cell_id", "track", "dimension", "severity", "style", "generator",
                     "generator_model", "setting", "skeleton", "relationship", "lang", "source_template_id",
                     *METADATA_FIELDS, "simulated")
PROBLEM_COLUMNS = ("cell_id", "generator", "candidate_ids", "problem")
DEFAULT_GENERATORS = ("sim/GPT-5.4", "sim/Gemini-3-Pro", "sim/Qwen3.5")
DEFAULT_REASK = 2


T = TypeVar("T")
# The llm layer's cache argument: a Cache, a path, None (the default cache) or False (no cache).
CacheOption = llm.Cache | str | Path | bool | None


class AnswerError(InvalidAnswer):
    """A model's answer cannot be read; the message names the candidate and the field (shown on re-ask)."""


# --- reading answers ------------------------------------------------------------------------------

def json_answer(text: str | None, where: str) -> dict:
    """The JSON object in a model's answer (fences and chatter around the braces tolerated)."""
    try:
        return json_object(text)
    except InvalidAnswer as err:
        raise AnswerError(f"{where}: {err}") from None


def validation_problems(err: ValidationError, name_item: Callable[[tuple], str] = lambda loc: "") -> str:
    """A pydantic error as 'field a.b: message' parts, each prefixed by the item its location names."""
    parts = []
    for e in err.errors():
        loc = tuple(e["loc"])
        field = ".".join(map(str, loc)) or "(answer)"
        parts.append(f"{name_item(loc)}field {field}: {e['msg']}")
    return "; ".join(parts)


def ask(requests: Sequence[llm.Request], parse: Callable[[llm.Result, int], T], *, reask: int = DEFAULT_REASK,
        cache: CacheOption = None, progress: bool = True, desc: str = "") -> list[Outcome]:
    """Run requests; re-ask those whose answer `parse` rejects (the error stated), up to `reask` times.

    One Outcome (value, or None with the reason and the last raw answer) per request, in order; a
    failed request (the llm layer already retried it) is reported, not re-asked.
    """
    return ask_structured(requests, parse, max_reasks=reask, cache=cache, progress=progress, desc=desc)


def model_alias(model: str | dict | llm.ModelSpec) -> str:
    """The alias a model is recorded under in stage frames."""
    return llm.resolve_model(model).alias


def model_identity(model: str | dict | llm.ModelSpec) -> str:
    """The underlying model of an alias (paper name, else API model name), so aliases of one model compare equal.

    A recorded alias of an inline model ("openai-compatible:<model>") is read as that model.
    """
    try:
        spec = llm.resolve_model(model)
    except llm.ConfigError:
        return str(model).removeprefix(INLINE_PREFIX).strip().lower()
    return (spec.paper_name or spec.model or spec.alias).strip().lower()


# --- the generator's answer -----------------------------------------------------------------------

class Skeleton(BaseModel):
    """One skeleton of the generator prompt's answer.

    The metadata fields are optional: a value outside their vocabulary is read as None rather than
    costing the skeleton a re-ask.
    """

    model_config = ConfigDict(extra="ignore")

    setting: str = ""
    skeleton: str = Field(min_length=20)
    relationship: Literal["partner", "dating", "spouse"] | None = None
    lang: Literal["en", "zh"] = "en"
    source_template_id: str | None = None
    setting_region: str | None = None
    partner_occupation: str | None = None
    narrator_occupation: str | None = None
    affected_third_party: str | None = None

    @field_validator("relationship", mode="before")
    @classmethod
    def _relationship(cls, value: object) -> str | None:
        return normalise_relationship(str(value).strip().lower()) if value not in (None, "") else None

    @field_validator("setting_region", "partner_occupation", "narrator_occupation", "affected_third_party",
                     mode="before")
    @classmethod
    def _vocabulary(cls, value: object, info: ValidationInfo) -> str | None:
        return bank_metadata.known_value(info.field_name or "", value)


class GeneratorAnswer(BaseModel):
    """The generator prompt's answer: {"skeletons": [...]}."""

    model_config = ConfigDict(extra="ignore")

    skeletons: list[Skeleton] = Field(min_length=1)


def parse_skeletons(text: str | None, candidate_ids: Sequence[str], generator: str = "") -> list[Skeleton]:
    """The skeletons of one generator answer; errors name the candidate (by slot) and the field."""
    who = f" ({generator})" if generator else ""
    where = f"candidate(s) {', '.join(candidate_ids)}{who}"

    def item(loc: tuple) -> str:
        if len(loc) > 1 and loc[0] == "skeletons" and isinstance(loc[1], int):
            name = candidate_ids[loc[1]] if loc[1] < len(candidate_ids) else f"extra skeleton {loc[1] + 1}"
            return f"candidate {name}{who}: "
        return f"{where}: "

    data = json_answer(text, where)
    try:
        return GeneratorAnswer.model_validate(data).skeletons
    except ValidationError as err:
        raise AnswerError(validation_problems(err, item)) from None


# --- planning and running -------------------------------------------------------------------------

def bank_counts(templates: str | Path | None = None) -> pd.Series:
    """Templates per cell_id in the bank (0 for empty cells)."""
    bank = load_templates(templates)
    counts = (bank["dimension"] + "/" + bank["severity"] + "/" + bank["style"]).value_counts()
    return counts.reindex(grid.condition_grid()["cell_id"], fill_value=0)


def plan(generators: Sequence[str | dict] = DEFAULT_GENERATORS, n_per_cell: int | None = None,
         templates: str | Path | None = None) -> pd.DataFrame:
    """One row per candidate slot of the grid, with its generator (round-robin over the whole grid).

    n_per_cell None asks, in each cell, for as many candidates as the template bank holds there.
    Columns: candidate_id, cell_id, slot, track, dimension, dimension_name, severity, style, generator.
    """
    aliases = [model_alias(g) for g in generators]
    if not aliases:
        raise ValueError("no generator models given")
    if n_per_cell is not None and n_per_cell < 1:
        raise ValueError(f"n_per_cell must be a positive number or None, not {n_per_cell!r}")
    cells = grid.condition_grid()
    wanted = bank_counts(templates) if n_per_cell is None else pd.Series(n_per_cell, index=cells["cell_id"])
    rows, dealt = [], 0
    for cell in cells.itertuples(index=False):
        for slot in range(int(wanted[cell.cell_id])):
            rows.append({"candidate_id": f"{cell.dimension}-{cell.severity}-{cell.style}-{slot + 1:02d}",
                         "cell_id": cell.cell_id, "slot": slot, "track": cell.track, "dimension": cell.dimension,
                         "dimension_name": cell.dimension_name, "severity": cell.severity, "style": cell.style,
                         "generator": aliases[dealt % len(aliases)]})
            dealt += 1
    if not rows:
        raise ValueError(f"no candidate to ask for: n_per_cell is None and the template bank "
                         f"{resolve(templates) if templates is not None else TEMPLATES} holds no template")
    return pd.DataFrame(rows, columns=["candidate_id", "cell_id", "slot", "track", "dimension", "dimension_name",
                                       "severity", "style", "generator"])


def build_requests(slots: pd.DataFrame, templates: str | Path | None = None,
                   models: dict[str, str | dict] | None = None) -> list[llm.Request]:
    """One generator request per cell × generator, asking for that generator's slots of the cell.

    `models` maps a recorded alias back to the model as given (needed for inline models).
    """
    models = models or {}
    bank = str(resolve(templates) if templates is not None else TEMPLATES)
    requests = []
    for (cell_id, generator), group in slots.groupby(["cell_id", "generator"], sort=False):
        first = group.iloc[0]
        dim = grid.dimension(first["dimension"])
        prompt = render_prompt("generator", track=dim.track, dimension_name=dim.name,
                               dimension_description=dim.description, severity=first["severity"],
                               severity_description=grid.SEVERITIES[first["severity"]],
                               severity_rubric=grid.rubric_text(dim.slug, first["severity"]), style=first["style"],
                               style_description=grid.STYLES[first["style"]], n=len(group),
                               third_parties=", ".join(bank_metadata.THIRD_PARTIES))
        requests.append(llm.Request(models.get(generator, generator), messages=[{"role": "user", "content": prompt}],
                                    tag={"role": "generator", "cell_id": cell_id, "generator": generator,
                                         "slots": [int(s) for s in group["slot"]],
                                         "candidate_ids": list(group["candidate_id"]), "bank": bank}))
    return requests


def generate_candidates(generators: Sequence[str | dict] = DEFAULT_GENERATORS, n_per_cell: int | None = None,
                        templates: str | Path | None = None, *, reask: int = DEFAULT_REASK,
                        cache: CacheOption = None, progress: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Ask the generators for every slot of the grid; returns (candidates, problems) as documented above."""
    slots = plan(generators, n_per_cell, templates)
    requests = build_requests(slots, templates, {model_alias(g): g for g in generators})
    identities = {model_alias(g): model_identity(g) for g in generators}
    outcomes = ask(requests, lambda result, i: parse_skeletons(result.text, requests[i].tag["candidate_ids"],
                                                                requests[i].tag["generator"]),
                   reask=reask, cache=cache, progress=progress, desc="generate")
    by_id = slots.set_index("candidate_id")
    rows, problems = [], []
    for request, outcome in zip(requests, outcomes):
        tag = request.tag
        ids = tag["candidate_ids"]
        skeletons = outcome.value
        if skeletons is None:
            problems.append({"cell_id": tag["cell_id"], "generator": tag["generator"], "candidate_ids": ids,
                             "problem": outcome.reason})
            continue
        if len(skeletons) != len(ids):
            short = len(skeletons) < len(ids)
            problems.append({"cell_id": tag["cell_id"], "generator": tag["generator"],
                             "candidate_ids": ids[len(skeletons):] if short else ids,
                             "problem": f"asked for {len(ids)} skeletons, got {len(skeletons)}"
                                        + ("" if short else f"; kept the first {len(ids)}")})
        for candidate_id, item in zip(ids, skeletons):
            slot = by_id.loc[candidate_id]
            intimate = slot["track"] == "intimate"
            rows.append({"candidate_id": candidate_id, "cell_id": tag["cell_id"], "track": slot["track"],
                         "dimension": slot["dimension"], "severity": slot["severity"], "style": slot["style"],
                         "generator": tag["generator"], "generator_model": identities[tag["generator"]],
                         "setting": item.setting, "skeleton": item.skeleton,
                         "relationship": item.relationship if intimate else None,
                         "lang": item.lang, "source_template_id": item.source_template_id,
                         "setting_region": item.setting_region,
                         "partner_occupation": item.partner_occupation if intimate else None,
                         "narrator_occupation": item.narrator_occupation,
                         "affected_third_party": item.affected_third_party,
                         "simulated": outcome.simulated})
    candidates = pd.DataFrame(rows, columns=CANDIDATE_COLUMNS)
    order = {cid: i for i, cid in enumerate(slots["candidate_id"])}
    candidates = candidates.sort_values("candidate_id", key=lambda s: s.map(order)).reset_index(drop=True)
    return candidates, pd.DataFrame(problems, columns=PROBLEM_COLUMNS)


def grid_rows() -> pd.MultiIndex:
    """(track, dimension, severity) in the grid's order: the rows of per-cell tables."""
    cells = grid.condition_grid()[["track", "dimension", "severity"]].drop_duplicates()
    return pd.MultiIndex.from_frame(cells)


def per_cell(candidates: pd.DataFrame) -> pd.DataFrame:
    """Candidates per dimension × severity (rows, grid order) and style (columns), with totals."""
    table = candidates.pivot_table(index=["track", "dimension", "severity"], columns="style", values="candidate_id",
                                   aggfunc="count", fill_value=0)
    table = table.reindex(index=grid_rows(), columns=list(grid.STYLES), fill_value=0)
    table["total"] = table.sum(axis=1)
    return table


def per_generator(candidates: pd.DataFrame) -> pd.DataFrame:
    """Candidates per generator and track."""
    return candidates.pivot_table(index="generator", columns="track", values="candidate_id", aggfunc="count",
                                  fill_value=0).assign(total=lambda t: t.sum(axis=1))


def cells_without_candidates(candidates: pd.DataFrame) -> list[str]:
    """Cells of the grid that have no candidate."""
    return sorted(set(grid.condition_grid()["cell_id"]) - set(candidates["cell_id"]))

