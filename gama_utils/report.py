"""The run report: every table and figure of a run by section, in the paper's order, as report.html and report.md.

report.html is self-contained (figures as base64 PNG data URIs, tables as HTML tables, inline
CSS, no script, no external request) so it opens offline; report.md links the figures by
relative path and carries the Markdown tables. Both open with a SIMULATED banner whenever the
manifest, a table caption (other than a registered simulated control's) or an executed notebook
shows the simulated backend, and state the measured limits of any judge the run used whose
agreement with hand scores is stored (the lexicon).

Sections and explanations come from the run's artifact index (`gama_utils.artifacts`, written by
`gama_utils.emit` as notebooks emit their outputs). Reading the run: `gama_utils.report_run`;
writers: `gama_utils.report_markdown`, `gama_utils.report_html` (Jinja2 template, autoescaped).
`python -m gama_utils.report <run_dir>` builds both files.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .report_html import render_html
from .report_markdown import render_markdown
from .report_run import BANNER, PLUMBING_BANNER, Run, read_folder
from .run_folders import atomic_write, run_dir

__all__ = ["BANNER", "PLUMBING_BANNER", "Run", "build_report", "main", "read_run", "render_html", "render_markdown"]


def read_run(run: str | Path) -> Run:
    """Read what a run folder (a path, or a run name under outputs/runs/) holds for its report."""
    return read_folder(run_dir(run))


def build_report(run: str | Path) -> dict[str, Path]:
    """Write <run>/report.html and <run>/report.md; returns {"html": path, "md": path}."""
    content = read_run(run)
    generated = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {"html": atomic_write(content.path / "report.html", render_html(content, generated)),
            "md": atomic_write(content.path / "report.md", render_markdown(content, generated))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gama_utils.report", description=build_report.__doc__)
    parser.add_argument("run", help="run folder, or a run name under outputs/runs/")
    args = parser.parse_args(argv)
    for kind, path in build_report(args.run).items():
        print(f"{kind}: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
