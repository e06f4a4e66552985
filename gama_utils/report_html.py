"""report.html: the run report as one self-contained page, rendered from gama_utils/jinja/report.html.j2.

The template is autoescaped, so every name, fact and explanation is HTML-escaped. The run's
Markdown (tables, captions, the judges' measured limits) goes through mistune with escape=True:
raw HTML in it is shown as text, never passed through, and harmful link schemes are dropped.
"""

from __future__ import annotations

import base64
from functools import lru_cache

import jinja2
import mistune
from markupsafe import Markup

from gama_utils.report_markdown import anchor, link
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

TEMPLATE = "report.html.j2"
_markdown_to_html = mistune.create_markdown(escape=True, plugins=["table"])


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The report's Jinja2 environment: templates from gama_utils/jinja, every substitution HTML-escaped."""
    return jinja2.Environment(loader=jinja2.PackageLoader("gama_utils", "jinja"), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                              keep_trailing_newline=True)


def markdown_html(text: str) -> Markup:
    """Markdown as HTML with raw HTML escaped (mistune escape=True), marked safe for the template."""
    return Markup(_markdown_to_html(text))  # mistune escaped every piece of raw HTML


def render_html(run: Run, generated: str) -> str:
    """report.html: the same content as report.md, self-contained (no script, no external request)."""
    return environment().get_template(TEMPLATE).render(context(run, generated))


def context(run: Run, generated: str) -> dict[str, object]:
    """What the template shows (plain text, escaped by the template, or Markup from `markdown_html`)."""
    return {
        "name": run.path.name, "banner": BANNER, "plumbing_banner": PLUMBING_BANNER,
        "simulated_because": evidence(run.simulated_because) if run.simulated else "",
        "plumbing_check": run.plumbing_check, "facts": run_facts(run, generated),
        "wall_times": wall_time_rows(run.timings), "stages": stage_rows(run.manifest),
        "judge_limits": [markdown_html(text) for text in run.judge_statements],
        "sections": [(section, [_artifact(run, a) for a in items]) for section, items in by_section(run.artifacts)],
    }


def _artifact(run: Run, a: Artifact) -> dict[str, object]:
    caption = table_caption(a.table) if a.table is not None else ""
    return {
        "name": a.name, "anchor": anchor(a.name), "explanation": a.explanation, "notebook": a.notebook,
        "figures": [{"data": base64.b64encode(p.read_bytes()).decode("ascii"),
                     "path": p.relative_to(run.path).as_posix()} for p in a.figures],
        "caption": markdown_html(caption) if caption else "",
        "table": markdown_html(table_markdown(a.table)) if a.table is not None else "",
        "downloads": [{"href": link(run, p), "name": p.name} for p in a.downloads],
    }
