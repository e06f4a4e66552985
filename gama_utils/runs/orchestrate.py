"""Runs: a run's manifest, headless execution of the notebooks with papermill, notebook hygiene.

A run lives in outputs/runs/<run_name>/ (notebooks/, tables/, figures/, manifest.json, ...); where a run may
live, and its stage frames (`save`, `load`, re-exported here), are gama_utils.core.run_folders.
`python -m gama_utils.runs reproduce --profile offline` checks the profile's and `--set` values against every
notebook's parameter schema (gama_utils.runs.profiles), refuses a run folder of the repository and answers of
another origin, then executes the notebooks, two at once where one does not read the other's files (a
notebook schema's `after`; GAMA_NOTEBOOK_JOBS sets how many); after each notebook, and in every stage's manifest
update, the run's files are checked for the values of the API keys its models use (gama_utils.core.credentials).
`strip` removes outputs and run metadata from notebooks before they are committed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import resource
import sys
import threading
import time
from collections.abc import Callable, Iterable
from concurrent import futures
from pathlib import Path
from typing import NamedTuple, TextIO

import yaml

from gama_utils.core import credentials
from gama_utils.core.run_folders import (
    ANYWHERE_ENV,
    RunFolderError,
    atomic_write,
    check_path,
    exclusive,
    run_dir,
)
from gama_utils.paths import NOTEBOOKS
from gama_utils.runs import parameters, profiles
from gama_utils.runs.parameters import ParameterError

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_KERNEL", "Outcome", "add_reproduce_arguments", "add_strip_arguments", "execute_notebooks", "main",
           "notebook_hygiene", "notebooks_in_order", "reproduce", "run_reproduce", "run_strip", "strip_notebook"]
DEFAULT_KERNEL = "gama-bench"


def notebooks_in_order(folder: Path = NOTEBOOKS) -> list[Path]:
    """The numbered notebooks (01_generate.ipynb, ...) in execution order."""
    return sorted(p for p in folder.glob("[0-9][0-9]_*.ipynb"))


JOBS_ENV = "GAMA_NOTEBOOK_JOBS"


def notebook_jobs() -> int:
    """How many notebooks may run at once: GAMA_NOTEBOOK_JOBS, else one per core up to two."""
    value = os.environ.get(JOBS_ENV, "").strip()
    if value:
        if not value.isdigit() or int(value) < 1:
            raise ParameterError([f"{JOBS_ENV}={value!r}: expected a whole number of notebooks, at least 1"])
        return int(value)
    return max(1, min(2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


def dependencies(notebooks: list[Path], values: Callable[[Path], dict]) -> dict[str, set[str]]:
    """For each notebook (by stem), the notebooks of this plan that must finish before it starts.

    A notebook's schema says which notebooks' files it reads (`after`); one without a schema, or whose
    schema does not say, waits for every earlier one; a notebook that publishes (03 with publish=True)
    is waited for by every later one.
    """
    needs: dict[str, set[str]] = {}
    publishers: set[str] = set()
    for i, nb in enumerate(notebooks):
        earlier = [p.stem for p in notebooks[:i]]
        declared = parameters_of(nb, values)
        after = declared.after() if declared is not None else None
        needs[nb.stem] = (set(earlier) if after is None else set(after) & set(earlier)) | publishers
        if declared is not None and declared.publishes():
            publishers.add(nb.stem)
    return needs


def parameters_of(nb: Path, values: Callable[[Path], dict]) -> parameters.NotebookParameters | None:
    """The notebook's validated parameters; None without a schema or valid values (its first cell then says why)."""
    if nb.stem not in parameters.SCHEMAS:
        return None
    try:
        return parameters.validate(nb.stem, values(nb))
    except ValueError:
        return None


def execute_notebooks(notebooks: Iterable[Path], run_path: Path, parameters: Callable[[Path], dict],
                      kernel: str = DEFAULT_KERNEL, label: str = "run", jobs: int | None = None) -> list[dict]:
    """Execute notebooks with papermill into run_path/notebooks; one record (name, seconds, cpu_seconds) each.

    Up to `jobs` notebooks run at once (default `notebook_jobs()`), each once the notebooks it reads
    have finished (`dependencies`); with one job they run one after the other in the given order.
    timings.json keeps the latest time of every notebook run under this run, so a partial re-run updates
    only its rows. A failing notebook raises papermill's error once the notebooks already running have
    finished (its executed copy shows the failing cell); no further notebook starts. After each notebook
    the run's files (its executed copy included) are checked for the values of the run's keys. CPU time
    is the notebook's kernel and its thread in this process; while notebooks overlap it is approximate.
    """
    import papermill

    out_dir = run_path / "notebooks"
    notebooks = list(notebooks)
    for nb in notebooks:                           # a link (notebooks/ -> the sources) is refused before any run
        check_path(out_dir / nb.name, run_path)
    out_dir.mkdir(parents=True, exist_ok=True)
    jobs = jobs or notebook_jobs()
    needs = dependencies(notebooks, parameters)
    timings_path = run_path / "timings.json"
    reaped = threading.Lock()
    children = [_children_cpu()]

    def execute(nb: Path) -> dict:
        start, thread_cpu = time.perf_counter(), time.thread_time()
        log.info("[%s] %s → %s", label, nb.name, out_dir / nb.name)
        papermill.execute_notebook(str(nb), str(out_dir / nb.name), kernel_name=kernel, parameters=parameters(nb),
                                   cwd=str(NOTEBOOKS), progress_bar=False)
        with reaped:                               # the kernel was reaped when papermill returned
            now = _children_cpu()
            kernel_cpu, children[0] = now - children[0], now
        return {"notebook": nb.stem, "seconds": round(time.perf_counter() - start, 2),
                "cpu_seconds": round(time.thread_time() - thread_cpu + kernel_cpu, 2)}

    def finished(row: dict) -> None:
        with exclusive(timings_path):
            timings = {r["notebook"]: r for r in (json.loads(timings_path.read_text()) if timings_path.exists()
                                                  else [])}
            timings[row["notebook"]] = row
            atomic_write(timings_path, json.dumps(sorted(timings.values(), key=lambda r: r["notebook"]), indent=2))
        credentials.check_run_files(run_path)

    rows: dict[str, dict] = {}
    if jobs == 1:                                  # in this thread: Ctrl-C and SIGTERM reach the running notebook
        for nb in notebooks:
            rows[nb.stem] = execute(nb)
            finished(rows[nb.stem])
        return [rows[nb.stem] for nb in notebooks]
    pending, failure = list(notebooks), None
    running: dict[futures.Future, Path] = {}
    with futures.ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="notebook") as pool:
        while running or (pending and failure is None):
            ready = [nb for nb in pending if needs[nb.stem] <= rows.keys()] if failure is None else []
            for nb in ready[:jobs - len(running)]:
                pending.remove(nb)
                running[pool.submit(execute, nb)] = nb
            done, _ = futures.wait(running, return_when=futures.FIRST_COMPLETED)
            for future in done:
                nb = running.pop(future)
                try:
                    rows[nb.stem] = future.result()
                except Exception as error:         # the first failure is raised once the others have finished
                    failure = failure or error
                    continue
                finished(rows[nb.stem])
    if failure is not None:
        raise failure
    return [rows[nb.stem] for nb in notebooks]


def _children_cpu() -> float:
    """CPU time (user + system) of this process's finished children (each notebook's kernel, once reaped)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return children.ru_utime + children.ru_stime


def reproduce(profile: str = "offline", run: str | None = None, kernel: str = DEFAULT_KERNEL,
              only: list[str] | None = None, overrides: dict | None = None, report: bool = True,
              anywhere: bool = False) -> list[dict]:
    """Check everything, then execute the profile's notebooks headless with papermill and write the run report.

    Before any notebook runs: the profile, `--only` and `--set` values against the notebooks' schemas, the run
    folder (under outputs/ unless `anywhere`; never a repository folder), and each notebook's preflight (answers
    of another origin); ParameterError lists every problem. Returns one record per notebook (name, seconds);
    timings.json keeps the latest time of every notebook run under this run name.
    """
    settings, notebooks, problems = profiles.plan(profile, notebooks_in_order(), only, overrides)
    with contextlib.ExitStack() as stack:
        if anywhere:
            stack.enter_context(_environment(ANYWHERE_ENV, "1"))
        try:
            run_path = run_dir(run or settings.default_run or profile)
        except RunFolderError as err:
            raise ParameterError([*problems, f"--run: {err}"]) from None
        if not problems:
            problems = _preflight(notebooks, lambda nb: profiles.notebook_parameters(settings, nb, run_path, overrides))
        if problems:
            raise ParameterError(problems)
        if not notebooks:
            log.info("no notebooks in %s match; nothing to run", NOTEBOOKS)
            return []
        if settings.server:
            from gama_utils.collect import local_server

            stack.enter_context(local_server.stop_on_sigterm())
            base_url = stack.enter_context(local_server.serve(settings.server))
            log.info("[%s] local server at %s (stopped when the run ends)", profile, base_url)
        done = execute_notebooks(notebooks, run_path,
                                 lambda nb: profiles.notebook_parameters(settings, nb, run_path, overrides), kernel,
                                 label=profile, jobs=1 if settings.server else None)
    if report:
        from gama_utils.report.browser import build_browser
        from gama_utils.report.run_report import build_report

        log.info("answer browser: %s", build_browser(run_path))
        written = build_report(run_path)
        credentials.check_run_files(run_path)
        log.info("report: %s", written["html"])
    return done


def _preflight(notebooks: list[Path], values: Callable[[Path], dict]) -> list[str]:
    """Each notebook's checks on the files it will touch (run folder, answers of another origin), all at once."""
    problems = []
    for nb in notebooks:
        if nb.stem not in parameters.SCHEMAS:
            continue
        try:
            parameters.validate(nb.stem, values(nb)).preflight()
        except ParameterError as err:
            problems += [p if p.startswith(f"{nb.stem}:") else f"{nb.stem}: {p}" for p in err.problems]
        except ValueError as err:
            problems.append(f"{nb.stem}: {err}")
    return problems


@contextlib.contextmanager
def _environment(name: str, value: str):
    """Set an environment variable (inherited by the notebooks' kernels) for the duration of the block."""
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


def _parse_override(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep:
        raise argparse.ArgumentTypeError(f"--set takes key=value (a YAML value); {key} has no '=value'")
    if not key:
        raise argparse.ArgumentTypeError("--set takes key=value; the key is empty")
    try:
        parsed = yaml.safe_load(value)
    except yaml.YAMLError:
        raise argparse.ArgumentTypeError(f"--set {key}: the value is not valid YAML") from None
    if profiles.refers_to_itself(parsed):
        raise argparse.ArgumentTypeError(f"--set {key}: the value refers to itself (a recursive YAML anchor such as "
                                         "&a [*a]); write the value out")
    return key, parsed


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


def add_reproduce_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `reproduce` (shared by `gama reproduce` and `python -m gama_utils.runs reproduce`)."""
    parser.add_argument("--profile", default="offline",
                        help="a profile of configs/profiles/ (default offline; `gama profiles` lists them)")
    parser.add_argument("--run", default=None, help="run name or folder under outputs/ (default: the profile's name)")
    parser.add_argument("--run-dir-anywhere", dest="anywhere", action="store_true",
                        help="allow a run folder outside outputs/ (never a folder of the repository)")
    parser.add_argument("--kernel", default=DEFAULT_KERNEL, help=f"Jupyter kernel (default {DEFAULT_KERNEL})")
    parser.add_argument("--only", nargs="*", help="notebook stems or numbers to run, e.g. --only 05 06")
    parser.add_argument("--set", dest="overrides", action="append", type=_parse_override, default=[],
                        metavar="KEY=VALUE", help="override a notebook parameter (YAML value), e.g. --set max_usd=500")
    parser.add_argument("--no-report", dest="report", action="store_false", help="skip report.html at the end")


class Outcome(NamedTuple):
    """What a command did: its exit code and the text for standard output and standard error (printed by main)."""

    code: int
    out: str = ""
    err: str = ""

    def streams(self) -> list[tuple[str, TextIO]]:
        """(text, stream) to print, standard output first; empty texts left out."""
        return [(text, stream) for text, stream in ((self.out, sys.stdout), (self.err, sys.stderr)) if text]


def run_reproduce(args: argparse.Namespace) -> Outcome:
    """`reproduce` from parsed options: 0 done, 2 refused before anything ran, 1 a notebook or key check failed."""
    from papermill.exceptions import PapermillExecutionError

    try:
        done = reproduce(args.profile, args.run, args.kernel, args.only, dict(args.overrides), args.report,
                         args.anywhere)
    except (ParameterError, FileNotFoundError) as err:
        return Outcome(2, err=f"error: {err}")
    except credentials.SecretInFileError as err:
        return Outcome(1, err=f"error: {err}")
    except PapermillExecutionError as err:
        return Outcome(1, err=f"error: a notebook failed (its executed copy is in the run's notebooks/): {err.ename}: "
                              f"{err.evalue}")
    return Outcome(0, "\n".join(f"{row['notebook']}: {row['seconds']} s" for row in done))


def add_strip_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of `strip`."""
    parser.add_argument("paths", nargs="+", help="notebook files")


def run_strip(args: argparse.Namespace) -> Outcome:
    """`strip` from parsed arguments."""
    for p in args.paths:
        strip_notebook(Path(p))
    return Outcome(0)


def main(argv: list[str] | None = None) -> int:
    """`reproduce` and `strip` alone (the `gama` command, gama_utils.runs.cli, has them and the rest)."""
    parser = argparse.ArgumentParser(prog="python -m gama_utils.runs.orchestrate")
    sub = parser.add_subparsers(dest="command", required=True)
    add_reproduce_arguments(sub.add_parser("reproduce", help="execute every notebook headless with papermill"))
    add_strip_arguments(sub.add_parser("strip", help="strip outputs and run metadata from notebooks"))
    args = parser.parse_args(argv)
    logging.basicConfig(format="%(message)s", stream=sys.stdout)
    log.setLevel(logging.INFO)
    outcome = run_reproduce(args) if args.command == "reproduce" else run_strip(args)
    for text, stream in outcome.streams():
        print(text, file=stream)
    return outcome.code


if __name__ == "__main__":
    sys.exit(main())
