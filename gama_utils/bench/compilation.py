"""Compilation (paper §3.2, Figs 4, 21, 22): kept skeletons → first-person posts → mirrored prompt pairs.

Kept candidates are rewritten into neutral first-person posts (intimate track, compiler_post
prompt) or narratives (public track, compiler_narrative prompt) and linted; each post that is
finally kept is mirror-compiled into male / female / neutral prompts.

posts (03_compile), one row per compiled candidate:
    candidate_id, template_id (the replayed bank template's id offline, else the candidate_id),
    cell_id, track, dimension, severity, style, relationship, lang, text, compiler,
    setting_region, partner_occupation, narrator_occupation, affected_third_party (carried from the candidate),
    lint_problems (list; lint, metadata and mirror findings), usable (bool), error, simulated
pairs: gama_utils.core.schema.PAIRS, then the metadata columns METADATA_COLUMNS (setting_region,
    partner_occupation, occupation_stereotype, narrator_occupation, narrator_occupation_stereotype,
    affected_third_party), then simulated (in the run
    folder; not in the benchmark files)

pair_id = "GB-" + the first 10 hex digits of SHA-256(template_id): stable when templates are added
or removed. Pairs are sorted by template_id.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

import pandas as pd

from gama_utils import llm
from gama_utils.bench import bank_metadata
from gama_utils.bench.generate import CANDIDATE_COLUMNS, DEFAULT_REASK, AnswerError, CacheOption, ask, model_alias
from gama_utils.bench.mirror import MirrorError, compile_pair, mirror_violations
from gama_utils.bench.templates import METADATA_FIELDS, lint_template
from gama_utils.core import grid
from gama_utils.core.prompts import render_prompt
from gama_utils.core.schema import PAIRS, require
from gama_utils.llm.structured import strip_fences
from gama_utils.paths import TEMPLATES, resolve

DEFAULT_COMPILER = "sim/DeepSeek-V4-Pro"
POST_COLUMNS = ("candidate_id", "template_id", "cell_id", "track", "dimension", "severity", "style", "relationship",
                "lang", "text", "compiler", *METADATA_FIELDS, "lint_problems", "usable", "error", "simulated")
# The template metadata every pair carries after the PAIRS columns (the two stereotypes are derived).
METADATA_COLUMNS = ("setting_region", "partner_occupation", "occupation_stereotype", "narrator_occupation",
                    "narrator_occupation_stereotype", "affected_third_party")
PAIR_COLUMNS = (*PAIRS, *METADATA_COLUMNS)


# --- rewriting kept skeletons into posts ----------------------------------------------------------

def build_requests(candidates: pd.DataFrame, compiler: str | dict = DEFAULT_COMPILER,
                   templates: str | Path | None = None) -> list[llm.Request]:
    """One compiler request per candidate: the post prompt (intimate) or the narrative prompt (public)."""
    bank = str(resolve(templates) if templates is not None else TEMPLATES)
    alias = model_alias(compiler)
    requests = []
    for c in candidates.itertuples(index=False):
        prompt = render_prompt("compiler_post" if c.track == "intimate" else "compiler_narrative",
                               dimension_name=grid.dimension(c.dimension).name,
                               severity=f"{c.severity}, {grid.SEVERITIES[c.severity]}", style=c.style,
                               style_description=grid.STYLES[c.style], skeleton=c.skeleton)
        requests.append(llm.Request(compiler, messages=[{"role": "user", "content": prompt}],
                                    tag={"role": "compiler", "candidate_id": c.candidate_id, "cell_id": c.cell_id,
                                         "compiler": alias, "source_template_id": c.source_template_id,
                                         "bank": bank}))
    return requests


def parse_post(text: str | None, candidate_id: str) -> str:
    """The post text of a compiler answer (fence, <<< >>> and surrounding quotes removed)."""
    body = strip_fences(text or "").removeprefix("<<<").removesuffix(">>>").strip()
    if len(body) >= 2 and body[0] == body[-1] == '"' and body.count('"') == 2:
        body = body[1:-1].strip()
    if not body:
        raise AnswerError(f"post of candidate {candidate_id}: field text: the compiler's answer is empty")
    return body


@lru_cache(maxsize=4096)
def _mirrored(text: str, track: str, relationship: str, lang: str) -> tuple[tuple, tuple[str, ...]]:
    prompts = compile_pair(text, track, relationship, lang)
    return tuple(prompts.items()), tuple(mirror_violations(prompts, lang))


def mirrored(text: str, track: str, relationship: str | None, lang: str = "en") -> tuple[dict[str, str], list[str]]:
    """The male / female / neutral prompts of a template and their mirror violations ([] when clean)."""
    prompts, problems = _mirrored(text, track, relationship or "partner", lang)
    return dict(prompts), list(problems)


def post_problems(text: str, track: str, relationship: str | None, lang: str = "en",
                  partner_occupation: str | None = None, narrator_occupation: str | None = None) -> list[str]:
    """The template lint, the metadata check and, when clean, the mirror invariant ([] when usable)."""
    problems = lint_template(text, track, lang)
    problems += bank_metadata.metadata_problems({"track": track, "text": text, "partner_occupation": partner_occupation,
                                                 "narrator_occupation": narrator_occupation})
    return problems or mirrored(text, track, relationship, lang)[1]


def compile_posts(candidates: pd.DataFrame, reviews: pd.DataFrame, compiler: str | dict = DEFAULT_COMPILER,
                  templates: str | Path | None = None, *, reask: int = DEFAULT_REASK, cache: CacheOption = None,
                  progress: bool = True) -> pd.DataFrame:
    """Rewrite every kept candidate into a neutral first-person post; the posts frame documented above."""
    require(candidates, CANDIDATE_COLUMNS, "candidates")
    require(reviews, ("candidate_id", "verdict"), "reviews")
    keep = set(reviews.loc[reviews["verdict"] == "keep", "candidate_id"])
    missing = sorted(keep - set(candidates["candidate_id"]))
    if missing:
        raise KeyError(f"reviews keep candidate(s) absent from the candidates: {', '.join(missing[:10])}")
    chosen = candidates[candidates["candidate_id"].isin(keep)].reset_index(drop=True)
    requests = build_requests(chosen, compiler, templates)
    outcomes = ask(requests, lambda result, i: parse_post(result.text, requests[i].tag["candidate_id"]),
                   reask=reask, cache=cache, progress=progress, desc="compile")
    alias = model_alias(compiler)
    rows = []
    for c, outcome in zip(chosen.to_dict("records"), outcomes):
        text = outcome.value
        relationship = (c["relationship"] or "partner") if c["track"] == "intimate" else None
        lang = c["lang"] or "en"
        metadata = {name: _value(c[name]) for name in METADATA_FIELDS}
        problems = post_problems(text, c["track"], relationship, lang, metadata["partner_occupation"],
                                 metadata["narrator_occupation"]) if text else []
        rows.append({"candidate_id": c["candidate_id"], "template_id": c["source_template_id"] or c["candidate_id"],
                     "cell_id": c["cell_id"], "track": c["track"], "dimension": c["dimension"],
                     "severity": c["severity"], "style": c["style"], "relationship": relationship, "lang": lang,
                     "text": text or "", "compiler": alias, **metadata, "lint_problems": problems,
                     "usable": bool(text) and not problems, "error": outcome.reason,
                     "simulated": bool(outcome.simulated or c["simulated"])})
    return pd.DataFrame(rows, columns=POST_COLUMNS)


def _value(value: object) -> str | None:
    """A metadata cell as a string or None (NaN and empty read as None)."""
    return value if isinstance(value, str) and value else None


# --- mirrored pairs ------------------------------------------------------------------------------

def pair_id(template_id: str) -> str:
    """The stable pair id of a template: "GB-" + 10 hex digits of SHA-256(template_id)."""
    return "GB-" + hashlib.sha256(template_id.encode("utf-8")).hexdigest()[:10]


def mirror_pairs(posts: pd.DataFrame) -> pd.DataFrame:
    """Mirror-compile every post into male / female / neutral prompts with its metadata, sorted by template_id.

    Raises MirrorError naming the templates whose male and female prompts differ beyond the mirror.
    """
    repeated = sorted(posts.loc[posts["template_id"].duplicated(), "template_id"].unique())
    if repeated:
        raise ValueError(f"template_id(s) appear more than once among the posts: {', '.join(repeated)}")
    rows, broken = [], []
    for p in posts.sort_values("template_id", kind="stable").to_dict("records"):
        relationship = (p["relationship"] or "partner") if p["track"] == "intimate" else None
        lang = p.get("lang") or "en"
        prompts, problems = mirrored(p["text"], p["track"], relationship, lang)
        if problems:
            broken.append(f"{p['template_id']}: {problems[0]}")
        occupation, own = _value(p.get("partner_occupation")), _value(p.get("narrator_occupation"))
        rows.append({"pair_id": pair_id(p["template_id"]), "template_id": p["template_id"], "track": p["track"],
                     "dimension": p["dimension"], "severity": p["severity"], "style": p["style"],
                     "relationship": relationship, "prompt_male": prompts["male"],
                     "prompt_female": prompts["female"], "prompt_neutral": prompts["neutral"],
                     "setting_region": _value(p.get("setting_region")), "partner_occupation": occupation,
                     "occupation_stereotype": bank_metadata.occupation_stereotype(occupation),
                     "narrator_occupation": own,
                     "narrator_occupation_stereotype": bank_metadata.occupation_stereotype(own),
                     "affected_third_party": _value(p.get("affected_third_party")),
                     "simulated": bool(p["simulated"])})
    if broken:
        raise MirrorError(f"{len(broken)} pair(s) differ beyond the mirror: " + "; ".join(broken[:5]))
    pairs = pd.DataFrame(rows, columns=[*PAIR_COLUMNS, "simulated"])
    clashes = pairs.loc[pairs["pair_id"].duplicated(keep=False), "template_id"]
    if len(clashes):
        raise ValueError(f"pair_id collision between template_ids {', '.join(clashes)}")
    return pairs
