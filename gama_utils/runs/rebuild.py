"""Rebuilding data/gama_bench offline: 01_generate → 02_review → 03_compile on a template bank, then publish.

`python -m gama_utils.runs.rebuild [TEMPLATES] [--allow-drops]` rebuilds data/gama_bench from the template
bank; run it after the bank changes. It exits non-zero, listing every dropped template and empty cell, when
publishing is refused (gama_utils.bench.publication).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from gama_utils.bench.publication import STAGES, IncompleteBenchmarkError, publish
from gama_utils.core.run_folders import load, run_dir, update_manifest
from gama_utils.paths import BENCHMARK, NOTEBOOKS, resolve
from gama_utils.runs.orchestrate import DEFAULT_KERNEL, execute_notebooks

log = logging.getLogger(__name__)


def rebuild(templates: str | Path | None = None, run: str | Path = "benchmark", kernel: str = DEFAULT_KERNEL, *,
            allow_drops: bool = False, target: str | Path = BENCHMARK) -> list[Path]:
    """Run 01_generate → 02_review → 03_compile offline on `templates` (default data/templates), then publish.

    Raises IncompleteBenchmarkError (listing every dropped template and empty cell) when publishing is refused.
    """
    from gama_utils.bench.templates import load_templates

    bank = load_templates(templates)  # a bad bank fails here, naming the file and line, before any notebook
    log.info("rebuilding from %d templates of %s", len(bank), resolve(templates) if templates else "data/templates")
    folder = run_dir(run)
    shared = {"run_dir": str(folder), **({"templates_path": str(resolve(templates))} if templates else {})}
    execute_notebooks([NOTEBOOKS / f"{stem}.ipynb" for stem in STAGES], folder,
                      lambda nb: {**shared, **({"publish": False} if nb.stem == "03_compile" else {})}, kernel,
                      label="rebuild")
    written = publish(folder / "benchmark", target, drops=load(folder, "dropped_templates"), allow_drops=allow_drops)
    update_manifest(folder, "publish", target=str(resolve(target)), allow_drops=allow_drops,
                    published=[p.name for p in written])
    return written


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the rebuild (shared by `gama publish` and `python -m gama_utils.runs.rebuild`)."""
    parser.add_argument("templates", nargs="?", help="a .jsonl template file or a folder (default data/templates)")
    parser.add_argument("--allow-drops", action="store_true",
                        help="publish even when templates were dropped (each is listed in the datasheet)")
    parser.add_argument("--run", default="benchmark", help="run folder name or path (default outputs/runs/benchmark)")
    parser.add_argument("--target", default=str(BENCHMARK), help="where to publish (default data/gama_bench)")
    parser.add_argument("--kernel", default=DEFAULT_KERNEL)


def run(args: argparse.Namespace) -> tuple[int, list[Path]]:
    """The rebuild from parsed options: (0, the files published), or (1, []) refused or a notebook failed (logged)."""
    from papermill.exceptions import PapermillExecutionError

    from gama_utils.bench.templates import TemplateFileError

    try:
        written = rebuild(args.templates, args.run, args.kernel, allow_drops=args.allow_drops, target=args.target)
    except (IncompleteBenchmarkError, TemplateFileError) as err:
        log.error("%s", err)
        return 1, []
    except PapermillExecutionError as err:
        log.error("a notebook failed (its executed copy is in the run's notebooks/): %s: %s", err.ename, err.evalue)
        return 1, []
    return 0, written


def main(argv: list[str] | None = None) -> int:
    """The command line: `[TEMPLATES] [--allow-drops] [--run NAME] [--target DIR] [--kernel NAME]`."""
    parser = argparse.ArgumentParser(prog="python -m gama_utils.runs.rebuild",
                                     description="Rebuild the benchmark offline from a template bank and publish it.")
    add_arguments(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    code, written = run(args)
    for path in written:
        print(path)
    return code


if __name__ == "__main__":
    sys.exit(main())
