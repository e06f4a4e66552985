"""Run folders: where a run may live, its stage frames saved and loaded exactly, its files written so that a
crash never tears one.

A run lives under the outputs folder (outputs/, or GAMA_OUTPUTS): a bare name is outputs/runs/<name>, a
relative path that starts with outputs/ is read under the outputs folder. A folder elsewhere needs the
explicit flag (`--run-dir-anywhere`, or the environment variable GAMA_RUN_DIR_ANYWHERE=1 for notebooks run
by papermill or JupyterLab). The repository's own folders (the root, notebooks/, data/, gama_utils/,
prompts/, configs/, tests/, benchmarks/, .git, anything inside them, and anything above the root) and the
outputs folder's own outputs/, outputs/runs/ and outputs/cache/ are never a run folder, whatever the flag:
a run writes executed notebooks, tables and a manifest into its folder and would overwrite them.
Symbolic links do not get around this: a run folder holding a link that leads out of it is refused
(`leaving_link`), and every write resolves its real path first and is refused, naming the link, when a
link leads it into the repository's own folders (`link_problem`, `check_path`).
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import hashlib
import json
import math
import os
import platform
import subprocess
import tempfile
import time
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd

from gama_utils import llm, paths
from gama_utils.core import credentials
from gama_utils.llm.registry import ModelSpec

ANYWHERE_ENV = "GAMA_RUN_DIR_ANYWHERE"
REPOSITORY_FOLDERS = ("notebooks", "data", "gama_utils", "prompts", "configs", "tests", "benchmarks", ".git")


class RunFolderError(ValueError):
    """A run folder that is refused: a repository folder, the outputs folder itself, or outside outputs/."""


def anywhere_allowed() -> bool:
    """Whether the environment allows run folders outside the outputs folder (GAMA_RUN_DIR_ANYWHERE=1)."""
    return os.environ.get(ANYWHERE_ENV, "").strip().lower() in {"1", "true", "yes"}


def run_dir(run: str | Path, anywhere: bool | None = None, links: bool = True) -> Path:
    """The folder of a run, refused (RunFolderError) where a run must never be written.

    A bare name lives under outputs/runs/; a relative path that starts with outputs/ is read under the
    outputs folder; any other relative path is read from the repository root. `anywhere` (default: the
    environment's GAMA_RUN_DIR_ANYWHERE) allows folders outside the outputs folder, never repository ones.
    `links` (default): also refuse a folder holding a symbolic link that leads out of it (`leaving_link`).
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
    folder = Path(os.path.normpath(folder))
    problem = placement_problem(folder, anywhere_allowed() if anywhere is None else anywhere)
    if problem:
        raise RunFolderError(problem)
    if links:
        problem = leaving_link(folder)
        if problem:
            raise RunFolderError(problem)
    return folder


def leaving_link(folder: Path) -> str | None:
    """The first symbolic link in the run folder or its sub-folders that leads out of it (or into the repository).

    A run writes notebooks/, tables/, figures/ and its frames below its folder; a link among them
    (notebooks -> the repository's notebooks/, tables -> data/gama_bench) would make those writes overwrite
    files elsewhere, so the run is refused before anything is written.
    """
    if not folder.is_dir():
        return link_problem(folder)
    real = _real(folder)
    entries = list(os.scandir(folder))
    for entry in list(entries):
        if entry.is_dir(follow_symlinks=False):
            entries += os.scandir(entry.path)           # the run's own folders: notebooks/, tables/, figures/
    for entry in entries:
        if entry.is_symlink():
            target = _real(Path(entry.path))
            if not _inside(target, real) or _repository_zone(target):
                return (f"{entry.path} is a symbolic link to {target}, outside the run folder {folder}: a run's "
                        "writes through it would land there; replace the link by a folder or a copy")
    return None


def _repository_zone(real: Path) -> str | None:
    """The repository folder a real path lies in ('' for the root itself or anything above it), else None."""
    root = _real(paths.ROOT)
    if real == root or _inside(root, real):
        return ""
    return next((name for name in REPOSITORY_FOLDERS if _inside(real, root / name)), None)


def _links(path: Path) -> list[Path]:
    """The components of an absolute path, from the root down, that are symbolic links."""
    return [p for p in (*reversed(path.parents), path) if p.is_symlink()]


def link_problem(path: str | Path, folder: str | Path | None = None) -> str | None:
    """Why `path` may not be written (or read for a published file) through the symbolic links on its way: its
    real place is outside `folder` (when given), or a link leads it into one of the repository's own folders
    (notebooks/, data/, ...) from outside that folder; None when it may go.
    """
    lexical = Path(os.path.abspath(Path(path).expanduser()))
    links = _links(lexical)
    if folder is not None and not _inside(_real(lexical), _real(Path(folder))):
        link = links[0] if links else lexical
        return (f"{link} is a symbolic link that leads {lexical.name} to {_real(lexical)}, outside {folder}; "
                "replace the link by a folder or a copy")
    for link in links:
        zone = _repository_zone(_real(link))
        if zone and _repository_zone(_real(link.parent) / link.name) != zone:
            return (f"{link} is a symbolic link into the repository's own {zone}/ folder ({_real(link)}): writing "
                    f"{lexical} through it would overwrite the repository's files; replace the link by a folder "
                    "or a copy")
    return None


def check_path(path: str | Path, folder: str | Path | None = None) -> Path:
    """`path`, or RunFolderError (naming the link) when `link_problem` refuses it."""
    problem = link_problem(path, folder)
    if problem:
        raise RunFolderError(problem)
    return Path(path)


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


@contextlib.contextmanager
def exclusive(path: Path):
    """Hold an exclusive lock for a read-modify-write of `path` (manifest.json, artifacts.json, timings.json).

    Two notebooks writing one run at once (JupyterLab beside papermill, or `gama reproduce` running
    independent notebooks side by side) then never lose each other's entry. The lock is a sidecar file
    `.<name>.lock` beside `path`, taken with flock, so it is released when the process ends.
    """
    check_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f".{path.name}.lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def atomic_write(path: Path, data: str | bytes) -> Path:
    """Write a file so that a crash leaves either the old or the new content, never a torn one.

    Refused (RunFolderError, nothing written) when a symbolic link leads it into the repository's own folders
    (`link_problem`); a failed write (a full disk) removes its temporary file and leaves the old content.
    """
    check_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path


def plumbing_check(run: str | Path) -> bool:
    """Whether the run used a plumbing-check model (a tiny real model whose answers are meaningless)."""
    path = run_dir(run, links=False) / "manifest.json"
    return path.exists() and bool(json.loads(path.read_text(encoding="utf-8")).get("plumbing_check"))


def save(frame: pd.DataFrame, run: str | Path, name: str) -> Path:
    """Write a stage's frame as run_dir/<name>.jsonl, atomically, with every number exact (lists survive).

    Python's json writes a float by its shortest repr, which reads back to the same double; pandas'
    to_json keeps at most 15 significant digits and writes p = 1e-14 as 0.0. NaN, None and NaT are null.
    """
    path = run_dir(run) / f"{name}.jsonl"
    names = [str(c) for c in frame.columns]
    cells = [[None if _missing(v) else v for v in frame[c].tolist()] for c in frame.columns]
    lines = (_json_line(dict(zip(names, row))) for row in zip(*cells))
    return atomic_write(path, "".join(lines))


def _json_line(record: dict) -> str:
    try:
        text = json.dumps(record, ensure_ascii=False, allow_nan=False, default=_json_default)
    except ValueError:  # a NaN nested in a list or dict
        text = json.dumps(_plain(record), ensure_ascii=False, allow_nan=False, default=_json_default)
    return text + "\n"


def _missing(value: object) -> bool:
    return value is None or value is pd.NaT or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def _json_default(value: object) -> object:
    """JSON form of what json does not know: numpy scalars and arrays, timestamps (ISO 8601)."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (pd.Timestamp, datetime.datetime, datetime.date)):
        return value.isoformat()
    raise TypeError(f"cannot write a {type(value).__name__} to JSON: {value!r}")


def _plain(value: object) -> object:
    """A copy of a nested cell with every missing value (NaN, None, NaT) as None."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v) for v in value]
    return None if _missing(value) else value


def load(run: str | Path, name: str, **filters: object) -> pd.DataFrame:
    """Read run_dir/<name>.jsonl, keeping rows whose columns equal the given filters (e.g. evaluator=...).

    Lines are parsed by Python's json, so floats come back bit for bit as `save` wrote them.
    """
    path = run_dir(run) / f"{name}.jsonl"
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: run the notebook that writes {name!r} first")
    with open(path, encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    frame = pd.DataFrame.from_records(records) if records else pd.DataFrame()
    for column in frame.select_dtypes(exclude=["number", "bool"]).columns:
        values = frame[column].astype(object)
        frame[column] = values.where(values.notna(), None)
    for column, value in filters.items():
        if column not in frame.columns:
            raise KeyError(f"{name}: no column {column!r} to filter on")
        frame = frame[frame[column] == value]
        if frame.empty:
            raise ValueError(f"{name}: no rows with {column} == {value!r}")
    return frame.reset_index(drop=True)


def exists(run: str | Path, name: str) -> bool:
    """Whether a stage's frame has been written in this run."""
    return (run_dir(run) / f"{name}.jsonl").exists()


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def git_commit() -> str | None:
    """The repository's HEAD commit, or None outside a git checkout."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=paths.ROOT, capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def update_manifest(run: str | Path, stage: str, models: Iterable[str | dict | ModelSpec] = (),
                    **entries: object) -> Path:
    """Record a stage's parameters and facts in run_dir/manifest.json, then check the run's files for key values.

    `models` (aliases, inline specs or ModelSpecs the stage called) are recorded
    under "models" by alias without credentials; a plumbing-check model marks the whole run as one. Every
    stage ends here, so this is where a file holding the value of a key the run's models use stops the run
    (credentials.SecretInFileError naming the file).
    """
    path = run_dir(run) / "manifest.json"
    specs = [llm.resolve_model(model) for model in models]
    facts = {"git_commit": git_commit(), "python": platform.python_version(),
             "packages": {p: _version(p) for p in ("pandas", "numpy", "scipy", "statsmodels", "openai", "papermill",
                                                   "gama-bench")}}
    with exclusive(path):
        manifest = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        for spec in specs:
            manifest.setdefault("models", {})[spec.alias] = spec.public_dict()
            manifest["plumbing_check"] = bool(manifest.get("plumbing_check")) or spec.plumbing_check
        manifest.setdefault("created", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        manifest.update(facts)
        manifest.setdefault("stages", {})[stage] = {**entries,
                                                    "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        atomic_write(path, json.dumps(manifest, indent=2, default=str))
    credentials.check_run_files(path.parent)
    return path


def record_notebook_run(run: str | Path, notebook: str, how: str, parameters: dict) -> Path:
    """Record in run_dir/manifest.json under "notebook_runs" that `notebook` ran (how: "papermill" or
    "interactive"), when, and with which parameters; the notebook's own stage entry is left as it is."""
    path = run_dir(run) / "manifest.json"
    with exclusive(path):
        manifest = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        manifest.setdefault("created", now)
        manifest.setdefault("notebook_runs", {})[notebook] = {"how": how, "at": now, "parameters": parameters}
        return atomic_write(path, json.dumps(manifest, indent=2, default=str))


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None
