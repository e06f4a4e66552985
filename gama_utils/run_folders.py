"""Run folders: where a run may live, and writing its files so that a crash never tears one.

A run lives under the outputs folder (outputs/, or GAMA_OUTPUTS): a bare name is outputs/runs/<name>, a
relative path that starts with outputs/ is read under the outputs folder. A folder elsewhere needs the
explicit flag (`--run-dir-anywhere`, or the environment variable GAMA_RUN_DIR_ANYWHERE=1 for notebooks run
by papermill or JupyterLab). The repository's own folders (the root, notebooks/, data/, gama_utils/,
prompts/, configs/, tests/, benchmarks/, .git, anything inside them, and anything above the root) and the
outputs folder's own outputs/, outputs/runs/ and outputs/cache/ are never a run folder, whatever the flag:
a run writes executed notebooks, tables and a manifest into its folder and would overwrite them.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from . import paths

ANYWHERE_ENV = "GAMA_RUN_DIR_ANYWHERE"
REPOSITORY_FOLDERS = ("notebooks", "data", "gama_utils", "prompts", "configs", "tests", "benchmarks", ".git")


class RunFolderError(ValueError):
    """A run folder that is refused: a repository folder, the outputs folder itself, or outside outputs/."""


def anywhere_allowed() -> bool:
    """Whether the environment allows run folders outside the outputs folder (GAMA_RUN_DIR_ANYWHERE=1)."""
    return os.environ.get(ANYWHERE_ENV, "").strip().lower() in {"1", "true", "yes"}


def run_dir(run: str | Path, anywhere: bool | None = None) -> Path:
    """The folder of a run, refused (RunFolderError) where a run must never be written.

    A bare name lives under outputs/runs/; a relative path that starts with outputs/ is read under the
    outputs folder; any other relative path is read from the repository root. `anywhere` (default: the
    environment's GAMA_RUN_DIR_ANYWHERE) allows folders outside the outputs folder, never repository ones.
    """
    text = str(run).strip()
    if not text or set(text) <= {".", "/", os.sep}:
        raise RunFolderError(f"{text!r} is not a run: give a run name (e.g. offline) or a folder under "
                             f"{paths.OUTPUTS}")
    path = Path(text).expanduser()
    if not path.is_absolute() and path.parts[0] == "outputs":
        folder = paths.OUTPUTS.joinpath(*path.parts[1:])
    elif len(path.parts) > 1 or path.is_absolute():
        folder = paths.resolve(path)
    elif text in REPOSITORY_FOLDERS:
        raise RunFolderError(f"run name {text!r} reads as the repository's or outputs' own {text}/ folder; "
                             "choose another name")
    else:
        folder = paths.RUNS / text
    problem = placement_problem(folder, anywhere_allowed() if anywhere is None else anywhere)
    if problem:
        raise RunFolderError(problem)
    return folder


def placement_problem(folder: Path, anywhere: bool = False) -> str | None:
    """Why `folder` cannot be a run folder, or None when it can."""
    target = _real(folder)
    root, outputs = _real(paths.ROOT), _real(paths.OUTPUTS)
    if target == root or _inside(root, target):
        return (f"{folder} is the repository root or a folder above it: a run would overwrite the repository's "
                f"files; use a folder under {paths.OUTPUTS}")
    for name in REPOSITORY_FOLDERS:
        if _inside(target, root / name):
            return (f"{folder} is inside the repository's own {name}/ folder: a run would overwrite its files; "
                    f"use a folder under {paths.OUTPUTS}")
    for base in (outputs, root / "outputs"):
        if target in (base, base / "runs") or _inside(base, target):
            return f"{folder} is the outputs folder itself (or above it), not a run: use {paths.RUNS}/<name>"
        if _inside(target, base / "cache"):
            return f"{folder} is inside the response cache {base / 'cache'}, not a run: use {paths.RUNS}/<name>"
        if _inside(target, base):
            return None
    if _inside(target, root):
        return f"{folder} is inside the repository outside outputs/: use a folder under {paths.OUTPUTS}"
    if anywhere:
        return None
    return (f"{folder} is outside the outputs folder {paths.OUTPUTS}; pass --run-dir-anywhere (reproduce) or set "
            f"{ANYWHERE_ENV}=1 to use a folder elsewhere, or point GAMA_OUTPUTS at another outputs folder")


def _real(path: Path) -> Path:
    return Path(os.path.realpath(Path(path).expanduser()))


def _inside(path: Path, folder: Path) -> bool:
    """Whether `path` is `folder` or below it."""
    return path == folder or folder in path.parents


def atomic_write(path: Path, data: str | bytes) -> Path:
    """Write a file so that a crash leaves either the old or the new content, never a torn one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(data.encode("utf-8") if isinstance(data, str) else data)
        f.flush()
        os.fsync(f.fileno())
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    return path


def plumbing_check(run: str | Path) -> bool:
    """Whether the run used a plumbing-check model (a tiny real model whose answers are meaningless)."""
    path = run_dir(run) / "manifest.json"
    return path.exists() and bool(json.loads(path.read_text(encoding="utf-8")).get("plumbing_check"))
