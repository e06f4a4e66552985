"""The run report: every table and figure of a run in the paper's order, as report.html and report.md.

report.html is self-contained (figures as base64 PNG data URIs, tables as HTML tables, inline
CSS, no script, no external request) so it opens offline; report.md links the figures by
relative path and carries the Markdown tables. Both open with a SIMULATED banner whenever the
manifest, a table caption or an executed notebook shows the simulated backend.

Run folder read here (whatever exists): manifest.json, timings.json, tables/<name>.md|.csv|.tex,
figures/<name>.png|.pdf, benchmark/<name>.png, notebooks/*.ipynb.
`python -m gama_utils.report <run_dir>` builds both files.
"""

from __future__ import annotations

import argparse
import base64
import html
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import mistune
import pandas as pd

from .run_folders import atomic_write, run_dir

BANNER = "SIMULATED: produced by the offline simulated backend; not findings about real models."
PLUMBING_BANNER = ("PLUMBING CHECK: real answers from a tiny model on a local server; they exercise the pipeline "
                   "on a real LLM and are meaningless as findings about any model.")
ARTIFACT_FOLDERS = ("benchmark", "tables", "figures")
OTHER_SECTION = "Other artifacts"

# The paper's order, in sections; every base name has its one-line explanation in EXPLANATIONS.
SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Benchmark (§3)", ("composition", "wordcloud")),
    ("Responses and evaluation", ("responses_summary", "evaluation_summary")),
    ("Main results (§4.2)", ("table2_intimate", "table3_public", "fig7_transitions_intimate",
                             "fig8_transitions_public", "forest_intimate", "forest_public", "table6_pvalues",
                             "paper_side_by_side", "blind_vs_sighted", "mixed_effects")),
    ("Model scale, post-training and reasoning (§4.3)", ("table7_qwen_intimate", "table8_qwen_public",
                                                          "fig9_qwen_ablation")),
    ("Robustness to evaluator choice (§4.4)", ("table10_intimate_swap", "table11_public_swap",
                                               "fig10_evaluator_agreement", "evaluator_agreement")),
    ("Human validation (§4.5)", ("table4_human",)),
    ("Dimension and severity (App. B)", ("fig11_dimension_intimate", "fig12_dimension_public", "fig13_severity",
                                         "dimension_gaps", "severity_gaps")),
)
PAPER_ORDER: tuple[str, ...] = tuple(name for _, names in SECTIONS for name in names)

EXPLANATIONS: dict[str, str] = {
    "composition": "Figure 2. Composition of the benchmark: instances per track, conflict dimension and "
                   "severity level (paper Fig 2).",
    "wordcloud": "Figure 3. Word cloud of the benchmark's scenarios (paper Fig 3).",
    "responses_summary": "Responses collected per target model and arm, with their status counts "
                         "(a run check; no paper counterpart).",
    "evaluation_summary": "Evaluations per evaluator: valid, re-asked and still-invalid answers, counted and "
                          "never dropped silently (a run check; no paper counterpart).",
    "table2_intimate": "Table 2. Intimate track: male, female and Δ = female − male per metric (paper Table 2).",
    "table3_public": "Table 3. Public track: male, female and Δ = female − male per metric (paper Table 3).",
    "fig7_transitions_intimate": "Figure 7. Intimate track: each arrow goes from a model's female-actor point to its "
                                 "male-actor point in the blame × empathy plane (paper Fig 7).",
    "fig8_transitions_public": "Figure 8. Public track: each arrow goes from a model's female-actor point to its "
                               "male-actor point in the blame × empathy plane (paper Fig 8).",
    "forest_intimate": "Intimate track: Δ per model and metric with its bootstrap confidence interval "
                       "(the uncertainty behind Table 2).",
    "forest_public": "Public track: Δ per model and metric with its bootstrap confidence interval "
                     "(the uncertainty behind Table 3).",
    "table6_pvalues": "Table 6. Raw p-values of paired Wilcoxon signed-rank tests for the four core metrics "
                      "(paper Table 6).",
    "paper_side_by_side": "The run's Δ beside the paper's reported Δ per model, track and metric "
                          "(paper Tables 2-3).",
    "blind_vs_sighted": "Δ scored with gender markers visible vs blinded, separating evaluator bias from "
                        "target-model bias (beyond the paper).",
    "mixed_effects": "Female − male effect per model from a mixed model with scenario random intercepts "
                     "(beyond the paper; checks the paired Δ).",
    "table7_qwen_intimate": "Table 7. Qwen variants, intimate track: male, female and Δ per metric (paper Table 7).",
    "table8_qwen_public": "Table 8. Qwen variants, public track: male, female and Δ per metric (paper Table 8).",
    "fig9_qwen_ablation": "Figure 9. Effects of model scale, post-training and reasoning mode on the gender gaps "
                          "(paper Fig 9).",
    "table10_intimate_swap": "Table 10. Intimate track scored by the second evaluator (GPT-5.4 in the paper) "
                             "(paper Table 10).",
    "table11_public_swap": "Table 11. Public track scored by the second evaluator (GPT-5.4 in the paper) "
                           "(paper Table 11).",
    "fig10_evaluator_agreement": "Figure 10. The two evaluators' Δ per model × track × metric cell against each "
                                 "other (paper Fig 10).",
    "evaluator_agreement": "Evaluator agreement (§4.4): direction agreement, Pearson correlation of the Δs and "
                           "mean absolute difference (paper: 97.5%, 0.960, 1.80).",
    "table4_human": "Table 4. Human validation: Fleiss' κ per framing and evaluator-human agreement "
                    "(paper Table 4).",
    "fig11_dimension_intimate": "Figure 11. Intimate track: Δ per conflict dimension and metric, averaged over "
                                "models (paper Fig 11).",
    "fig12_dimension_public": "Figure 12. Public track: Δ per conflict dimension and metric, averaged over models "
                              "(paper Fig 12).",
    "fig13_severity": "Figure 13. Δ per severity level and metric, averaged over models (paper Fig 13).",
    "dimension_gaps": "The dimension-level Δ behind Figures 11-12, as numbers (paper App. B.1).",
    "severity_gaps": "The severity-level Δ behind Figure 13, as numbers (paper App. B.2).",
}
UNKNOWN_EXPLANATION = "Not in the paper's list of artifacts; shown as the run wrote it."


@dataclass
class Artifact:
    """The files of one base name (e.g. table2_intimate) across tables/, figures/ and benchmark/."""

    name: str
    section: str
    explanation: str
    files: list[Path] = field(default_factory=list)

    def of(self, suffix: str) -> list[Path]:
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

    @property
    def simulated(self) -> bool:
        return bool(self.simulated_because)

    @property
    def plumbing_check(self) -> bool:
        """Whether a plumbing-check model (tiny, meaningless answers) produced any of the run."""
        return bool(self.manifest.get("plumbing_check"))


def collect_artifacts(run: Path) -> list[Artifact]:
    """Artifacts in the paper's order, then names the paper's list does not know (alphabetically)."""
    files: dict[str, list[Path]] = {}
    for folder in ARTIFACT_FOLDERS:
        for path in sorted((run / folder).glob("*")) if (run / folder).is_dir() else []:
            if folder == "benchmark" and path.suffix.lower() not in (".png", ".pdf"):
                continue  # the benchmark's data files are data, not report artifacts
            if path.is_file() and not path.name.startswith("."):
                files.setdefault(path.stem, []).append(path)
    section_of = {name: section for section, names in SECTIONS for name in names}
    known = [Artifact(n, section_of[n], EXPLANATIONS[n], files[n]) for n in PAPER_ORDER if n in files]
    unknown = [Artifact(n, OTHER_SECTION, UNKNOWN_EXPLANATION, files[n]) for n in sorted(files)
               if n not in section_of]
    return known + unknown


def table_caption(path: Path) -> str:
    """The caption line of a table's Markdown file ('' for a CSV or an empty file)."""
    if path.suffix.lower() != ".md":
        return ""
    first = next(iter(path.read_text(encoding="utf-8").splitlines()), "").strip()
    return "" if first.startswith("|") else first


def table_markdown(path: Path) -> str:
    """The Markdown table of a tables/<name>.md (after its caption) or of a CSV rendered by pandas."""
    if path.suffix.lower() == ".csv":
        return pd.read_csv(path).to_markdown(index=False)
    text = path.read_text(encoding="utf-8")
    return (text.partition("\n\n")[2] if table_caption(path) else text).strip()


def _evidence(reasons: list[str], shown: int = 3) -> str:
    """The first few reasons a run counts as simulated, and how many more there are."""
    more = len(reasons) - shown
    return "; ".join(reasons[:shown]) + (f"; and {more} more" if more > 0 else "")


def simulation_evidence(manifest: dict, tables: list[Path], notebooks: list[Path]) -> list[str]:
    """Why a run counts as simulated: manifest entries, table captions and notebook parameters that say so."""
    reasons = [f"manifest: {where}" for where in _simulated_entries(manifest)]
    reasons += [f"table caption: {p.name}" for p in tables if "SIMULATED" in table_caption(p)]
    for nb in notebooks:
        parameters = _read_json(nb, {}).get("metadata", {}).get("papermill", {}).get("parameters", {})
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


def read_run(run: str | Path) -> Run:
    """Read what a run folder holds for its report; a missing manifest or timings file leaves them empty."""
    path = run_dir(run)
    if not path.is_dir():
        raise FileNotFoundError(f"run folder {path} does not exist")
    manifest = _read_json(path / "manifest.json", {})
    timings = _read_json(path / "timings.json", [])
    bad = [i for i, row in enumerate(timings) if not {"notebook", "seconds"} <= set(row)]
    if bad:
        raise ValueError(f"{path / 'timings.json'}: row {bad[0]} lacks 'notebook' or 'seconds'")
    artifacts = collect_artifacts(path)
    notebooks = sorted((path / "notebooks").glob("*.ipynb"))
    tables = [a.table for a in artifacts if a.table is not None]
    return Run(path, manifest, timings, artifacts, simulation_evidence(manifest, tables, notebooks), notebooks)


def _read_json(path: Path, empty: dict | list) -> dict | list:
    if not path.exists():
        return empty
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not valid JSON: {error}") from error


def build_report(run: str | Path) -> dict[str, Path]:
    """Write <run>/report.html and <run>/report.md; returns {"html": path, "md": path}."""
    content = read_run(run)
    generated = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {"html": atomic_write(content.path / "report.html", render_html(content, generated)),
            "md": atomic_write(content.path / "report.md", render_markdown(content, generated))}


# --------------------------------------------------------------------------- facts shared by both files

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


# --------------------------------------------------------------------------- Markdown

def render_markdown(run: Run, generated: str) -> str:
    """report.md: banner, run facts, contents, wall times, then every artifact in the paper's order."""
    lines = [f"# GAMA-Bench run report: {run.path.name}", ""]
    if run.simulated:
        lines += [f"> **{BANNER}**", ">", "> Marked simulated by: " + _evidence(run.simulated_because), ""]
    if run.plumbing_check:
        lines += [f"> **{PLUMBING_BANNER}**", ""]
    lines += [f"- **{label}:** {_md_inline(value)}" for label, value in run_facts(run, generated)] + [""]
    lines += ["## Contents", ""]
    for section, artifacts in _by_section(run.artifacts):
        lines.append(f"- {section}")
        lines += [f"  - [{a.name}](#{a.name}): {a.explanation}" for a in artifacts]
    lines += ["- [Wall time per notebook](#wall-times)", "- [Stages](#stages)", ""]
    lines += _markdown_wall_times(run) + _markdown_stages(run)
    for section, artifacts in _by_section(run.artifacts):
        lines += [f"## {section}", ""]
        for a in artifacts:
            lines += [f'<a id="{a.name}"></a>', "", f"### {a.name}", "", f"*{a.explanation}*", ""]
            lines += [f"![{a.name}]({p.relative_to(run.path).as_posix()})" for p in a.figures]
            lines += [""] if a.figures else []
            if a.table is not None:
                caption = table_caption(a.table)
                lines += ([f"{caption}", ""] if caption else []) + [table_markdown(a.table), ""]
            if a.downloads:
                lines += ["Files: " + ", ".join(f"[{p.name}]({p.relative_to(run.path).as_posix()})"
                                                for p in a.downloads), ""]
    if not run.artifacts:
        lines += ["No tables or figures in this run yet.", ""]
    return "\n".join(lines)


def _markdown_wall_times(run: Run) -> list[str]:
    lines = ['<a id="wall-times"></a>', "", "## Wall time per notebook", ""]
    rows = wall_time_rows(run.timings)
    if not rows:
        return lines + ["No timings.json in this run.", ""]
    executed = {nb.stem: nb for nb in run.notebooks}
    lines += ["| Notebook | Seconds |", "|:--|--:|"]
    for notebook, seconds in rows:
        name = (f"[{notebook}]({executed[notebook].relative_to(run.path).as_posix()})" if notebook in executed
                else notebook)
        lines.append(f"| {name} | {seconds} |")
    return lines + [""]


def _markdown_stages(run: Run) -> list[str]:
    lines = ['<a id="stages"></a>', "", "## Stages", ""]
    rows = stage_rows(run.manifest)
    if not rows:
        return lines + ["No stages recorded in manifest.json.", ""]
    lines += ["| Stage | At | Parameters |", "|:--|:--|:--|"]
    return lines + [f"| {stage} | {at} | {_md_inline(params)} |" for stage, at, params in rows] + [""]


def _md_inline(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _by_section(artifacts: list[Artifact]) -> list[tuple[str, list[Artifact]]]:
    sections: dict[str, list[Artifact]] = {}
    for a in artifacts:
        sections.setdefault(a.section, []).append(a)
    return list(sections.items())


# --------------------------------------------------------------------------- HTML

CSS = """
body { font-family: -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: #1d1d1f;
       max-width: 72rem; margin: 0 auto; padding: 1.5rem; line-height: 1.45; background: #fff; }
h1 { font-size: 1.7rem; margin-top: 0.5rem; }
h2 { border-bottom: 2px solid #d0d7de; padding-bottom: 0.25rem; margin-top: 2.5rem; }
h3 { margin-bottom: 0.2rem; font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 1.05rem; }
.banner { background: #b3261e; color: #fff; font-weight: 700; font-size: 1.15rem; padding: 0.9rem 1.2rem;
          border-radius: 6px; margin-bottom: 1rem; }
.banner small { display: block; font-weight: 400; font-size: 0.8rem; margin-top: 0.35rem; opacity: 0.9; }
.explanation { font-style: italic; color: #444; margin-top: 0.2rem; }
.caption { font-size: 0.9rem; color: #333; margin: 0.4rem 0; }
figure { margin: 0.8rem 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #e5e5e5; }
figcaption { font-size: 0.85rem; color: #555; }
.scroll { overflow-x: auto; margin: 0.5rem 0 1rem; }
table { border-collapse: collapse; font-size: 0.85rem; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #d0d7de; padding: 0.2rem 0.5rem; text-align: left; white-space: nowrap; }
th { background: #f3f5f7; }
table.timings td:last-child, table.timings th:last-child { text-align: right; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.15rem 1rem; }
dl.facts dt { font-weight: 600; } dl.facts dd { margin: 0; word-break: break-all; }
.files { font-size: 0.85rem; color: #555; }
nav ul { margin-top: 0.2rem; }
"""

_markdown_to_html = mistune.create_markdown(escape=True, plugins=["table"])


def render_html(run: Run, generated: str) -> str:
    """report.html: the same content as report.md, self-contained (no script, no external request)."""
    e = html.escape
    parts = [f"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
             f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
             f"<title>GAMA-Bench run report: {e(run.path.name)}</title>\n<style>{CSS}</style>\n</head>\n<body>"]
    if run.simulated:
        parts.append(f'<div class="banner" id="simulated-banner">{e(BANNER)}'
                     f"<small>Marked simulated by: {e(_evidence(run.simulated_because))}</small></div>")
    if run.plumbing_check:
        parts.append(f'<div class="banner" id="plumbing-banner">{e(PLUMBING_BANNER)}</div>')
    parts.append(f"<h1>GAMA-Bench run report: {e(run.path.name)}</h1>")
    parts.append('<dl class="facts">' + "".join(f"<dt>{e(label)}</dt><dd>{e(value)}</dd>"
                                                for label, value in run_facts(run, generated)) + "</dl>")
    parts.append(_html_contents(run))
    parts.append(_html_wall_times(run))
    parts.append(_html_stages(run))
    for section, artifacts in _by_section(run.artifacts):
        parts.append(f"<section><h2>{e(section)}</h2>")
        parts += [_html_artifact(a, run.path) for a in artifacts]
        parts.append("</section>")
    if not run.artifacts:
        parts.append("<p>No tables or figures in this run yet.</p>")
    parts.append("</body>\n</html>\n")
    return "\n".join(parts)


def _html_contents(run: Run) -> str:
    e = html.escape
    items = []
    for section, artifacts in _by_section(run.artifacts):
        inner = "".join(f'<li><a href="#{e(a.name)}">{e(a.name)}</a>: {e(a.explanation)}</li>' for a in artifacts)
        items.append(f"<li>{e(section)}<ul>{inner}</ul></li>")
    items += ['<li><a href="#wall-times">Wall time per notebook</a></li>', '<li><a href="#stages">Stages</a></li>']
    return f"<nav><h2>Contents</h2><ul>{''.join(items)}</ul></nav>"


def _html_rows(header: tuple[str, ...], rows: list[tuple[str, ...]], kind: str) -> str:
    e = html.escape
    head = "".join(f"<th>{e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return (f'<div class="scroll"><table class="{kind}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def _html_wall_times(run: Run) -> str:
    rows = wall_time_rows(run.timings)
    table = _html_rows(("Notebook", "Seconds"), rows, "timings") if rows else "<p>No timings.json in this run.</p>"
    return f'<section><h2 id="wall-times">Wall time per notebook</h2>{table}</section>'


def _html_stages(run: Run) -> str:
    rows = stage_rows(run.manifest)
    table = (_html_rows(("Stage", "At", "Parameters"), rows, "stages") if rows
             else "<p>No stages recorded in manifest.json.</p>")
    return f'<section><h2 id="stages">Stages</h2>{table}</section>'


def _html_artifact(artifact: Artifact, run: Path) -> str:
    e = html.escape
    parts = [f'<article id="{e(artifact.name)}"><h3>{e(artifact.name)}</h3>',
             f'<p class="explanation">{e(artifact.explanation)}</p>']
    for png in artifact.figures:
        data = base64.b64encode(png.read_bytes()).decode("ascii")
        parts.append(f'<figure><img src="data:image/png;base64,{data}" alt="{e(artifact.name)}" '
                     f'data-artifact="{e(png.relative_to(run).as_posix())}">'
                     f"<figcaption>{e(png.relative_to(run).as_posix())}</figcaption></figure>")
    if artifact.table is not None:
        caption = table_caption(artifact.table)
        if caption:
            parts.append(f'<p class="caption">{e(caption)}</p>')
        parts.append(f'<div class="scroll" data-table="{e(artifact.name)}">'
                     f"{_markdown_to_html(table_markdown(artifact.table))}</div>")
    if artifact.downloads:
        names = ", ".join(f'<a href="{e(p.relative_to(run).as_posix())}">{e(p.name)}</a>' for p in artifact.downloads)
        parts.append(f'<p class="files">Also in the run folder: {names}</p>')
    parts.append("</article>")
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gama_utils.report", description=build_report.__doc__)
    parser.add_argument("run", help="run folder, or a run name under outputs/runs/")
    args = parser.parse_args(argv)
    for kind, path in build_report(args.run).items():
        print(f"{kind}: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
