"""Repository-anchored paths, so notebooks behave the same from any working directory."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
TEMPLATES = DATA / "templates"
BENCHMARK = DATA / "gama_bench"
PAPER = DATA / "paper"
LEXICONS = DATA / "lexicons"
PROMPTS = ROOT / "prompts"
CONFIGS = ROOT / "configs"
NOTEBOOKS = ROOT / "notebooks"
OUTPUTS = Path(os.environ.get("GAMA_OUTPUTS", ROOT / "outputs"))
RUNS = OUTPUTS / "runs"
CACHE = OUTPUTS / "cache"


def resolve(path: str | os.PathLike) -> Path:
    """Return `path` as absolute, reading relative paths against the repository root."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else ROOT / p
