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
import io
import json
import logging
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from urllib.parse import quote

import jinja2
import mistune
import pandas as pd
from markupsafe import Markup, escape

from gama_utils.analysis import paper, pooling, selections
from gama_utils.collect.respond import IMPORTS_FILE, ORIGIN_FILE
from gama_utils.core.escaping import markdown_cell
from gama_utils.core.metrics import metric, metric_keys
from gama_utils.core.run_folders import atomic_write, load, run_dir
from gama_utils.judge import judges
from gama_utils.report import artifacts, headline, plots, tables
from gama_utils.report.table_files import markdown_table

log = logging.getLogger(__name__)

__all__ = ["BANNER", "PLUMBING_BANNER", "Run", "build_report", "main", "read_run", "render_html", "render_markdown",
           "stale_files"]


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
class FirstScreen:
    """What the report opens with: the summary, the provenance line, the headline figure, the run against the
    paper and an example mirrored pair (each None or empty when the run lacks what it needs)."""

    provenance: str
    summary: list[str] = field(default_factory=list)
    headline_png: bytes | None = None
    paper_png: bytes | None = None
    example: headline.Example | None = None
    missing: str = ""  # why there is no headline yet


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
    first: FirstScreen | None = None

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


# The report's order: the paper's results (§4.2-§4.5, App. B), checks beyond the paper and sections of one's own,
# then how the run was made (benchmark, responses), then files no entry names; diagnostics follow all of them.
RESULT_SECTIONS = (artifacts.MAIN, artifacts.ABLATION, artifacts.ROBUSTNESS, artifacts.HUMAN, artifacts.STRATA,
                   artifacts.CHECKS)
MAKING_SECTIONS = (artifacts.BENCHMARK, artifacts.RESPONSES)
FOLD_ROWS = 25  # a table with more rows is folded (<details>) with its CSV linked
TITLE_CHARS = 64
SHORT_HEAD = 24  # a title this short before its colon, with no Table/Figure label, keeps the clause after it
BROWSER_FILE = "browser.html"


def report_sections(items: list[Artifact]) -> list[tuple[str, list[Artifact]]]:
    """`by_section` in the report's order (RESULT_SECTIONS, own sections, MAKING_SECTIONS, Other artifacts)."""
    sections = by_section(items)

    def rank(section: str) -> tuple[int, int]:
        if section in RESULT_SECTIONS:
            return 0, RESULT_SECTIONS.index(section)
        if section in MAKING_SECTIONS:
            return 2, MAKING_SECTIONS.index(section)
        return (3, 0) if section == artifacts.OTHER else (1, 0)

    return sorted(sections, key=lambda item: rank(item[0]))  # stable: own sections keep their order


def short_title(a: Artifact) -> str:
    """A contents entry: the explanation up to its first colon, parenthesis or sentence end, at most TITLE_CHARS."""
    if a.section == artifacts.OTHER:
        return a.name
    text = a.explanation.strip()
    label = re.match(r"(Table|Figure|Fig\.?) [A-Za-z0-9.-]+\.\s+", text)
    head, rest = (text[:label.end()], text[label.end():]) if label else ("", text)
    parts = re.split(r"(:\s|\s\(|;\s|\.\s|\.$)", rest, maxsplit=2)
    rest = parts[0].strip()
    if not label and len(rest) <= SHORT_HEAD and len(parts) > 2 and parts[1].startswith(":"):
        rest = f"{rest}: {parts[2].split(' (')[0].split('. ')[0].strip()}"  # "Intimate track: Δ per model ..."
    title = f"{head}{rest}".strip() or a.name
    if len(title) > TITLE_CHARS:
        title = title[:TITLE_CHARS].rsplit(" ", 1)[0] + "…"
    return title


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
    simulated = simulation_evidence(manifest, items, notebooks)
    kind = "Simulated" if simulated else "Plumbing check" if manifest.get("plumbing_check") else "Real answers"
    return Run(path, manifest, timings, items, simulated, notebooks, [s for s in statements if s],
               first_screen(path, manifest, kind))


HEADLINE_COLUMNS = ("model", "track", "metric", "delta", "ci_low", "ci_high", "p_holm")


def first_screen(path: Path, manifest: dict, kind: str) -> FirstScreen:
    """The summary, figures and example pair from the run's gaps.jsonl, evaluations, responses and pairs."""
    origins = _read_object(path / ORIGIN_FILE)
    imports = _read_json(path / IMPORTS_FILE, [])
    screen = FirstScreen(headline.provenance(kind, origins, imports if isinstance(imports, list) else [],
                                             manifest).line())
    if not (path / "gaps.jsonl").exists():
        screen.missing = "No gaps yet: 06_analyze writes gaps.jsonl, from which this summary is made."
        return screen
    gaps = load(path, "gaps")
    missing = [c for c in HEADLINE_COLUMNS if c not in gaps.columns]
    if missing:  # gaps written by an older version: the tables below still show
        screen.missing = f"No summary: gaps.jsonl lacks {', '.join(missing)}; run 06_analyze again to add them."
        return screen
    screen.summary = headline.summary(gaps)
    if (path / "pooled_gaps.jsonl").exists():  # across models (06): the random-effects sentence of each track
        screen.summary += list(pooling.pooled_summary(load(path, "pooled_gaps")).values())
    screen.headline_png = png_bytes(plots.headline(gaps))
    compared = tables.compare_with_paper(gaps, paper.main_results())
    if not compared.empty:
        screen.paper_png = png_bytes(plots.run_vs_paper(compared))
    screen.example = example(path, gaps)
    return screen


def example(path: Path, gaps: pd.DataFrame) -> headline.Example | None:
    """The example mirrored pair (`headline.example_pair`) of the report's first model, or None without the files."""
    if not all((path / f"{name}.jsonl").exists() for name in ("evaluations", "responses")):
        return None
    first = tables.model_rows(gaps["model"], tables.model_groups(gaps)).get_level_values("Model")[0]
    try:
        _, sighted = selections.primary_sighted(load(path, "evaluations", model=first))
        responses = load(path, "responses", model=first)
    except ValueError as error:  # the first model has no evaluations or answers here
        log.info("no example pair: %s", error)
        return None
    pairs = load(path, "pairs") if (path / "pairs.jsonl").exists() else headline.pairs_from_responses(responses)
    return headline.example_pair(sighted, responses, pairs, first)


def png_bytes(fig: object) -> bytes:
    """A figure as PNG bytes at 200 dpi (shown at half size: sharp on any screen); every text drawn as written."""
    import matplotlib.pyplot as plt
    from matplotlib.text import Text

    for text in fig.findobj(Text):  # type: ignore[attr-defined]
        text.set_parse_math(False)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=200)  # type: ignore[attr-defined]
    plt.close(fig)  # type: ignore[arg-type]
    return buffer.getvalue()


def stale_files(run: str | Path) -> list[Path]:
    """Tables, figures and the gaps written after <run>/report.html (all of them when there is no report)."""
    folder = run_dir(run)
    report = folder / "report.html"
    built = report.stat().st_mtime if report.exists() else float("-inf")
    candidates = [folder / "gaps.jsonl", *[p for d in ("tables", "figures") for p in sorted((folder / d).glob("*"))]]
    return [p for p in candidates if p.is_file() and p.stat().st_mtime > built]


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


def notebook_run_rows(manifest: dict) -> list[tuple[str, str, str, str]]:
    """(notebook, how it ran: papermill or interactive, at, its parameters) per run recorded in the manifest."""
    rows = []
    for notebook, entry in (manifest.get("notebook_runs") or {}).items():
        entry = entry if isinstance(entry, dict) else {}
        shown = [f"{key}={_short(value)}" for key, value in (entry.get("parameters") or {}).items()]
        rows.append((str(notebook), str(entry.get("how", "")), str(entry.get("at", "")), ", ".join(shown)))
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


FIGURE_FOLDER = "report_files"  # the report's own figures (headline, run against the paper), for report.md


def render_markdown(run: Run, generated: str) -> str:
    """report.md: banner, provenance, summary and headline, contents, the results in order, then the diagnostics."""
    first = run.first or FirstScreen("")
    lines = [f"# GAMA-Bench run report: {markdown_cell(run.path.name)}", ""]
    if run.simulated:
        lines += [f"> **{BANNER}**", ">", "> Marked simulated by: " + markdown_cell(evidence(run.simulated_because)),
                  ""]
    if run.plumbing_check:
        lines += [f"> **{PLUMBING_BANNER}**", ""]
    lines += [f"*{markdown_cell(first.provenance)}*", ""] if first.provenance else []
    lines += [" ".join(markdown_cell(sentence) for sentence in first.summary) or markdown_cell(first.missing), ""]
    lines += [f"![Δ with 95% CI per model, metric and track]({FIGURE_FOLDER}/headline.png)", ""] \
        if first.headline_png else []
    if (run.path / BROWSER_FILE).exists():
        lines += [f"Every answer, pair by pair: [the answer browser]({BROWSER_FILE}).", ""]
    lines += ["## Contents", ""]
    ordered = report_sections(run.artifacts)
    for section, items in ordered:
        lines.append(f"- **{markdown_cell(section)}:** " + " · ".join(
            f"[{markdown_cell(short_title(a))}](#{anchor(a.name)})" for a in items))
    lines += ["- **Diagnostics:** [Run facts](#run-facts) · [Wall time per notebook](#wall-times) · "
              "[Stages](#stages) · [Notebook runs](#notebook-runs)"
              + (f" · [Measured limits of the judges](#{JUDGE_LIMITS_ANCHOR})" if run.judge_statements else ""), ""]
    if first.paper_png:
        lines += ["## This run against the paper", "", f"![run Δ against paper Δ]({FIGURE_FOLDER}/paper.png)", ""]
    if first.example:
        lines += _example_markdown(first.example)
    for section, items in ordered:
        lines += [f"## {markdown_cell(section)}", ""]
        for a in items:
            lines += _artifact_markdown(run, a)
    if not run.artifacts:
        lines += ["No tables or figures in this run yet.", ""]
    lines += ['<a id="run-facts"></a>', "", "## Diagnostics", ""]
    lines += [f"- **{label}:** {markdown_cell(value)}" for label, value in run_facts(run, generated)] + [""]
    lines += _wall_times(run) + _stages(run) + _notebook_runs(run) + _judge_limits(run)
    return "\n".join(lines)


def _example_markdown(example: headline.Example) -> list[str]:
    lines = ["## An example mirrored pair", "", f"*Chosen as {markdown_cell(example.rule)}.*", ""]
    for arm in ("female", "male"):
        score = example.scores.get(arm, {})
        scores = ", ".join(f"{metric(k).label} {_score(score.get(metric(k).column), metric(k).is_rate)}"
                           for k in metric_keys())
        lines += [f"**{arm.capitalize()} actor.** Prompt: {markdown_cell(str(example.pair.get(f'prompt_{arm}', '')))}",
                  "", f"Answer: {markdown_cell(str(example.answers.get(arm, '')))}", "", f"Scores: {scores}", ""]
    return lines


def _notebook_runs(run: Run) -> list[str]:
    return _text_table("notebook-runs", "Notebook runs", ("Notebook", "How", "At", "Parameters"),
                       notebook_run_rows(run.manifest), "No notebook run recorded in manifest.json.")


def _text_table(target: str, title: str, header: Sequence[str], rows: Sequence[Sequence[str]],
                empty: str) -> list[str]:
    """A titled Markdown table of text cells, each escaped, or the `empty` sentence."""
    lines = [f'<a id="{target}"></a>', "", f"## {title}", ""]
    if not rows:
        return lines + [empty, ""]
    lines += [f"| {' | '.join(header)} |", "|" + ":--|" * len(header)]
    return lines + [f"| {' | '.join(markdown_cell(c) for c in row)} |" for row in rows] + [""]


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
    return _text_table("stages", "Stages", ("Stage", "At", "Parameters"), stage_rows(run.manifest),
                       "No stages recorded in manifest.json.")


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


_HEADER = re.compile(r"<thead>\n<tr>\n(.*?)</tr>\n</thead>", re.S)
_HEADER_CELL = re.compile(r'\s*<th(?: style="[^"]*")?>(.*?)</th>\n?', re.S)


def header_groups() -> list[str]:
    """Column-name prefixes heading a group of columns (metric labels, track labels), escaped, longest first."""
    names = [metric(k).label for k in metric_keys()] + list(tables.TRACK_LABELS.values())
    return sorted((str(escape(n)) for n in names), key=len, reverse=True)


def grouped_header(table: str) -> str:
    """An HTML table whose adjacent columns "<group> <part>" share a group gets a two-row header (group over parts)."""
    head = _HEADER.search(table)
    if head is None:
        return table
    cells = _HEADER_CELL.findall(head.group(1))
    groups = header_groups()
    split = []
    for text in cells:
        group = next((g for g in groups if text.startswith(g + " ")), None)
        split.append((group, text[len(group) + 1:]) if group else (None, text))
    runs: list[list[tuple[str | None, str]]] = []
    for group, part in split:
        if runs and group is not None and runs[-1][0][0] == group:
            runs[-1].append((group, part))
        else:
            runs.append([(group, part)])
    if not any(len(r) > 1 for r in runs):
        return table
    top, bottom = [], []
    for run_ in runs:
        group = run_[0][0]
        if len(run_) == 1:
            text = run_[0][1] if group is None else f"{group} {run_[0][1]}"
            top.append(f'<th rowspan="2">{text}</th>')
        else:
            top.append(f'<th colspan="{len(run_)}" class="group">{group}</th>')
            bottom += [f"<th>{part}</th>" for _, part in run_]
    header = f"<thead>\n<tr>{''.join(top)}</tr>\n<tr>{''.join(bottom)}</tr>\n</thead>"
    return table[:head.start()] + header + table[head.end():]


def render_html(run: Run, generated: str) -> str:
    """report.html: the same content as report.md, self-contained (no script, no external request)."""
    return environment().get_template(TEMPLATE).render(context(run, generated))


def context(run: Run, generated: str) -> dict[str, object]:
    """What the template shows (plain text, escaped by the template, or Markup from `markdown_html` / `marked`)."""
    first = run.first or FirstScreen("")
    ordered = report_sections(run.artifacts)
    return {
        "name": run.path.name, "banner": BANNER, "plumbing_banner": PLUMBING_BANNER,
        "simulated_because": evidence(run.simulated_because) if run.simulated else "",
        "plumbing_check": run.plumbing_check, "facts": run_facts(run, generated),
        "provenance": first.provenance, "summary": first.summary, "missing": first.missing,
        "headline": _png_uri(first.headline_png), "paper_figure": _png_uri(first.paper_png),
        "example": _example_html(first.example) if first.example else None,
        "browser": (run.path / BROWSER_FILE).exists(), "browser_href": BROWSER_FILE,
        "wall_times": wall_time_rows(run.timings), "stages": stage_rows(run.manifest),
        "notebook_runs": notebook_run_rows(run.manifest),
        "judge_limits": [markdown_html(text) for text in run.judge_statements],
        "contents": [(section, [(anchor(a.name), short_title(a)) for a in items]) for section, items in ordered],
        "sections": [(section, [_artifact_html(run, a) for a in items]) for section, items in ordered],
    }


def _png_uri(data: bytes | None) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii") if data else ""


def marked(pieces: Sequence[tuple[str, object]], classes: dict) -> Markup:
    """Text pieces as escaped HTML, each piece whose kind is in `classes` inside <mark class=...>."""
    out = []
    for text, kind in pieces:
        css = classes.get(kind)
        out.append(Markup('<mark class="{}">{}</mark>').format(css, text) if css else escape(text))
    return Markup("").join(out)


def _example_html(example: headline.Example) -> dict[str, object]:
    """The example pair for the template: per arm the prompt (differences marked), the answer (terms marked), scores."""
    female, male = headline.word_diff(str(example.pair.get("prompt_female", "")),
                                      str(example.pair.get("prompt_male", "")))
    term_fields = headline.term_fields()
    kinds = {label: f"term-{index}" for index, label in enumerate(term_fields)}
    arms = []
    for arm, prompt in (("female", female), ("male", male)):
        score = example.scores.get(arm, {})
        terms = {label: list(score.get(field) or []) for label, field in term_fields.items()}
        arms.append({
            "arm": arm, "prompt": marked(prompt, {True: "diff"}),
            "answer": marked(headline.term_spans(str(example.answers.get(arm, "")), terms), kinds),
            "scores": [(metric_def.label, _score(score.get(metric_def.column), metric_def.is_rate))
                       for metric_def in (metric(k) for k in metric_keys())],
        })
    pair = example.pair
    return {"rule": example.rule, "model": example.model, "arms": arms,
            "where": f"{pair.get('pair_id')} · {pair.get('track')} · {pair.get('dimension')} · {pair.get('severity')}",
            "legend": [(label, kinds[label]) for label in term_fields]}


def _score(value: object, rate: bool) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "–"
    if rate:
        return "yes" if value else "no"
    return f"{value:g}" if isinstance(value, (int, float)) else str(value)


def _artifact_html(run: Run, a: Artifact) -> dict[str, object]:
    caption = table_caption(a.table) if a.table is not None else ""
    markdown = table_markdown(a.table) if a.table is not None else ""
    rows = max(0, sum(line.startswith("|") for line in markdown.splitlines()) - 2)  # less header and rule
    csv = next((p for p in a.files if p.suffix.lower() == ".csv"), None)
    return {
        "name": a.name, "anchor": anchor(a.name), "title": short_title(a), "explanation": a.explanation,
        "notebook": a.notebook,
        "figures": [{"data": base64.b64encode(p.read_bytes()).decode("ascii"),
                     "path": p.relative_to(run.path).as_posix()} for p in a.figures],
        "caption": markdown_html(caption) if caption else "",
        "table": Markup(grouped_header(str(markdown_html(markdown)))) if a.table is not None else "",
        "rows": rows, "folded": rows > FOLD_ROWS, "csv": link(run, csv) if csv else "",
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
    first = content.first or FirstScreen("")
    for name, data in (("headline.png", first.headline_png), ("paper.png", first.paper_png)):
        if data:
            (content.path / FIGURE_FOLDER).mkdir(exist_ok=True)
            atomic_write(content.path / FIGURE_FOLDER / name, data)
    return {"html": atomic_write(content.path / "report.html", render_html(content, generated)),
            "md": atomic_write(content.path / "report.md", render_markdown(content, generated))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gama_utils.report.run_report", description=build_report.__doc__)
    parser.add_argument("run", help="run folder, or a run name under outputs/runs/")
    parser.add_argument("--check", action="store_true",
                        help="build nothing: list the files written after report.html and exit 1 if there are any")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_files(args.run)
        for path in stale:
            print(f"newer than the report: {path}")
        if stale:
            print(f"report.html is stale: rebuild it with make report RUN={args.run}")
        return 1 if stale else 0
    for kind, path in build_report(args.run).items():
        print(f"{kind}: {path}")
    return 0

if __name__ == "__main__":
    sys.exit(main())
