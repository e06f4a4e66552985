"""Column contracts of the DataFrames that pass between pipeline stages.

Every stage reads and writes these columns (extra columns are allowed). `require`
checks a frame at a stage boundary and names what is missing. Where a frame's input is not in a run
(no public-track pairs, nothing scored blind, one sample per prompt), the function returns `Absent`
with the reason instead; functions marked `passes_absent` hand an Absent argument on unchanged, and
the notebooks' output helpers show the reason in one line, so a notebook needs no guard.

pairs (03_compile → 04_respond), one row per mirrored pair:
    pair_id, template_id, track, dimension, severity, style, relationship,
    prompt_male, prompt_female, prompt_neutral
responses (04_respond → 05_evaluate), one row per pair × model × arm × sample:
    pair_id, track, dimension, severity, style, model, arm ("male"/"female"/"neutral"),
    sample, prompt, prompt_hash, answer, reasoning, finish_reason, input_tokens, output_tokens,
    latency_s, error (None when the call succeeded), simulated (bool);
    optional: group (the model's row group in tables, from the registry; "other" when it has none)
evaluations (05_evaluate → 06/07/08), one row per response × evaluator:
    pair_id, track, dimension, severity, style, model, arm, sample, evaluator, blind,
    valid (bool), then the registered metrics' columns (`gama_utils.core.rubric.metric_columns`; for
    the paper's six: punitive_terms, therapeutic_terms (lists of str), punitive_count,
    therapeutic_count (int), severity_rating (int 1-5), empathizes_with_actor, instructional,
    full_blame (0/1), blame_attribution ("full"/"partial"/"none")), invalid_reason,
    simulated (bool); optional: group (carried from responses)
gaps (06 → tables/plots/robustness), one row per model × track × metric [× stratum]:
    model, track, metric, male, female, delta, n_pairs, n_excluded, ci_low, ci_high,
    p_value, p_holm, effect_size, simulated; optional: group (carried from evaluations)
    (means and Δ in the paper's units: counts/ratings as is, rates in %, Δ in points)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import pandas as pd

from gama_utils.core.rubric import metric_columns

PAIRS = ("pair_id", "template_id", "track", "dimension", "severity", "style", "relationship",
         "prompt_male", "prompt_female", "prompt_neutral")
CELL = ("track", "dimension", "severity", "style")
RESPONSES = ("pair_id", *CELL, "model", "arm", "sample", "prompt", "prompt_hash", "answer", "reasoning",
             "finish_reason", "input_tokens", "output_tokens", "latency_s", "error", "simulated")
EVALUATION_KEYS = ("pair_id", *CELL, "model", "arm", "sample", "evaluator", "blind", "valid")
GAPS = ("model", "track", "metric", "male", "female", "delta", "n_pairs", "n_excluded",
        "ci_low", "ci_high", "p_value", "p_holm", "effect_size", "simulated")
ARMS = ("male", "female", "neutral")
OTHER_GROUP = "other"  # the row group of a model the registry gives no group
BLAME_LEVELS = ("full", "partial", "none")


def evaluations_columns() -> tuple[str, ...]:
    """The evaluations frame's columns: keys, the registered metrics' columns, invalid_reason, simulated."""
    return (*EVALUATION_KEYS, *metric_columns(), "invalid_reason", "simulated")


class SchemaError(ValueError):
    """A DataFrame lacks columns a stage needs."""


def require(df: pd.DataFrame, columns: tuple[str, ...] | list[str], what: str) -> pd.DataFrame:
    """Return `df` unchanged if it has every column in `columns`, else raise naming the missing ones."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise SchemaError(f"{what}: missing column(s) {', '.join(missing)}; has {', '.join(map(str, df.columns))}")
    return df


@dataclass(frozen=True)
class Absent:
    """In place of a frame whose input is not in the run: the reason, in one line."""

    reason: str


def absent_track(frame: pd.DataFrame, track: str) -> Absent | None:
    """Absent, saying so, when `frame` has no row of `track`; None when it has."""
    return None if track in set(frame["track"]) else Absent(f"this run has no {track}-track pairs")


Frame = TypeVar("Frame", bound=Callable[..., Any])


def passes_absent(fn: Frame) -> Frame:
    """Make `fn` return the first Absent among its arguments unchanged instead of running."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        for value in (*args, *kwargs.values()):
            if isinstance(value, Absent):
                return value
        return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]

