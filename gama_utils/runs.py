"""Runs: the run directory, headless execution of the notebooks with papermill, notebook hygiene.

A run lives in outputs/runs/<run_name>/ (notebooks/, tables/, figures/, manifest.json, ...).
`python -m gama_utils.runs reproduce --profile offline` executes every notebook in
notebooks/ in order with the profile's parameters; `strip` removes outputs and run
metadata from notebooks before they are committed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import yaml

from .paths import CONFIGS, NOTEBOOKS, RUNS, resolve

DEFAULT_KERNEL = "gama-bench"


def run_dir(run: str | Path) -> Path:
    """The folder of a run: a bare name lives under outputs/runs/, a path is taken as given."""
    path = Path(run)
    return resolve(path) if len(path.parts) > 1 or path.is_absolute() else RUNS / str(run)


def notebooks_in_order(folder: Path = NOTEBOOKS) -> list[Path]:
    """The numbered notebooks (01_generate.ipynb, ...) in execution order."""
    return sorted(p for p in folder.glob("[0-9][0-9]_*.ipynb"))


def load_profile(name: str) -> dict:
    """A run profile from configs/profiles/<name>.yaml."""
    path = CONFIGS / "profiles" / f"{name}.yaml"
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in (CONFIGS / "profiles").glob("*.yaml")))
        raise FileNotFoundError(f"unknown profile {name!r}; known profiles: {known}")
    profile = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    profile.setdefault("parameters", {})
    profile.setdefault("notebooks", {})
    return profile


def notebook_parameters(profile: dict, notebook: Path, run_path: Path) -> dict:
    """Parameters for one notebook: the profile's common ones, its per-notebook ones, and run_dir."""
    params = dict(profile.get("parameters") or {})
    params.update((profile.get("notebooks") or {}).get(notebook.stem, {}) or {})
    params["run_dir"] = str(run_path)
    return params


def reproduce(profile: str = "offline", run: str | None = None, kernel: str = DEFAULT_KERNEL,
              only: list[str] | None = None) -> list[dict]:
    """Execute the notebooks headless with papermill; returns one record per notebook (name, seconds)."""
    import papermill

    settings = load_profile(profile)
    run_path = run_dir(run or profile)
    out_dir = run_path / "notebooks"
    out_dir.mkdir(parents=True, exist_ok=True)
    notebooks = [nb for nb in notebooks_in_order() if not only or nb.stem in only or nb.stem[:2] in only]
    if not notebooks:
        print(f"no notebooks in {NOTEBOOKS} yet; nothing to run")
        return []
    timings = []
    for nb in notebooks:
        start = time.perf_counter()
        print(f"[{profile}] {nb.name} → {out_dir / nb.name}", flush=True)
        papermill.execute_notebook(str(nb), str(out_dir / nb.name), kernel_name=kernel,
                                   parameters=notebook_parameters(settings, nb, run_path),
                                   cwd=str(NOTEBOOKS), progress_bar=False)
        timings.append({"notebook": nb.stem, "seconds": round(time.perf_counter() - start, 2)})
    (run_path / "timings.json").write_text(json.dumps(timings, indent=2), encoding="utf-8")
    return timings


def notebook_hygiene(path: Path) -> list[str]:
    """Problems that keep a notebook from being committed: outputs, execution counts, papermill metadata."""
    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    problems = []
    for i, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") == "code" and (cell.get("outputs") or cell.get("execution_count")):
            problems.append(f"{path.name}: cell {i} has outputs or an execution count")
    if "papermill" in nb.get("metadata", {}):
        problems.append(f"{path.name}: papermill metadata")
    return problems


def strip_notebook(path: Path) -> None:
    """Remove outputs, execution counts and run metadata from a notebook, in place."""
    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"], cell["execution_count"] = [], None
        cell.get("metadata", {}).pop("papermill", None)
        cell.get("metadata", {}).pop("execution", None)
    nb.get("metadata", {}).pop("papermill", None)
    Path(path).write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gama_utils.runs")
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="execute every notebook headless with papermill")
    rep.add_argument("--profile", default="offline")
    rep.add_argument("--run", default=None, help="run name (default: the profile's name)")
    rep.add_argument("--kernel", default=DEFAULT_KERNEL)
    rep.add_argument("--only", nargs="*", help="notebook stems or numbers to run")
    strip = sub.add_parser("strip", help="strip outputs and run metadata from notebooks")
    strip.add_argument("paths", nargs="+")
    args = parser.parse_args(argv)
    if args.command == "reproduce":
        for row in reproduce(args.profile, args.run, args.kernel, args.only):
            print(f"{row['notebook']}: {row['seconds']} s")
    else:
        for p in args.paths:
            strip_notebook(Path(p))
    return 0


if __name__ == "__main__":
    sys.exit(main())
