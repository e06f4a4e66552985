"""Repository-anchored paths, so notebooks behave the same from any working directory.

The repository is the checkout this package sits in (an editable install, or PYTHONPATH). A package installed
with `pip install .` sits in site-packages, away from configs/, data/, prompts/ and notebooks/: it uses the
folder named by GAMA_ROOT, else the checkout the working directory is in.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT_ENV = "GAMA_ROOT"
MARKER = Path("configs") / "models.yaml"  # what makes a folder a GAMA-Bench checkout


def find_root(package: Path, environ: dict[str, str] | os._Environ = os.environ, cwd: Path | None = None) -> Path:
    """GAMA_ROOT when set; else the checkout holding `package`; else the working directory's checkout (or the
    package's parent, when none is found, so that a missing file is named where it was looked for)."""
    if environ.get(ROOT_ENV):
        return Path(environ[ROOT_ENV]).expanduser().resolve()
    if (package.parent / MARKER).exists():
        return package.parent
    here = (cwd or Path.cwd()).resolve()
    return next((folder for folder in (here, *here.parents) if (folder / MARKER).exists()), package.parent)


ROOT = find_root(Path(__file__).resolve().parent)
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
