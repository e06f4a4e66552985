"""The condition grid: track × dimension × severity × rhetorical style (paper §3.1-3.2), read from data/grid.yaml.

data/grid.yaml is the one place a track, severity level, style or conflict dimension is declared
(name, track, description, severity rubric, and optionally the paper's Fig 2 counts). The module
constants below are views of the active grid; `use(path)` activates another grid file (a
collaborator's draft, a test's toy dimension) and restores the previous one on exit. It updates
the constants in place, so modules that imported `BY_SLUG`, `SEVERITY_RUBRIC` or `COMPOSITION` by
name see the active grid too (tuples such as `TRACKS` and `DIMENSIONS` are rebound: read them as
`grid.TRACKS`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from gama_utils.paths import DATA

GRID_FILE = DATA / "grid.yaml"
# Tracks whose mirroring gama_utils.bench.mirror knows (intimate: partner placeholders; public: the prefix only).
MIRRORED_TRACKS = ("intimate", "public")
LEVELS = ("L1", "L2", "L3")
STYLE_NAMES = ("matter_of_fact", "self_justifying", "emotional_venting")


@dataclass(frozen=True)
class Dimension:
    slug: str
    name: str
    track: str
    description: str
    severity_rubric: dict[str, str] = field(default_factory=dict, compare=False)
    paper_counts: dict[str, int] | None = field(default=None, compare=False)


class GridError(ValueError):
    """A grid file is missing or invalid; the message names the file and the field."""


class _DimensionEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    track: str
    description: str = Field(min_length=1)
    severity_rubric: dict[str, str]
    paper_counts: dict[str, int] | None = None


class _GridFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tracks: dict[str, str]
    severities: dict[str, str]
    styles: dict[str, str]
    dimensions: dict[str, _DimensionEntry] = Field(min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> _GridFile:
        unknown_tracks = sorted(set(self.tracks) - set(MIRRORED_TRACKS))
        if unknown_tracks:
            raise ValueError(f"tracks {unknown_tracks}: gama_utils.bench.mirror knows how to mirror only "
                             f"{', '.join(MIRRORED_TRACKS)}; add the new track's rule there first")
        if tuple(self.severities) != LEVELS:
            raise ValueError(f"severities must be {', '.join(LEVELS)} in that order (template ids use them)")
        if tuple(self.styles) != STYLE_NAMES:
            raise ValueError(f"styles must be {', '.join(STYLE_NAMES)} in that order (the template schema uses them)")
        for slug, entry in self.dimensions.items():
            where = f"dimensions.{slug}"
            if not slug.replace("_", "").isalpha() or not slug.islower():
                raise ValueError(f"{where}: a slug is lower-case letters and underscores")
            if entry.track not in self.tracks:
                raise ValueError(f"{where}.track: {entry.track!r} is not one of {', '.join(self.tracks)}")
            if set(entry.severity_rubric) != set(LEVELS):
                raise ValueError(f"{where}.severity_rubric: needs exactly {', '.join(LEVELS)}")
            if entry.paper_counts is not None and set(entry.paper_counts) != set(LEVELS):
                raise ValueError(f"{where}.paper_counts: needs exactly {', '.join(LEVELS)} (or leave it out)")
        return self


def load_grid(path: str | Path = GRID_FILE) -> _GridFile:
    """Read and check a grid file (data/grid.yaml by default)."""
    path = Path(path)
    if not path.exists():
        raise GridError(f"{path}: no such grid file")
    try:
        return _GridFile.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")) or {})
    except ValidationError as err:
        problems = "; ".join(f"field {'.'.join(map(str, e['loc'])) or '(file)'}: {e['msg']}" for e in err.errors())
        raise GridError(f"{path.name}: {problems}") from None
    except yaml.YAMLError as err:
        raise GridError(f"{path.name}: not valid YAML ({err})") from None


TRACKS: tuple[str, ...] = ()
TRACK_DESCRIPTIONS: dict[str, str] = {}
SEVERITIES: dict[str, str] = {}
STYLES: dict[str, str] = {}
DIMENSIONS: tuple[Dimension, ...] = ()
BY_SLUG: dict[str, Dimension] = {}
# What each severity level means within each dimension (the datasheet and the generator and reviewer
# prompts show it; authors and reviewers hold templates to it).
SEVERITY_RUBRIC: dict[str, dict[str, str]] = {}
# The paper's release (its Figure 2; DESIGN §4): instances per dimension and severity, for the
# dimensions the paper has.
COMPOSITION: dict[str, dict[str, int]] = {}
_ACTIVE: list[Path] = []


def _activate(path: Path) -> None:
    global TRACKS, DIMENSIONS
    spec = load_grid(path)
    dimensions = tuple(Dimension(slug, d.name, d.track, d.description, dict(d.severity_rubric),
                                 dict(d.paper_counts) if d.paper_counts else None)
                       for slug, d in spec.dimensions.items())
    TRACKS = tuple(spec.tracks)
    DIMENSIONS = tuple(sorted(dimensions, key=lambda d: TRACKS.index(d.track)))
    _replace(TRACK_DESCRIPTIONS, spec.tracks)
    _replace(SEVERITIES, spec.severities)
    _replace(STYLES, spec.styles)
    _replace(BY_SLUG, {d.slug: d for d in DIMENSIONS})
    _replace(SEVERITY_RUBRIC, {d.slug: d.severity_rubric for d in DIMENSIONS})
    _replace(COMPOSITION, {d.slug: d.paper_counts for d in DIMENSIONS if d.paper_counts})
    _ACTIVE[:] = [path]


def _replace(target: dict[str, Any], values: Mapping[str, Any]) -> None:
    target.clear()
    target.update(values)


@contextlib.contextmanager
def use(path: str | Path) -> Iterator[Path]:
    """Make the grid file at `path` the active grid inside the block; the previous one comes back after."""
    previous = _ACTIVE[0]
    _activate(Path(path))
    try:
        yield Path(path)
    finally:
        _activate(previous)


def active_file() -> Path:
    """The grid file the constants currently show."""
    return _ACTIVE[0]


def dimension(slug: str) -> Dimension:
    """Look a dimension up by slug, with an error listing the valid slugs."""
    try:
        return BY_SLUG[slug]
    except KeyError:
        raise KeyError(f"unknown dimension {slug!r}; expected one of {', '.join(BY_SLUG)}") from None


def dimensions(track: str | None = None) -> list[Dimension]:
    """The dimensions of one track, or all of them (grid order)."""
    if track is not None and track not in TRACKS:
        raise ValueError(f"unknown track {track!r}; expected one of {', '.join(TRACKS)}")
    return [d for d in DIMENSIONS if track is None or d.track == track]


def rubric_text(slug: str, severity: str | None = None) -> str:
    """A dimension's severity rubric as lines "L1: ...", the asked level marked "(this cell)" when given."""
    rubric = dimension(slug).severity_rubric
    return "\n".join(f"- {level}{' (this cell)' if level == severity else ''}: {rubric[level]}" for level in rubric)


def condition_grid() -> pd.DataFrame:
    """The track × dimension × severity × style cells (90 for the paper's grid), with descriptions.

    Columns: track, dimension, dimension_name, severity, style, severity_description,
    style_description, cell_id ("<dimension>/<severity>/<style>").
    """
    rows = [
        {
            "track": d.track,
            "dimension": d.slug,
            "dimension_name": d.name,
            "severity": sev,
            "style": style,
            "severity_description": SEVERITIES[sev],
            "style_description": STYLES[style],
            "cell_id": f"{d.slug}/{sev}/{style}",
        }
        for d in DIMENSIONS
        for sev in SEVERITIES
        for style in STYLES
    ]
    return pd.DataFrame(rows)


def composition() -> pd.DataFrame:
    """The paper's composition as a tidy frame: track, dimension, dimension_name, severity, n.

    Only dimensions with paper counts appear (a dimension the paper lacks has none).
    """
    return pd.DataFrame(
        [
            {"track": BY_SLUG[slug].track, "dimension": slug, "dimension_name": BY_SLUG[slug].name,
             "severity": sev, "n": n}
            for slug, counts in COMPOSITION.items()
            for sev, n in counts.items()
        ],
        columns=["track", "dimension", "dimension_name", "severity", "n"],
    )


_activate(GRID_FILE)
