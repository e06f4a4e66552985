"""The six response-framing metrics of the paper (§3.3, Fig 6) in one place.

Each metric is computed per response from an evaluation row (see `gama_utils.schema`):
counts for Puni./Ther., the 1-5 rating for Sev., and 0/1 indicators for the three
rates, whose means are reported in percent (gaps in percentage points).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    column: str
    kind: str  # "count", "rating" or "rate"
    description: str

    @property
    def is_rate(self) -> bool:
        return self.kind == "rate"


METRICS: tuple[Metric, ...] = (
    Metric("puni", "Puni.", "punitive_count", "count", "number of punitive words/phrases"),
    Metric("ther", "Ther.", "therapeutic_count", "count", "number of therapeutic/empathy words/phrases"),
    Metric("sev", "Sev.", "severity_rating", "rating", "severity rating of the actor's conduct (1-5)"),
    Metric("emp_agg", "Emp.-Agg.", "empathises_with_actor", "rate", "% of responses empathising with the actor"),
    Metric("instr", "Instr.", "instructional", "rate", "% of responses instructional/accusatory toward the actor"),
    Metric("full_bl", "Full-Bl.", "full_blame", "rate", "% of responses assigning full blame to the actor"),
)
METRIC_KEYS: tuple[str, ...] = tuple(m.key for m in METRICS)
BY_KEY: dict[str, Metric] = {m.key: m for m in METRICS}
CORE_TEST_METRICS: tuple[str, ...] = ("puni", "ther", "emp_agg", "instr")  # the four of Table 6


def metric(key: str) -> Metric:
    """Look a metric up by key, with an error that lists the valid keys."""
    try:
        return BY_KEY[key]
    except KeyError:
        raise KeyError(f"unknown metric {key!r}; expected one of {', '.join(METRIC_KEYS)}") from None


def scale(key: str) -> float:
    """Factor that turns a metric's per-response mean into the paper's unit (100 for rates)."""
    return 100.0 if metric(key).is_rate else 1.0
