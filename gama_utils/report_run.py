"""What the run report shows, read from a run folder: artifacts in report order, facts, timings, simulation evidence.

Artifacts are the files under tables/, figures/ and benchmark/ (its PNG and PDF only), grouped by
file stem; each takes its section, explanation and notebook from the run's artifact index
(`gama_utils.artifacts`). Files no entry names come last, under "Other artifacts".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from gama_utils import artifacts, judge_limits
from gama_utils.table_files import markdown_table

BANNER = "SIMULATED: produced by the offline simulated backend; not findings about real models."
PLUMBING_BANNER = ("PLUMBING CHECK: real answers from a tiny model on a local server; they exercise the pipeline "
                   "on a real LLM and are meaningless as findings about any model.")
ARTIFACT_FOLDERS = ("benchmark", "tables", "figures")
UNKNOWN_EXPLANATION = ("Written to the run folder without being registered in artifacts.json (gama_utils.emit); "
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
    statements = [judge_limits.statement(name) or "" for name in judge_limits.judges_in_manifest(manifest)]
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
