"""report.md: the run report as Markdown, figures linked by relative path, every piece of run text escaped.

Tables are the run's tables/<name>.md as `table_files.write_table` wrote them (cells already
escaped) or its CSV rendered with every cell escaped; names, facts, parameters and explanations
are escaped here (`gama_utils.escaping`), so nothing a model or user wrote becomes markup.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote

from gama_utils.escaping import markdown_cell
from gama_utils.report_run import (
    BANNER,
    PLUMBING_BANNER,
    Artifact,
    Run,
    by_section,
    evidence,
    run_facts,
    stage_rows,
    table_caption,
    table_markdown,
    wall_time_rows,
)

JUDGE_LIMITS_ANCHOR = "judge-limits"


def anchor(name: str) -> str:
    """An HTML id and link target for an artifact name (letters, digits, '_', '.' and '-' only)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "-", name)


def link(run: Run, path: Path) -> str:
    """The relative, percent-encoded link to a file of the run."""
    return quote(path.relative_to(run.path).as_posix())


def render_markdown(run: Run, generated: str) -> str:
    """report.md: banner, run facts, contents, wall times, stages, judges' limits, then every artifact by section."""
    lines = [f"# GAMA-Bench run report: {markdown_cell(run.path.name)}", ""]
    if run.simulated:
        lines += [f"> **{BANNER}**", ">", "> Marked simulated by: " + markdown_cell(evidence(run.simulated_because)),
                  ""]
    if run.plumbing_check:
        lines += [f"> **{PLUMBING_BANNER}**", ""]
    lines += [f"- **{label}:** {markdown_cell(value)}" for label, value in run_facts(run, generated)] + [""]
    lines += ["## Contents", ""]
    for section, items in by_section(run.artifacts):
        lines.append(f"- {markdown_cell(section)}")
        lines += [f"  - [{markdown_cell(a.name)}](#{anchor(a.name)}): {markdown_cell(a.explanation)}" for a in items]
    lines += ["- [Wall time per notebook](#wall-times)", "- [Stages](#stages)"]
    lines += [f"- [Measured limits of the judges](#{JUDGE_LIMITS_ANCHOR})"] if run.judge_statements else []
    lines += [""] + _wall_times(run) + _stages(run) + _judge_limits(run)
    for section, items in by_section(run.artifacts):
        lines += [f"## {markdown_cell(section)}", ""]
        for a in items:
            lines += _artifact(run, a)
    if not run.artifacts:
        lines += ["No tables or figures in this run yet.", ""]
    return "\n".join(lines)


def _artifact(run: Run, a: Artifact) -> list[str]:
    source = f" (from {markdown_cell(a.notebook)})" if a.notebook else ""
    lines = [f'<a id="{anchor(a.name)}"></a>', "", f"### {markdown_cell(a.name)}", "",
             f"*{markdown_cell(a.explanation)}*{source}", ""]
    lines += [f"![{markdown_cell(a.name)}]({link(run, p)})" for p in a.figures]
    lines += [""] if a.figures else []
    if a.table is not None:
        caption = table_caption(a.table)
        lines += ([caption, ""] if caption else []) + [table_markdown(a.table), ""]
    if a.downloads:
        lines += ["Files: " + ", ".join(f"[{markdown_cell(p.name)}]({link(run, p)})" for p in a.downloads), ""]
    return lines


def _wall_times(run: Run) -> list[str]:
    lines = ['<a id="wall-times"></a>', "", "## Wall time per notebook", ""]
    rows = wall_time_rows(run.timings)
    if not rows:
        return lines + ["No timings.json in this run.", ""]
    executed = {nb.stem: nb for nb in run.notebooks}
    lines += ["| Notebook | Seconds |", "|:--|--:|"]
    for notebook, seconds in rows:
        name = (f"[{markdown_cell(notebook)}]({link(run, executed[notebook])})" if notebook in executed
                else markdown_cell(notebook))
        lines.append(f"| {name} | {seconds} |")
    return lines + [""]


def _stages(run: Run) -> list[str]:
    lines = ['<a id="stages"></a>', "", "## Stages", ""]
    rows = stage_rows(run.manifest)
    if not rows:
        return lines + ["No stages recorded in manifest.json.", ""]
    lines += ["| Stage | At | Parameters |", "|:--|:--|:--|"]
    return lines + [f"| {' | '.join(markdown_cell(c) for c in row)} |" for row in rows] + [""]


def _judge_limits(run: Run) -> list[str]:
    if not run.judge_statements:
        return []
    lines = [f'<a id="{JUDGE_LIMITS_ANCHOR}"></a>', "", "## Measured limits of the judges", ""]
    for text in run.judge_statements:
        lines += [text, ""]
    return lines

