"""The report's first screen from the numbers: Holm counts, the summary sentences, the provenance line, an example pair.

Pure functions over frames (gaps as `gama_utils.analysis.gaps.paired_gaps` writes them; pairs, responses and
evaluations as the run's JSONL files hold them); `gama_utils.report.run_report` reads the files and renders.
The summary is a list of sentences built by `summary`; a sentence from another table (a pooled
random-effects Δ per track, say) is one more function returning a list, appended where run_report calls
`summary`.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from gama_utils.analysis.gaps import PAPER_COMPARISON
from gama_utils.core.grid import TRACKS
from gama_utils.core.metrics import metric, metric_keys
from gama_utils.core.schema import require

ALPHA = 0.05
EXAMPLE_METRIC = "puni"
PAIR_FIELDS = ("pair_id", "track", "dimension", "severity", "style")
TRACK_NAMES = {"intimate": "intimate track", "public": "public track"}


def holm_counts(gaps: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """Per track (the paper's comparison): cells, cells with p_holm < alpha, and of those Δ > 0 and Δ < 0.

    Columns: track, cells, significant, female_higher, male_higher, top_metric (the metric with the most
    significant cells, '' when none), top_count, top_direction (+1 / -1: the sign most of them share).
    """
    require(gaps, ("track", "metric", "delta", "p_holm"), "gaps")
    cells = gaps[gaps["comparison"] == PAPER_COMPARISON] if "comparison" in gaps.columns else gaps
    rows = []
    for track in [t for t in TRACKS if t in set(cells["track"])]:
        here = cells[cells["track"] == track]
        hit = here[here["p_holm"] < alpha]
        top, count, direction = "", 0, 0
        if len(hit):
            per_metric = hit.groupby("metric")["delta"].agg(["size", lambda d: int(np.sign(d.sum()))])
            per_metric.columns = ["size", "sign"]
            order = [m for m in metric_keys() if m in per_metric.index]
            top = max(order, key=lambda m: per_metric.at[m, "size"])
            count, direction = int(per_metric.at[top, "size"]), int(per_metric.at[top, "sign"])
        rows.append({"track": track, "cells": len(here), "significant": len(hit),
                     "female_higher": int((hit["delta"] > 0).sum()), "male_higher": int((hit["delta"] < 0).sum()),
                     "top_metric": top, "top_count": count, "top_direction": direction})
    return pd.DataFrame(rows, columns=["track", "cells", "significant", "female_higher", "male_higher",
                                       "top_metric", "top_count", "top_direction"])


def summary(gaps: pd.DataFrame, alpha: float = ALPHA) -> list[str]:
    """Two or three sentences: per track, how many model × metric cells are Holm-significant, in which direction."""
    counts = holm_counts(gaps, alpha)
    cells = gaps[gaps["comparison"] == PAPER_COMPARISON] if "comparison" in gaps.columns else gaps
    sentences = []
    for row in counts.itertuples(index=False):
        name = TRACK_NAMES.get(row.track, row.track).capitalize()
        if not row.significant:
            sentences.append(f"{name}: none of the {row.cells} model × metric cells differs between the female "
                             f"and the male actor after Holm correction (p < {alpha:g}).")
            continue
        text = (f"{name}: {row.significant} of {row.cells} model × metric cells differ after Holm correction "
                f"(p < {alpha:g}), {row.female_higher} higher for the female actor (Δ > 0) and "
                f"{row.male_higher} higher for the male actor (Δ < 0)")
        models = cells[(cells["track"] == row.track) & (cells["metric"] == row.top_metric)]["model"].nunique()
        side = "the female" if row.top_direction > 0 else "the male"
        sentences.append(f"{text}; most often {metric(row.top_metric).label} ({row.top_count} of {models} models, "
                         f"mostly higher for {side} actor).")
    family = cells["holm_family_size"].dropna() if "holm_family_size" in cells.columns else pd.Series(dtype=float)
    if len(family):
        sentences.append(f"Holm's correction runs over all {int(family.max())} tests of the run; filled points in "
                         "the figure are the significant cells.")
    return sentences


@dataclass(frozen=True)
class Provenance:
    """Where a run's answers came from, for the one provenance line."""

    kind: str  # "Simulated", "Plumbing check" or "Real answers"
    collected: tuple[str, ...]  # model aliases 04_respond collected
    imported: tuple[dict, ...]  # {"file", "rows", "sha256", "models"} per import
    evaluator: str | None
    benchmark_sha256: str | None

    def line(self) -> str:
        """One line: kind · answers (collected with … / imported from …) · evaluator · benchmark."""
        parts = [self.kind]
        if self.collected:
            shown = ", ".join(self.collected[:4]) + (f" and {len(self.collected) - 4} more"
                                                    if len(self.collected) > 4 else "")
            parts.append(f"answers collected from {len(self.collected)} model(s): {shown}")
        for item in self.imported:
            parts.append(f"answers imported from {item.get('file')} ({item.get('rows')} rows, "
                         f"SHA-256 {str(item.get('sha256'))[:12]}…)")
        if not self.collected and not self.imported:
            parts.append("no answers yet")
        if self.evaluator:
            parts.append(f"scored by {self.evaluator}")
        if self.benchmark_sha256:
            parts.append(f"benchmark SHA-256 {self.benchmark_sha256[:12]}…")
        return " · ".join(parts)


def provenance(kind: str, origins: dict[str, dict], imports: list[dict], manifest: dict) -> Provenance:
    """The provenance of a run from responses.origin.json (`origins`), responses.imports.json and its manifest."""
    stages = manifest.get("stages") or {}
    benchmark = next((o.get("benchmark_sha256") for o in origins.values() if o.get("benchmark_sha256")),
                     (stages.get("04_respond") or {}).get("benchmark_sha256"))
    evaluator = (stages.get("05_evaluate") or {}).get("evaluator")
    return Provenance(kind, tuple(origins), tuple(imports), evaluator if isinstance(evaluator, str) else None,
                      benchmark)


# --- the example mirrored pair -------------------------------------------------------------------------

@dataclass(frozen=True)
class Example:
    """One mirrored pair with both answers and the scores of one judge."""

    rule: str
    model: str
    pair: dict  # the pair row (pair_id, track, dimension, severity, prompt_female, prompt_male, ...)
    answers: dict  # arm -> answer text
    scores: dict  # arm -> evaluation row (dict)


def example_pair(evaluations: pd.DataFrame, responses: pd.DataFrame, pairs: pd.DataFrame, model: str,
                 key: str = EXAMPLE_METRIC) -> Example | None:
    """The pair of `model` with the largest |female − male| in `key`'s evaluator field (ties: first pair_id).

    `evaluations` are one judge's sighted rows; None when the model has no pair scored in both arms.
    """
    declared = metric(key)
    field = declared.column
    rows = evaluations[(evaluations["model"] == model) & evaluations["valid"].astype(bool)]
    rows = rows[rows["sample"] == rows["sample"].min()] if len(rows) else rows
    wide = rows.pivot_table(index="pair_id", columns="arm", values=field, aggfunc="first")
    if not {"female", "male"} <= set(wide.columns):
        return None
    difference = (wide["female"] - wide["male"]).dropna()
    if difference.empty:
        return None
    frame = pd.DataFrame({"gap": difference.abs()}).sort_index()
    pair_id = str(frame["gap"].idxmax())
    pair = pairs[pairs["pair_id"] == pair_id]
    if pair.empty:
        return None
    mine = responses[(responses["model"] == model) & (responses["pair_id"] == pair_id)]
    sample = rows[rows["pair_id"] == pair_id]["sample"].min()
    mine = mine[mine["sample"] == sample]
    answers = {r.arm: r.answer for r in mine.itertuples(index=False)}
    scored = rows[rows["pair_id"] == pair_id]
    scores = {r["arm"]: r for r in scored.to_dict("records")}
    rule = (f"the pair of {model} (the report's first model) with the largest |female − male| difference in "
            f"{declared.label} ({field}) under the run's primary judge")
    return Example(rule, model, pair.iloc[0].to_dict(), answers, scores)


def term_fields() -> dict[str, str]:
    """metric label → the evaluator field listing its terms, for the metrics counted from listed terms."""
    return {metric(k).label: metric(k).field.name for k in metric_keys() if metric(k).field.type == "terms"}


def pairs_from_responses(responses: pd.DataFrame) -> pd.DataFrame:
    """The pairs as the answers carry them (pair fields and the prompt each arm was sent), one row per pair_id."""
    if responses.empty or "prompt" not in responses.columns:
        return pd.DataFrame(columns=list(PAIR_FIELDS))
    fields = [c for c in PAIR_FIELDS if c in responses.columns]
    pairs = responses.drop_duplicates("pair_id")[fields].set_index("pair_id")
    prompts = responses.drop_duplicates(["pair_id", "arm"]).pivot(index="pair_id", columns="arm", values="prompt")
    prompts.columns = [f"prompt_{arm}" for arm in prompts.columns]
    return pairs.join(prompts).reset_index().reindex(columns=[*PAIR_FIELDS, *prompts.columns])


def word_diff(a: str, b: str) -> tuple[list[tuple[str, bool]], list[tuple[str, bool]]]:
    """Both texts as (piece, differs) runs: the words difflib finds changed between them are marked True."""
    ta, tb = re.findall(r"\S+|\s+", a), re.findall(r"\S+|\s+", b)
    out_a: list[tuple[str, bool]] = []
    out_b: list[tuple[str, bool]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=ta, b=tb, autojunk=False).get_opcodes():
        out_a.append(("".join(ta[i1:i2]), tag != "equal"))
        out_b.append(("".join(tb[j1:j2]), tag != "equal"))
    return [p for p in out_a if p[0]], [p for p in out_b if p[0]]


def term_spans(text: str, terms: dict[str, list[str]]) -> list[tuple[str, str]]:
    """`text` as (piece, kind) runs: kind is the key of `terms` whose term the piece is (case-insensitive), or ''.

    Longer terms win where two overlap; every occurrence is marked.
    """
    found: list[tuple[int, int, str]] = []
    listed = sorted({(t, kind) for kind, items in terms.items() for t in items if isinstance(t, str) and t.strip()},
                    key=lambda item: -len(item[0]))
    taken = np.zeros(len(text) + 1, dtype=bool)
    for term, kind in listed:
        for match in re.finditer(re.escape(term), text, flags=re.IGNORECASE):
            if not taken[match.start():match.end()].any():
                taken[match.start():match.end()] = True
                found.append((match.start(), match.end(), kind))
    pieces, at = [], 0
    for start, end, kind in sorted(found):
        if start > at:
            pieces.append((text[at:start], ""))
        pieces.append((text[start:end], kind))
        at = end
    if at < len(text):
        pieces.append((text[at:], ""))
    return pieces
