"""The run report: every table and figure of a run by section, in the paper's order, as report.html and report.md.

Reading the run (`read_run`): the artifacts are the files under tables/, figures/ and benchmark/ (its PNG
and PDF only), grouped by file stem; each takes its section, explanation and notebook from the run's
artifact index (`gama_utils.report.artifacts`); files no entry names come last, under "Other artifacts".
With them: the run's facts, timings and the evidence that it is simulated or a plumbing check.

Writing it: report.md links the figures by relative path and carries the Markdown tables, every piece of
run text escaped; report.html is self-contained (figures as base64 PNG data URIs, tables as HTML tables,
inline CSS, no script, no external request, rendered from report/jinja/report.html.j2 with autoescape),
so it opens offline. Both open with a SIMULATED banner whenever the manifest, a table caption (other than
a registered simulated control's) or an executed notebook shows the simulated backend, and state the
measured limits of any judge the run used whose agreement with hand scores is stored (the lexicon).
`python -m gama_utils.report.run_report <run_dir>` builds both files.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import sys
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from urllib.parse import quote

import jinja2
import mistune
import pandas as pd
from markupsafe import Markup

from gama_utils.core.escaping import markdown_cell
from gama_utils.core.run_folders import atomic_write, run_dir
from gama_utils.judge import judges
from gama_utils.report import artifacts
from gama_utils.report.table_files import markdown_table

__all__ = ["BANNER", "PLUMBING_BANNER", "Run", "build_report", "main", "read_run", "render_html", "render_markdown"]


# --- report_run ------------------------------------------------------------------------------------------

BANNER = "SIMULATED: produced by the offline simulated backend; not findings about real models."

PLUMBING_BANNER = ("PLUMBING CHECK: real answers from a tiny model on a local server; they exercise the pipeline "
                   "on a real LLM and are meaningless as findings about any model.")

ARTIFACT_FOLDERS = ("benchmark", "tables", "figures")

UNKNOWN_EXPLANATION = ("Written to the run folder without being registered in artifacts.json "
                       "(gama_utils.report.artifacts); "
                       "shown as the run wrote it.")


@dataclass
class Artifact:
    """The files of one base name (e.g. table2_intimate) across tables/, figures/ and benchmark/."""

    name: str
    section: str
    explanation: str
    files: list[Path] = field(default_factory=list)
    notebook: str | None = None
    control: bool = False  # a simulated check by design; its SIMULATED caption does not mark the run

    def of(self, suffix: str) -> list[Path]:
        """The files with this suffix (".png", ".md", ...)."""
        return [p for p in self.files if p.suffix.lower() == suffix]

    @property
    def figures(self) -> list[Path]:
        return self.of(".png")

    @property
    def table(self) -> Path | None:
        return next(iter(self.of(".md") or self.of(".csv")), None)

    @property
    def downloads(self) -> list[Path]:
        """Files linked rather than shown (PDF, LaTeX, CSV beside its Markdown, anything else)."""
        shown = {*self.figures, self.table}
        return [p for p in self.files if p not in shown]


@dataclass
class Run:
    """Everything the report shows about a run folder."""

    path: Path
    manifest: dict
    timings: list[dict]
    artifacts: list[Artifact]
    simulated_because: list[str]
    notebooks: list[Path]
    judge_statements: list[str] = field(default_factory=list)  # Markdown: measured limits of the judges used

    @property
    def simulated(self) -> bool:
        return bool(self.simulated_because)

    @property
    def plumbing_check(self) -> bool:
        """Whether a plumbing-check model (tiny, meaningless answers) produced any of the run."""
        return bool(self.manifest.get("plumbing_check"))


def collect_artifacts(run: Path) -> list[Artifact]:
    """Registered artifacts in report order (`artifacts.ordered`), then unregistered ones (alphabetically)."""
    files: dict[str, list[Path]] = {}
    for folder in ARTIFACT_FOLDERS:
        for path in sorted((run / folder).glob("*")) if (run / folder).is_dir() else []:
            if folder == "benchmark" and path.suffix.lower() not in (".png", ".pdf"):
                continue  # the benchmark's data files are data, not report artifacts
            if path.is_file() and not path.name.startswith("."):
                files.setdefault(path.stem, []).append(path)
    entries = [e for e in artifacts.ordered(artifacts.read_index(run)) if e.name in files]
    known = [Artifact(e.name, e.section, e.explanation, files[e.name], e.notebook, e.control) for e in entries]
    registered = {e.name for e in entries}
    unknown = [Artifact(n, artifacts.OTHER, UNKNOWN_EXPLANATION, files[n]) for n in sorted(files)
               if n not in registered]
    return known + unknown


def by_section(items: list[Artifact]) -> list[tuple[str, list[Artifact]]]:
    """(section, its artifacts) in the order the artifacts come."""
    sections: dict[str, list[Artifact]] = {}
    for a in items:
        sections.setdefault(a.section, []).append(a)
    return list(sections.items())


def table_caption(path: Path) -> str:
    """The caption line of a table's Markdown file ('' for a CSV or an empty file); Markdown, as written."""
    if path.suffix.lower() != ".md":
        return ""
    first = next(iter(path.read_text(encoding="utf-8").splitlines()), "").strip()
    return "" if first.startswith("|") else first


def table_markdown(path: Path) -> str:
    """The Markdown table of a tables/<name>.md (after its caption), or of a CSV with every cell escaped."""
    if path.suffix.lower() == ".csv":
        return markdown_table(pd.read_csv(path))
    text = path.read_text(encoding="utf-8")
    return (text.partition("\n\n")[2] if table_caption(path) else text).strip()


def evidence(reasons: list[str], shown: int = 3) -> str:
    """The first few reasons a run counts as simulated, and how many more there are."""
    more = len(reasons) - shown
    return "; ".join(reasons[:shown]) + (f"; and {more} more" if more > 0 else "")


def simulation_evidence(manifest: dict, items: list[Artifact], notebooks: list[Path]) -> list[str]:
    """Why a run counts as simulated: manifest entries, table captions and notebook parameters that say so.

    A control's caption (a simulated check by design, such as the planted-null table) is no evidence.
    """
    reasons = [f"manifest: {where}" for where in _simulated_entries(manifest)]
    reasons += [f"table caption: {a.table.name}" for a in items
                if a.table is not None and not a.control and "SIMULATED" in table_caption(a.table)]
    for nb in notebooks:
        parameters = _read_object(nb).get("metadata", {}).get("papermill", {}).get("parameters", {})
        reasons += [f"notebook {nb.stem}: {where}" for where in _simulated_entries(parameters)]
    return reasons


def _simulated_entries(value: object, where: str = "") -> list[str]:
    """Places in nested JSON that mark simulation: client 'sim', simulated: true, text 'SIMULATED'.

    A `backend` parameter is not evidence: it only picks the paper's models when none are given.
    """
    if isinstance(value, dict):
        found = []
        for key, item in value.items():
            here = f"{where}.{key}" if where else str(key)
            if (key == "client" and item == "sim") or (key == "simulated" and item is True):
                found.append(f"{here} = {json.dumps(item)}")
            else:
                found += _simulated_entries(item, here)
        return found
    if isinstance(value, list):
        return [hit for i, item in enumerate(value) for hit in _simulated_entries(item, f"{where}[{i}]")]
    return [where] if isinstance(value, str) and "SIMULATED" in value else []


def read_folder(path: Path) -> Run:
    """Read what a run folder holds for its report; a missing manifest or timings file leaves them empty."""
    if not path.is_dir():
        raise FileNotFoundError(f"run folder {path} does not exist")
    manifest = _read_object(path / "manifest.json")
    timings = _read_json(path / "timings.json", [])
    if not isinstance(timings, list):
        raise ValueError(f"{path / 'timings.json'}: expected a list of rows")
    bad = [i for i, row in enumerate(timings) if not {"notebook", "seconds"} <= set(row)]
    if bad:
        raise ValueError(f"{path / 'timings.json'}: row {bad[0]} lacks 'notebook' or 'seconds'")
    items = collect_artifacts(path)
    notebooks = sorted((path / "notebooks").glob("*.ipynb"))
    statements = [judges.statement(name) or "" for name in judges.judges_in_manifest(manifest)]
    return Run(path, manifest, timings, items, simulation_evidence(manifest, items, notebooks), notebooks,
               [s for s in statements if s])


def _read_json(path: Path, empty: object) -> object:
    if not path.exists():
        return empty
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not valid JSON: {error}") from error


def _read_object(path: Path) -> dict:
    """A JSON object file ({} when missing); anything else is an error naming the file."""
    value = _read_json(path, {})
    if not isinstance(value, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(value).__name__}")
    return value


def run_facts(run: Run, generated: str) -> list[tuple[str, str]]:
    """(label, value) lines about the run: name, creation time, commit, versions, report time."""
    manifest = run.manifest
    packages = ", ".join(f"{name} {version}" for name, version in (manifest.get("packages") or {}).items()
                         if version)
    return [("Run", run.path.name), ("Created", manifest.get("created") or "unknown (no manifest)"),
            ("Git commit", manifest.get("git_commit") or "unknown"), ("Python", manifest.get("python") or "unknown"),
            ("Packages", packages or "unknown"), ("Report generated", generated)]


def stage_rows(manifest: dict) -> list[tuple[str, str, str]]:
    """(stage, recorded at, its scalar parameters) per manifest stage; nested values are summarised."""
    rows = []
    for stage, entries in (manifest.get("stages") or {}).items():
        entries = entries if isinstance(entries, dict) else {"value": entries}
        shown = [f"{key}={_short(value)}" for key, value in entries.items() if key != "at"]
        rows.append((str(stage), str(entries.get("at", "")), ", ".join(shown)))
    return rows


def _short(value: object) -> str:
    if isinstance(value, (list, tuple)):
        return f"[{len(value)} entries]" if any(isinstance(v, (dict, list)) for v in value) else json.dumps(value)
    if isinstance(value, dict):
        return f"{{{len(value)} fields}}"
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else str(value)


def wall_time_rows(timings: list[dict]) -> list[tuple[str, str]]:
    """(notebook, seconds) per notebook, then the total."""
    rows = [(str(t["notebook"]), f"{float(t['seconds']):.1f}") for t in timings]
    return rows + [("Total", f"{sum(float(t['seconds']) for t in timings):.1f}")] if rows else []


# --- report_markdown --------------------------------------------------------------------------------------
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
            lines += _artifact_markdown(run, a)
    if not run.artifacts:
        lines += ["No tables or figures in this run yet.", ""]
    return "\n".join(lines)


def _artifact_markdown(run: Run, a: Artifact) -> list[str]:
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


# --- report_html ------------------------------------------------------------------------------------------
TEMPLATE = "report.html.j2"

_markdown_to_html = mistune.create_markdown(escape=True, plugins=["table"])


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The report's Jinja2 environment: templates from gama_utils/jinja, every substitution HTML-escaped."""
    return jinja2.Environment(loader=jinja2.PackageLoader("gama_utils.report", "jinja"), autoescape=True,
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
        "sections": [(section, [_artifact_html(run, a) for a in items])
                     for section, items in by_section(run.artifacts)],
    }


def _artifact_html(run: Run, a: Artifact) -> dict[str, object]:
    caption = table_caption(a.table) if a.table is not None else ""
    return {
        "name": a.name, "anchor": anchor(a.name), "explanation": a.explanation, "notebook": a.notebook,
        "figures": [{"data": base64.b64encode(p.read_bytes()).decode("ascii"),
                     "path": p.relative_to(run.path).as_posix()} for p in a.figures],
        "caption": markdown_html(caption) if caption else "",
        "table": markdown_html(table_markdown(a.table)) if a.table is not None else "",
        "downloads": [{"href": link(run, p), "name": p.name} for p in a.downloads],
    }


# --- run_report ------------------------------------------------------------------------------------------


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
    parser = argparse.ArgumentParser(prog="python -m gama_utils.report.run_report", description=build_report.__doc__)
    parser.add_argument("run", help="run folder, or a run name under outputs/runs/")
    args = parser.parse_args(argv)
    for kind, path in build_report(args.run).items():
        print(f"{kind}: {path}")
    return 0

if __name__ == "__main__":
    sys.exit(main())
