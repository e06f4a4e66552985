"""The benchmark's datasheet (README.md of data/gama_bench): a Jinja2 template filled with measured numbers.

`construction_summary` records the facts of one construction run (models, counts, removals,
exclusions, drops); `measures` computes, at build time, the numbers the datasheet reports about
the published templates (singular-they agreement errors, advice-question share, cross-bank
premise similarity by two methods, region shares, "!" by style, the rhetorical devices of each style
against their bounds, occupations and their stereotype direction, the metadata read twice by the rule-based
reader and by a person, `second_reader`, affected third parties); `render` fills
gama_utils/bench/jinja/datasheet.md.j2 (which includes second_reader.md.j2) with both, the composition
and the severity rubric of every dimension. Nothing here reads a clock or a path, so a rebuild gives the
same bytes.
"""

from __future__ import annotations

from pathlib import Path

import jinja2
import pandas as pd

from gama_utils.bench import bank_metadata, dataset_card, embeddings, second_reader, wording
from gama_utils.bench.benchmark_figures import DATASET_NAME
from gama_utils.bench.compilation import PAIR_COLUMNS
from gama_utils.bench.composition import OURS, PAPER, composition_table
from gama_utils.bench.deduplication import premise_similarity
from gama_utils.bench.embeddings import Backend
from gama_utils.bench.templates import BANK_VERSION
from gama_utils.core import grid

JINJA = Path(__file__).resolve().parent / "jinja"
NOT_RECORDED = "not recorded"


def construction_summary(candidates: pd.DataFrame, reviews: pd.DataFrame, posts: pd.DataFrame,
                         removals: pd.DataFrame, exclusions: pd.DataFrame, *, embedding_backend: str | Backend,
                         threshold: float | None, screening_sheet: str | Path | None,
                         cross_bank_removals: pd.DataFrame | None = None,
                         cross_bank_threshold: float = embeddings.CROSS_BANK_THRESHOLD,
                         drops: pd.DataFrame | None = None) -> dict:
    """The facts of one construction run that the datasheet reports (no paths, dates or versions)."""
    embedder = embeddings.backend(embedding_backend)
    cross = cross_bank_removals if cross_bank_removals is not None else pd.DataFrame(
        columns=["removed_id", "duplicate_of", "similarity"])
    dropped = drops if drops is not None else pd.DataFrame(columns=["template_id", "kind", "reason"])
    return {
        "generators": sorted(set(candidates["generator"])),
        "reviewers": sorted(set(reviews["reviewer"])),
        "compilers": sorted(set(posts["compiler"])),
        "simulated": bool(candidates["simulated"].any() or reviews["simulated"].any() or posts["simulated"].any()),
        "replayed_bank": bool(candidates["source_template_id"].notna().all()) and len(candidates) > 0,
        "candidates": len(candidates), "kept_by_review": int((reviews["verdict"] == "keep").sum()),
        "posts": len(posts), "failed_lint": int((~posts["usable"].astype(bool)).sum()),
        "embedding_backend": embedder.name,
        "threshold": embeddings.default_threshold(embedder) if threshold is None else float(threshold),
        "removals": removals[["removed_id", "duplicate_of", "similarity"]].to_dict("records"),
        "cross_bank_threshold": float(cross_bank_threshold),
        "cross_bank_removals": cross[["removed_id", "duplicate_of", "similarity"]].to_dict("records"),
        "screening": Path(screening_sheet).name if screening_sheet is not None else None,
        "exclusions": exclusions[["template_id", "reason"]].to_dict("records"),
        "drops": dropped[["template_id", "kind", "reason"]].to_dict("records"),
    }


def measures(pairs: pd.DataFrame, posts: pd.DataFrame) -> dict:
    """The numbers the datasheet reports about the published pairs (posts give their template texts)."""
    texts = posts.set_index("template_id").loc[list(pairs["template_id"]), "text"]
    published = posts[posts["template_id"].isin(pairs["template_id"])][["template_id", "text"]]
    agreement = [error for prompt in pairs["prompt_neutral"] for error in wording.agreement_errors(prompt)]
    advice = [wording.advice_question_problem(text) is None for text in texts]
    exclaimed = pairs.assign(exclaims=[wording.exclamation_count(t) > 0 for t in texts])
    return {
        "agreement_errors": len(agreement),
        "agreement_examples": agreement[:5],
        "advice_question_share": round(sum(advice) / len(advice), 4) if advice else None,
        "premise_similarity": _similarity(premise_similarity(published)),
        "paraphrase_similarity": _similarity(premise_similarity(published, "paraphrase")),
        "style_devices": _style_devices(published.merge(pairs[["template_id", "style"]], on="template_id")),
        "regions": {track: _regions(pairs[pairs["track"] == track]) for track in grid.TRACKS},
        "exclamations": [{"style": style, "templates": len(group), "with_exclamation": int(group.sum()),
                          "share": round(float(group.mean()), 3) if len(group) else None}
                         for style in grid.STYLES
                         for group in [exclaimed.loc[exclaimed["style"] == style, "exclaims"]]],
        "occupations": _occupations(pairs),
        "narrator_occupations": _narrator_occupations(pairs),
        "second_reading": _second_reading(posts[posts["template_id"].isin(pairs["template_id"])]),
        "second_reader": second_reader.summary(pairs),
        "premise_review": _premise_review(published),
        "third_parties": _third_parties(pairs),
    }


def _similarity(summary: dict) -> dict:
    keep = ("backend", "n_texts", "n_pairs", "percentiles", "max", "pairs_at_or_above")
    top = summary.get("top_pairs") or []
    picked = {k: summary[k] for k in keep}
    picked["pairs_at_or_above"] = {f"{float(t):.2f}": n for t, n in summary["pairs_at_or_above"].items()}
    return {**picked, "closest": top[0] if top else None}


def _style_devices(templates: pd.DataFrame) -> dict:
    table = wording.style_table(templates)
    rows = table.to_dict("records")
    return {"rows": rows, "within": int(table["within"].sum()), "bounds": len(table),
            "over": [r for r in rows if not r["within"]],
            "templates_over": int(sum(bool(wording.style_problems(t, s))
                                      for t, s in zip(templates["text"], templates["style"])))}


def _regions(pairs: pd.DataFrame) -> dict:
    codes = pairs["setting_region"].where(pairs["setting_region"].notna(), NOT_RECORDED)
    english = codes.map(lambda c: None if c in (NOT_RECORDED, bank_metadata.UNSPECIFIED)
                        else bank_metadata.english_speaking(c))
    n = len(pairs)
    other = int(english.eq(False).sum())
    names = bank_metadata.regions().set_index("code")["name"]
    top = codes[english.notna()].value_counts().head(8)
    return {"templates": n, "english_speaking": int(english.eq(True).sum()), "other": other,
            "unspecified": int(codes.eq(bank_metadata.UNSPECIFIED).sum()),
            "not_recorded": int(codes.eq(NOT_RECORDED).sum()), "countries": int(codes[english.notna()].nunique()),
            "share_outside_english_speaking": round(other / n, 3) if n else None,
            "most_common": [f"{names.get(code, code)} {count}" for code, count in top.items()]}


def _occupations(pairs: pd.DataFrame) -> dict:
    intimate = pairs[pairs["track"] == "intimate"]
    recorded = intimate[intimate["partner_occupation"].notna()]
    by_direction = recorded["occupation_stereotype"].value_counts()
    examples = {direction: sorted(set(recorded.loc[recorded["occupation_stereotype"] == direction,
                                                   "partner_occupation"]))
                for direction in bank_metadata.STEREOTYPES}
    return {"intimate_templates": len(intimate), "recorded": len(recorded),
            "distinct": int(recorded["partner_occupation"].nunique()),
            "by_direction": {d: int(by_direction.get(d, 0)) for d in bank_metadata.STEREOTYPES},
            "examples": examples}


def _narrator_occupations(pairs: pd.DataFrame) -> dict:
    recorded = pairs[pairs["narrator_occupation"].notna()]
    by_direction = recorded["narrator_occupation_stereotype"].value_counts()
    return {"recorded": len(recorded), "distinct": int(recorded["narrator_occupation"].nunique()),
            "by_track": {t: int((recorded["track"] == t).sum()) for t in grid.TRACKS},
            "by_direction": {d: int(by_direction.get(d, 0)) for d in bank_metadata.STEREOTYPES},
            "examples": {d: sorted(set(recorded.loc[recorded["narrator_occupation_stereotype"] == d,
                                                    "narrator_occupation"])) for d in bank_metadata.STEREOTYPES}}


def _second_reading(templates: pd.DataFrame, reviews: pd.DataFrame | None = None) -> list[dict]:
    """Per metadata field: templates compared, agreements with the rule-based reader, disagreements by verdict."""
    found = bank_metadata.second_reading_disagreements(templates)
    reviews = bank_metadata.reviewed_disagreements() if reviews is None else reviews
    judged = found.merge(reviews, on=["template_id", "field", "recorded", "rule"], how="left")
    rows = []
    for field in bank_metadata.SECOND_READING_FIELDS:
        compared = int((templates["track"] == "intimate").sum()) if field == "partner_occupation" else len(templates)
        mine = judged[judged["field"] == field]
        verdicts = mine["verdict"].fillna("").value_counts()
        rows.append({"field": field, "compared": compared, "agree": compared - len(mine), "disagree": len(mine),
                     "unreviewed": int(verdicts.get("", 0)),
                     "verdicts": [{"verdict": v, "n": int(n)} for v, n in sorted(verdicts.items()) if v]})
    return rows


def _premise_review(published: pd.DataFrame, review: pd.DataFrame | None = None) -> dict:
    """The paraphrase reading's pairs an author read (data/bank_reviews/premise_pairs.csv), by verdict, with the
    current cosine of each pair under both methods."""
    if review is None:
        path = bank_metadata.REVIEWS / "premise_pairs.csv"
        review = pd.read_csv(path, keep_default_na=False) if path.exists() else pd.DataFrame(
            columns=["id_a", "id_b", "verdict"])
    ids = list(published["template_id"])
    index = {t: i for i, t in enumerate(ids)}
    review = review[review["id_a"].isin(index) & review["id_b"].isin(index)]
    if review.empty:
        return {"read": 0, "verdicts": [], "same_premise_now": None}
    cosines = {name: embeddings.cosine_matrix(list(published["text"]), name) for name in ("premise", "paraphrase")}
    same = review[review["verdict"] == "same premise"]
    now = {name: round(float(max(m[index[a], index[b]] for a, b in zip(same["id_a"], same["id_b"]))), 3)
           if len(same) else None for name, m in cosines.items()}
    return {"read": len(review), "deepest_rank": int(review["rank"].max()),
            "verdicts": [{"verdict": v, "n": int(n)} for v, n in review["verdict"].value_counts().sort_index().items()],
            "same_premise": len(same), "retold": int(same["action"].str.contains(" retold ").sum()),
            "same_premise_now": now}


def _third_parties(pairs: pd.DataFrame) -> list[dict]:
    values = pairs["affected_third_party"].where(pairs["affected_third_party"].notna(), NOT_RECORDED)
    rows = []
    for value in (*bank_metadata.THIRD_PARTIES, NOT_RECORDED):
        counts = {track: int((values[pairs["track"] == track] == value).sum()) for track in grid.TRACKS}
        if sum(counts.values()):
            rows.append({"value": value, **counts, "total": sum(counts.values())})
    return rows


def _composition_rows(pairs: pd.DataFrame) -> list[dict]:
    table = composition_table(pairs)
    rows = []
    for (track, name), row in table.iterrows():
        ours, paper = row[OURS], row[PAPER]
        rows.append({"track": track, "name": name, **{k: int(ours[k]) for k in (*grid.SEVERITIES, "total")},
                     "paper_total": None if pd.isna(paper["total"]) else int(paper["total"])})
    return rows


def context(pairs: pd.DataFrame, summary: dict, measured: dict, manifest: str) -> dict:
    """Everything the datasheet template reads (`manifest`: the name of the benchmark's SHA-256 manifest)."""
    intimate = pairs[pairs["track"] == "intimate"]
    paper = grid.composition()
    return {
        "name": DATASET_NAME, "n": len(pairs), "columns": list(PAIR_COLUMNS), "manifest": manifest,
        "tracks": {t: int((pairs["track"] == t).sum()) for t in grid.TRACKS},
        "n_dimensions": len(grid.DIMENSIONS), "severities": grid.SEVERITIES,
        "styles": {s: int((pairs["style"] == s).sum()) for s in grid.STYLES},
        "relationships": intimate["relationship"].value_counts().to_dict(),
        "composition": _composition_rows(pairs),
        "paper_total": int(paper["n"].sum()), "paper_dimensions": int(paper["dimension"].nunique()),
        "dimensions_without_paper_counts": [d.name for d in grid.DIMENSIONS if not d.paper_counts],
        "rubric": [{"name": d.name, "track": d.track, "levels": d.severity_rubric} for d in grid.DIMENSIONS],
        "third_party_vocabulary": bank_metadata.THIRD_PARTIES,
        "female_at_least": bank_metadata.FEMALE_AT_LEAST, "male_at_most": bank_metadata.MALE_AT_MOST,
        "cross_bank_reasoning": embeddings.CROSS_BANK_REASONING, "cross_bank_default": embeddings.CROSS_BANK_THRESHOLD,
        "track_files": dataset_card.TRACK_FILES, "data_license_name": dataset_card.DATA_LICENSE_NAME,
        "summary": summary, "m": measured, "bank_version": BANK_VERSION,
    }


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(JINJA), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)
    env.filters["num"] = lambda value: f"{value:,}"
    env.filters["code_list"] = lambda names: ", ".join(f"`{n}`" for n in names) or "none"
    return env


def render(pairs: pd.DataFrame, summary: dict, measured: dict, manifest: str) -> str:
    """The datasheet (Markdown) of a benchmark: gama_utils/bench/jinja/datasheet.md.j2 filled from `context`."""
    return _environment().get_template("datasheet.md.j2").render(context(pairs, summary, measured, manifest))
