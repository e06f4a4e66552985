"""The pair attributes a gap can be stratified by, declared once: where each comes from, its levels and their names.

Every evaluation row carries the condition cell (dimension, severity, style). The scenario
metadata (setting region, partner occupation and its gender stereotype, the narrator's occupation's
stereotype, affected third party;
`gama_utils.bench.compilation.METADATA_COLUMNS`) lives in the benchmark's pairs and is merged into the
evaluations by pair_id (`gama_utils.analysis.selections.with_pair_metadata`), which also fills the derived
attributes (setting language from the region). A pair without a value falls in the stratum's
`missing` level, so no pair leaves a stratified table unseen.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd

from gama_utils.bench import bank_metadata
from gama_utils.core.grid import BY_SLUG


@dataclass(frozen=True)
class Stratum:
    """One stratifiable attribute: its column, heading, origin, level order and level names."""

    key: str
    label: str
    source: str  # "evaluations": every evaluation row carries it; "benchmark": merged from the pairs by pair_id
    missing: str = "not recorded"
    order: Callable[[], Sequence[str]] | None = None  # levels in display order (others follow alphabetically)
    names: Callable[[str], str] | None = None  # a level's display name
    derived_from: str | None = None  # the benchmark column this attribute is computed from
    derive: Callable[[object], object] | None = None

    def level_name(self, level: object) -> str:
        """The display name of a level."""
        return self.names(str(level)) if self.names else str(level)

    def level_rank(self, level: object) -> tuple[int, str]:
        """Sort key of a level: declared order first, the missing level last."""
        declared = list(self.order()) if self.order else []
        text = str(level)
        if text == self.missing:
            return (len(declared) + 1, text)
        return (declared.index(text) if text in declared else len(declared), text)


def _setting_language(region: object) -> str:
    if not isinstance(region, str) or not region:
        return "not recorded"
    english = bank_metadata.english_speaking(region)
    return "unspecified" if english is None else "English-speaking" if english else "not English-speaking"


STRATA: dict[str, Stratum] = {s.key: s for s in (
    Stratum("dimension", "Dimension", "evaluations", order=lambda: list(BY_SLUG),
            names=lambda slug: BY_SLUG[slug].name if slug in BY_SLUG else slug),
    Stratum("severity", "Severity", "evaluations"),
    Stratum("style", "Style", "evaluations"),
    Stratum("setting_region", "Setting region", "benchmark"),
    Stratum("setting_language", "Setting", "benchmark", derived_from="setting_region", derive=_setting_language,
            order=lambda: ("English-speaking", "not English-speaking", "unspecified")),
    Stratum("partner_occupation", "Partner occupation", "benchmark", missing="no occupation named"),
    Stratum("occupation_stereotype", "Partner occupation stereotype", "benchmark", missing="no occupation named",
            order=lambda: bank_metadata.STEREOTYPES,
            names=lambda s: {"female": "female-stereotyped", "male": "male-stereotyped",
                             "none": "not stereotyped"}.get(s, s)),
    Stratum("narrator_occupation_stereotype", "Narrator occupation stereotype", "benchmark",
            missing="no occupation named", order=lambda: bank_metadata.STEREOTYPES,
            names=lambda s: {"female": "female-stereotyped", "male": "male-stereotyped",
                             "none": "not stereotyped"}.get(s, s)),
    Stratum("affected_third_party", "Affected third party", "benchmark",
            order=lambda: bank_metadata.THIRD_PARTIES),
)}


def stratum(key: str) -> Stratum:
    """The declared stratum `key`, or a ValueError listing the declared ones."""
    if key not in STRATA:
        raise ValueError(f"{key!r} is not a declared stratum; the attributes declared in gama_utils.analysis.strata: "
                         f"{', '.join(STRATA)}")
    return STRATA[key]


def evaluation_keys() -> tuple[str, ...]:
    """The attributes every evaluation row carries (the condition cell: dimension, severity, style)."""
    return tuple(k for k, s in STRATA.items() if s.source == "evaluations")


def benchmark_keys() -> tuple[str, ...]:
    """The attributes that come from the benchmark's pairs (merged into evaluations by pair_id)."""
    return tuple(k for k, s in STRATA.items() if s.source == "benchmark")


def with_levels(frame: pd.DataFrame, key: str) -> pd.DataFrame:
    """`frame` with stratum `key`'s missing values set to its `missing` level (so groupby keeps those pairs)."""
    declared = stratum(key)
    if key not in frame.columns:
        where = ("merge the benchmark's pairs first (gama_utils.analysis.selections.with_pair_metadata)"
                 if declared.source == "benchmark" else "every evaluations frame should carry it")
        raise ValueError(f"evaluations have no {key!r} column: {where}")
    values = frame[key].astype(object)
    return frame.assign(**{key: values.where(values.notna() & (values != ""), declared.missing).astype(str)})
