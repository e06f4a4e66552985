"""From reviewed skeletons to the benchmark (paper §3.2, Figs 4, 21, 22; Figs 2, 3).

Kept candidates are rewritten into neutral first-person posts (intimate track, compiler_post
prompt) or narratives (public track, compiler_narrative prompt) and linted; near-duplicates
are removed within each dimension × severity × style cell by embedding cosine similarity;
an expert screening sheet is exported and, when filled in, read back (excluded ids dropped,
their reason kept); each remaining template is mirror-compiled into male / female / neutral
prompts; the benchmark folder is written.

posts (03_compile), one row per compiled candidate:
    candidate_id, template_id (the replayed bank template's id offline, else the candidate_id),
    cell_id, track, dimension, severity, style, relationship, lang, text, compiler,
    lint_problems (list; lint and mirror findings), usable (bool), error, simulated
removals: cell_id, removed_id, duplicate_of, similarity
exclusions: template_id, cell_id, reason
pairs: gama_utils.schema.PAIRS (+ simulated in the run folder; not in the benchmark files)

The benchmark folder holds exactly BENCHMARK_FILES. pair_id = "GB-" + the first 10 hex digits
of SHA-256(template_id): stable when templates are added or removed. Pairs are sorted by
template_id. MANIFEST.sha256 (sha256sum format) covers the data files and the datasheet; the
figures are illustrations redrawn from pairs.jsonl and are not part of it.

`python -m gama_utils.compile` rebuilds data/gama_bench offline from the template bank (01 → 03
with publish=True); run it after the bank changes.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from functools import lru_cache
from pathlib import Path
from typing import Sequence

import pandas as pd

from . import embeddings, grid, llm
from .generate import CANDIDATE_COLUMNS, DEFAULT_REASK, AnswerError, ask, model_alias, strip_fences
from .mirror import MirrorError, compile_pair, mirror_violations
from .paths import BENCHMARK, TEMPLATES, resolve
from .prompts import render_prompt
from .runs import atomic_write, file_sha256
from .schema import PAIRS, require
from .templates import lint_template

DEFAULT_COMPILER = "sim/DeepSeek-V4-Pro"
POST_COLUMNS = ("candidate_id", "template_id", "cell_id", "track", "dimension", "severity", "style", "relationship",
                "lang", "text", "compiler", "lint_problems", "usable", "error", "simulated")
DATA_FILES = ("pairs.jsonl", "pairs.csv", "README.md")
FIGURE_FILES = ("composition.png", "composition.pdf", "wordcloud.png", "wordcloud.pdf")
MANIFEST = "MANIFEST.sha256"
BENCHMARK_FILES = (*DATA_FILES, MANIFEST, *FIGURE_FILES)
SCREENING_COLUMNS = ("template_id", "track", "dimension", "severity", "style", "relationship", "text", "decision",
                     "reason")
DECISIONS = ("", "keep", "exclude")


class ScreeningError(ValueError):
    """A screening sheet names unknown templates or has an invalid row; the message names them."""


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


def post_problems(text: str, track: str, relationship: str | None, lang: str = "en") -> list[str]:
    """The template lint and, when clean, the mirror invariant of the compiled pair ([] when usable)."""
    problems = lint_template(text, track)
    return problems or mirrored(text, track, relationship, lang)[1]


def compile_posts(candidates: pd.DataFrame, reviews: pd.DataFrame, compiler: str | dict = DEFAULT_COMPILER,
                  templates: str | Path | None = None, *, reask: int = DEFAULT_REASK, cache=None,
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
    for c, (result, text, error) in zip(chosen.itertuples(index=False), outcomes):
        relationship = (c.relationship or "partner") if c.track == "intimate" else None
        lang = c.lang or "en"
        problems = post_problems(text, c.track, relationship, lang) if text else []
        rows.append({"candidate_id": c.candidate_id, "template_id": c.source_template_id or c.candidate_id,
                     "cell_id": c.cell_id, "track": c.track, "dimension": c.dimension, "severity": c.severity,
                     "style": c.style, "relationship": relationship, "lang": lang, "text": text or "",
                     "compiler": alias, "lint_problems": problems, "usable": bool(text) and not problems,
                     "error": error, "simulated": bool(result.simulated or c.simulated)})
    return pd.DataFrame(rows, columns=POST_COLUMNS)


# --- near-duplicates, screening ---------------------------------------------------------------------

def deduplicate(posts: pd.DataFrame, backend: str | embeddings.Backend = embeddings.DEFAULT_BACKEND,
                threshold: float | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Drop near-duplicates within each condition cell (greedy in template_id order); returns (kept, removals).

    threshold None takes the backend's default (TF-IDF: cosine 0.60).
    """
    embedder = embeddings.backend(backend)
    threshold = embeddings.default_threshold(embedder) if threshold is None else float(threshold)
    usable = posts[posts["usable"]].sort_values("template_id", kind="stable")
    removals = []
    for cell_id, group in usable.groupby("cell_id", sort=True):
        found = embeddings.near_duplicates(list(group["template_id"]), list(group["text"]), threshold, embedder)
        removals.append(found.assign(cell_id=cell_id))
    removals = (pd.concat(removals, ignore_index=True) if removals else pd.DataFrame())
    removals = removals.reindex(columns=["cell_id", "removed_id", "duplicate_of", "similarity"])
    kept = usable[~usable["template_id"].isin(removals["removed_id"])].reset_index(drop=True)
    return kept, removals


def export_screening_sheet(posts: pd.DataFrame, path: str | Path) -> Path:
    """Write the expert screening sheet (CSV, one row per template; fill decision = exclude and a reason).

    A sheet already at `path` that holds any decision or reason is left as it is, so a rerun never
    overwrites the experts' work.
    """
    path = resolve(path)
    if path.exists() and _filled(path):
        return path
    sheet = posts.sort_values("template_id").reindex(columns=SCREENING_COLUMNS)
    sheet["decision"], sheet["reason"] = "", ""
    return atomic_write(path, "\ufeff" + sheet.to_csv(index=False, lineterminator="\n"))


def _filled(path: Path) -> bool:
    try:
        sheet = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    except (ValueError, UnicodeDecodeError):
        return True
    columns = [c for c in ("decision", "reason") if c in sheet.columns]
    return bool(sheet[columns].apply(lambda s: s.str.strip().ne("")).any().any()) if columns else True


def read_screening_sheet(path: str | Path) -> pd.DataFrame:
    """A filled-in screening sheet (CSV, as exported; Excel saves it as CSV) with every row checked."""
    path = resolve(path)
    if not path.exists():
        raise FileNotFoundError(f"screening sheet {path} does not exist")
    if path.suffix.lower() != ".csv":
        raise ScreeningError(f"screening sheet {path.name}: expected a .csv file (save the sheet as CSV UTF-8)")
    sheet = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    missing = [c for c in ("template_id", "decision") if c not in sheet.columns]
    if missing:
        raise ScreeningError(f"screening sheet {path.name}: missing column(s) {', '.join(missing)}")
    sheet = sheet.reindex(columns=[*sheet.columns, *(["reason"] if "reason" not in sheet.columns else [])]).fillna("")
    sheet["template_id"] = sheet["template_id"].str.strip()
    sheet["decision"] = sheet["decision"].str.strip().str.lower()
    sheet["reason"] = sheet["reason"].str.strip()
    problems = []
    for line, row in zip(range(2, len(sheet) + 2), sheet.itertuples(index=False)):
        if row.decision not in DECISIONS:
            problems.append(f"row {line} ({row.template_id}): field decision {row.decision!r} is not one of "
                            f"keep, exclude (or empty)")
        elif row.decision == "exclude" and not row.reason:
            problems.append(f"row {line} ({row.template_id}): field reason is empty; say why it is excluded")
    repeated = sorted(sheet.loc[sheet["template_id"].duplicated(), "template_id"].unique())
    if repeated:
        problems.append(f"template_id(s) listed more than once: {', '.join(repeated)}")
    if problems:
        raise ScreeningError(f"screening sheet {path.name}: " + "; ".join(problems))
    return sheet


def apply_screening(posts: pd.DataFrame, sheet: str | Path | pd.DataFrame | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Drop the templates the sheet excludes; returns (kept posts, exclusions with their reasons).

    sheet None applies no exclusion. Ids in the sheet that are not among `posts` are an error.
    """
    columns = ["template_id", "cell_id", "reason"]
    if sheet is None:
        return posts.reset_index(drop=True), pd.DataFrame(columns=columns)
    table = sheet if isinstance(sheet, pd.DataFrame) else read_screening_sheet(sheet)
    unknown = sorted(set(table["template_id"]) - set(posts["template_id"]))
    if unknown:
        shown = ", ".join(unknown[:10]) + (f" and {len(unknown) - 10} more" if len(unknown) > 10 else "")
        raise ScreeningError(f"screening sheet names template_id(s) that are not among the compiled posts: {shown}")
    excluded = table[table["decision"] == "exclude"]
    reasons = dict(zip(excluded["template_id"], excluded["reason"]))
    exclusions = posts[posts["template_id"].isin(reasons)].sort_values("template_id")
    exclusions = exclusions.assign(reason=exclusions["template_id"].map(reasons))[columns].reset_index(drop=True)
    return posts[~posts["template_id"].isin(reasons)].reset_index(drop=True), exclusions


# --- mirrored pairs and the benchmark --------------------------------------------------------------

def pair_id(template_id: str) -> str:
    """The stable pair id of a template: "GB-" + 10 hex digits of SHA-256(template_id)."""
    return "GB-" + hashlib.sha256(template_id.encode("utf-8")).hexdigest()[:10]


def mirror_pairs(posts: pd.DataFrame) -> pd.DataFrame:
    """Mirror-compile every post into male / female / neutral prompts, sorted by template_id.

    Raises MirrorError naming the templates whose male and female prompts differ beyond the mirror.
    """
    repeated = sorted(posts.loc[posts["template_id"].duplicated(), "template_id"].unique())
    if repeated:
        raise ValueError(f"template_id(s) appear more than once among the posts: {', '.join(repeated)}")
    rows, broken = [], []
    for p in posts.sort_values("template_id", kind="stable").itertuples(index=False):
        relationship = (p.relationship or "partner") if p.track == "intimate" else None
        lang = getattr(p, "lang", None) or "en"
        prompts, problems = mirrored(p.text, p.track, relationship, lang)
        if problems:
            broken.append(f"{p.template_id}: {problems[0]}")
        rows.append({"pair_id": pair_id(p.template_id), "template_id": p.template_id, "track": p.track,
                     "dimension": p.dimension, "severity": p.severity, "style": p.style,
                     "relationship": relationship, "prompt_male": prompts["male"],
                     "prompt_female": prompts["female"], "prompt_neutral": prompts["neutral"],
                     "simulated": bool(p.simulated)})
    if broken:
        raise MirrorError(f"{len(broken)} pair(s) differ beyond the mirror: " + "; ".join(broken[:5]))
    pairs = pd.DataFrame(rows, columns=[*PAIRS, "simulated"])
    clashes = pairs.loc[pairs["pair_id"].duplicated(keep=False), "template_id"]
    if len(clashes):
        raise ValueError(f"pair_id collision between template_ids {', '.join(clashes)}")
    return pairs


def composition(pairs: pd.DataFrame) -> pd.DataFrame:
    """Pairs per dimension × severity next to the paper's release (Fig 2): tidy, one row per cell."""
    paper = grid.composition().rename(columns={"n": "paper"})
    ours = pairs.groupby(["dimension", "severity"]).size().rename("pairs").reset_index()
    table = paper.merge(ours, on=["dimension", "severity"], how="left").fillna({"pairs": 0})
    table["pairs"] = table["pairs"].astype(int)
    return table[["track", "dimension", "dimension_name", "severity", "pairs", "paper"]]


def composition_table(pairs: pd.DataFrame) -> pd.DataFrame:
    """Pairs per dimension (rows, grid order) and severity, this benchmark beside the paper's, with totals."""
    tidy = composition(pairs)
    wide = tidy.pivot_table(index=["track", "dimension_name"], columns="severity", values=["pairs", "paper"],
                            aggfunc="sum", sort=False)
    for source in ("pairs", "paper"):
        wide[(source, "total")] = wide[source].sum(axis=1)
    wide = wide.reindex(columns=[(s, k) for s in ("pairs", "paper") for k in (*grid.SEVERITIES, "total")])
    wide.columns = pd.MultiIndex.from_tuples([("GAMA-Bench (this project)" if s == "pairs" else "paper (Fig 2)", k)
                                              for s, k in wide.columns])
    order = [(d.track, d.name) for d in grid.DIMENSIONS]
    wide = wide.reindex(order)
    wide.loc[("all", "total"), :] = wide.sum()
    return wide.astype(int)


def construction_summary(candidates: pd.DataFrame, reviews: pd.DataFrame, posts: pd.DataFrame,
                         removals: pd.DataFrame, exclusions: pd.DataFrame, *, embedding_backend: str,
                         threshold: float | None, screening_sheet: str | Path | None) -> dict:
    """The facts of one construction run that the datasheet reports (no paths, dates or versions)."""
    embedder = embeddings.backend(embedding_backend)
    return {
        "generators": sorted(set(candidates["generator"])),
        "reviewers": sorted(set(reviews["reviewer"])),
        "compilers": sorted(set(posts["compiler"])),
        "simulated": bool(candidates["simulated"].any() or reviews["simulated"].any() or posts["simulated"].any()),
        "replayed_bank": bool(candidates["source_template_id"].notna().all()) and len(candidates) > 0,
        "candidates": len(candidates), "kept_by_review": int((reviews["verdict"] == "keep").sum()),
        "posts": len(posts), "failed_lint": int((~posts["usable"]).sum()),
        "embedding_backend": embedder.name,
        "threshold": embeddings.default_threshold(embedder) if threshold is None else float(threshold),
        "removals": removals[["removed_id", "duplicate_of", "similarity"]].to_dict("records"),
        "screening": Path(screening_sheet).name if screening_sheet is not None else None,
        "exclusions": exclusions[["template_id", "reason"]].to_dict("records"),
    }


def _pair_records(pairs: pd.DataFrame) -> list[dict]:
    require(pairs, PAIRS, "pairs")
    records = pairs.sort_values("template_id", kind="stable")[list(PAIRS)].to_dict("records")
    for record in records:
        if not isinstance(record["relationship"], str):
            record["relationship"] = None
    return records


def pairs_jsonl(pairs: pd.DataFrame) -> str:
    """pairs.jsonl: one object per pair, keys in schema order, UTF-8 kept."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in _pair_records(pairs))


def pairs_csv(pairs: pd.DataFrame) -> str:
    """pairs.csv: the same columns, RFC 4180 quoting, '\\n' line ends, empty relationship on the public track."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(PAIRS)
    for record in _pair_records(pairs):
        writer.writerow(["" if record[c] is None else record[c] for c in PAIRS])
    return buffer.getvalue()


def datasheet(pairs: pd.DataFrame, summary: dict) -> str:
    """The benchmark's datasheet (README.md): composition, construction, intended use, sensitive content."""
    from .benchmark_figures import DATASET_NAME

    n = len(pairs)
    counts = composition_table(pairs)
    by_track = pairs["track"].value_counts()
    styles = pairs["style"].value_counts().reindex(list(grid.STYLES), fill_value=0)
    relationships = pairs.loc[pairs["track"] == "intimate", "relationship"].value_counts()
    comp = ["| track | dimension | L1 | L2 | L3 | total | paper's total |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    for (track, name), row in counts.iterrows():
        ours, paper = row["GAMA-Bench (this project)"], row["paper (Fig 2)"]
        comp.append(f"| {track} | {name} | {ours['L1']} | {ours['L2']} | {ours['L3']} | {ours['total']} | "
                    f"{paper['total']} |")
    if summary["simulated"] and summary["replayed_bank"]:
        how = ("This release was built offline, calling no language model. The generator, reviewer and compiler "
               "stages were run by the project's **simulated** authoring backend (`gama_utils.sim_authoring`, "
               "labelled SIMULATED), a rule-based stand-in that replays the project's authored template bank "
               "(`data/templates/`): the generator returns each bank template as an [AGGRESSOR]/[VICTIM] skeleton, "
               "the reviewer applies the template lint and structural checks (not a model's judgement), and the "
               "compiler returns the authored text verbatim. Every prompt is therefore a bank template, as written "
               "for this project (its `provenance` field says so).")
    elif summary["simulated"]:
        how = "Some construction stages were run by the **simulated** offline backend (labelled SIMULATED)."
    else:
        how = "The construction stages were run by the language models named below."
    removals = summary["removals"]
    removal_lines = [f"  - `{r['removed_id']}` (cosine {r['similarity']:.2f} to `{r['duplicate_of']}`)"
                     for r in removals]
    if summary["screening"] is None:
        screening = ("Expert screening: not applied to this release. 03_compile exports a screening sheet "
                     "(`screening_sheet.csv` in the run folder) for experts to mark templates to exclude, with a "
                     "reason.")
    else:
        screening = (f"Expert screening: applied from `{summary['screening']}`; "
                     f"{len(summary['exclusions'])} template(s) excluded" + (":" if summary["exclusions"] else "."))
    exclusion_lines = [f"  - `{e['template_id']}`: {e['reason']}" for e in summary["exclusions"]]
    lines = [
        f"# {DATASET_NAME}: datasheet",
        "",
        f"{n:,} gender-mirrored prompt pairs for measuring how LLMs frame the same misconduct when the actor is a "
        "man or a woman, following the construction of GAMA-Bench (paper §3.2).",
        "",
        "**This is the project's own authored benchmark, not the paper's data.** The paper's authors released no "
        "data; every template here was written for this repository under the paper's construction rules. Results "
        "on it are not directly comparable with the paper's numbers.",
        "",
        "## Files",
        "",
        "- `pairs.jsonl`, `pairs.csv`: one row per pair, sorted by `template_id`; columns "
        + ", ".join(f"`{c}`" for c in PAIRS) + ".",
        "- `pair_id` = `GB-` + the first 10 hex digits of SHA-256(`template_id`), stable when templates are added "
        "or removed. `relationship` (intimate track) is partner / dating / spouse; empty on the public track.",
        "- `prompt_male` begins \"I am a man.\", `prompt_female` \"I am a woman.\", `prompt_neutral` "
        "\"I am a person.\" (a control arm beyond the paper). On the intimate track the partner references follow "
        "the actor's gender (a man's partner is female, a woman's is male; the neutral arm says partner/spouse and "
        "they/them); on the public track only the first sentence differs.",
        "- `composition.png/.pdf` (as the paper's Fig 2), `wordcloud.png/.pdf` (as Fig 3): redrawn from the pairs.",
        f"- `{MANIFEST}`: SHA-256 of the data files and this datasheet (`sha256sum -c {MANIFEST}`); the figures "
        "are not in it.",
        "",
        "## Composition",
        "",
        f"{n:,} pairs: intimate track {by_track.get('intimate', 0):,}, public track {by_track.get('public', 0):,}; "
        "10 conflict dimensions × 3 severity levels (L1 mild, L2 moderate, L3 severe) × 3 rhetorical styles "
        "(" + ", ".join(f"{s} {styles[s]:,}" for s in grid.STYLES) + "). Intimate relationships: "
        + ", ".join(f"{k} {v:,}" for k, v in relationships.items()) + ".",
        "",
        *comp,
        "",
        "The paper's release has 1,298 instances (its Fig 2); the last column gives its count per dimension.",
        "",
        "## Construction",
        "",
        "Condition seeds (track × dimension × severity × style) → gender-neutral skeletons with [AGGRESSOR] and "
        "[VICTIM] placeholders from generator models → review by a model other than the generator (gender "
        "neutrality, realism, severity match, clear violation; plus the project's gender-cue lint) → rewriting "
        "into first-person advice-seeking posts (intimate) or narratives (public) → template lint and mirror "
        "check → near-duplicate removal within each condition cell → expert screening → deterministic mirror "
        "compilation. Gender enters only at the last step.",
        "",
        how,
        "",
        f"- Generators: {_code_list(summary['generators'])}; reviewers: {_code_list(summary['reviewers'])}; "
        f"compiler: {_code_list(summary['compilers'])}.",
        f"- Candidates: {summary['candidates']:,}; kept by review: {summary['kept_by_review']:,}; compiled: "
        f"{summary['posts']:,}; failed the lint or mirror check: {summary['failed_lint']:,}.",
        f"- Near-duplicates: `{summary['embedding_backend']}` embeddings, cosine ≥ {summary['threshold']:.2f} within "
        f"a cell; {len(removals)} removed" + (":" if removals else "."),
        *removal_lines,
        f"- {screening}",
        *exclusion_lines,
        "",
        "## Intended use",
        "",
        "Research on gender-conditioned response framing: send both prompts of each pair to a model, score the "
        "answers with the six framing metrics (paper §3.3) and compare within pairs. The pairs are not training "
        "data for judging real people, not a test of factual knowledge, and not a measure of which gender "
        "misbehaves more: the misconduct is identical within a pair by construction. Binary actor gender follows "
        "the paper; the neutral arm is a baseline, not a third gender category.",
        "",
        "## Sensitive content",
        "",
        "The scenarios describe, from the wrongdoer's point of view, interpersonal misconduct: financial control, "
        "privacy violation, emotional blackmail (including threats of leaving), mild physical violence and "
        "coercion, career sabotage, false accusations of harassment or sexual assault, confrontations with "
        "strangers, workplace bullying, hoarding in emergencies and road rage. There is no graphic violence, no "
        "sexual content and no real person: everyone is referred to by role, with no names. Some narrators "
        "rationalise abusive behaviour; the texts are stimuli, not endorsements.",
        "",
        "## Limitations",
        "",
        "English only. The templates were written for this project in November 2026 by the project's "
        "engineers, who are AI coding agents, each dimension's cells split among several authors with distinct "
        "regions for their settings; they were not collected from real users, so their settings and phrasing "
        "reflect their authors, and no human expert has screened them yet. The gender-cue lint checks words, names and titles; subtler "
        "stereotyped cues are left to review and screening.",
        "",
    ]
    return "\n".join(lines)


def _code_list(names: Sequence[str]) -> str:
    return ", ".join(f"`{m}`" for m in names) or "none"


def write_manifest(folder: Path) -> Path:
    """MANIFEST.sha256 over the data files, in sha256sum's format."""
    text = "".join(f"{file_sha256(folder / name)}  {name}\n" for name in sorted(DATA_FILES))
    return atomic_write(folder / MANIFEST, text)


def manifest_problems(folder: str | Path) -> list[str]:
    """Files whose SHA-256 differs from MANIFEST.sha256 ([] when the benchmark is intact)."""
    folder = resolve(folder)
    problems = []
    for line in (folder / MANIFEST).read_text(encoding="utf-8").splitlines():
        digest, name = line.split(maxsplit=1)
        if not (folder / name).exists():
            problems.append(f"{name}: missing")
        elif file_sha256(folder / name) != digest:
            problems.append(f"{name}: SHA-256 differs from {MANIFEST}")
    return problems


def write_benchmark(pairs: pd.DataFrame, folder: str | Path, summary: dict) -> dict[str, Path]:
    """Write the benchmark folder: pairs.jsonl/.csv, the datasheet, the two figures (PNG, PDF), the manifest."""
    from . import benchmark_figures

    folder = resolve(folder)
    written = {"pairs.jsonl": atomic_write(folder / "pairs.jsonl", pairs_jsonl(pairs)),
               "pairs.csv": atomic_write(folder / "pairs.csv", pairs_csv(pairs)),
               "README.md": atomic_write(folder / "README.md", datasheet(pairs, summary))}
    note = benchmark_figures.construction_note(summary)
    for stem, figure in (("composition", benchmark_figures.composition_figure(pairs, note)),
                         ("wordcloud", benchmark_figures.wordcloud_figure(pairs, note))):
        written.update({p.name: p for p in benchmark_figures.save(figure, folder, stem)})
    written[MANIFEST] = write_manifest(folder)
    return {name: written[name] for name in BENCHMARK_FILES}


def publish(folder: str | Path, target: str | Path = BENCHMARK) -> list[Path]:
    """Copy a written benchmark folder to data/gama_bench (or `target`), file by file, atomically."""
    folder, target = resolve(folder), resolve(target)
    problems = manifest_problems(folder)
    if problems:
        raise ValueError(f"benchmark folder {folder} is inconsistent: {'; '.join(problems)}")
    written = [atomic_write(target / name, (folder / name).read_bytes()) for name in BENCHMARK_FILES]
    for path in written:
        path.chmod(0o644)
    return written


def cells_missing(pairs: pd.DataFrame) -> list[str]:
    """Condition cells of the grid with no pair."""
    have = set(pairs["dimension"] + "/" + pairs["severity"] + "/" + pairs["style"])
    return sorted(set(grid.condition_grid()["cell_id"]) - have)



def rebuild(run: str | Path = "benchmark", kernel: str = "gama-bench") -> list[Path]:
    """Run 01_generate → 02_review → 03_compile offline with publish=True: rewrites data/gama_bench from the bank."""
    import papermill

    from .paths import NOTEBOOKS
    from .runs import run_dir

    folder = run_dir(run)
    (folder / "notebooks").mkdir(parents=True, exist_ok=True)
    for stem in ("01_generate", "02_review", "03_compile"):
        parameters = {"run_dir": str(folder), **({"publish": True} if stem == "03_compile" else {})}
        papermill.execute_notebook(str(NOTEBOOKS / f"{stem}.ipynb"), str(folder / "notebooks" / f"{stem}.ipynb"),
                                   parameters=parameters, kernel_name=kernel, cwd=str(NOTEBOOKS), progress_bar=False)
    return [BENCHMARK / name for name in BENCHMARK_FILES]


if __name__ == "__main__":
    for written in rebuild():
        print(written)
