"""A notebook's tables and figures, emitted in one call, and the run's index of them that the report reads.

    out = artifacts.Outputs(run, "06_analyze")
    out.table(tables.paper_layout(result, "intimate"), "table2_intimate", caption="Intimate track",
              explanation="Table 2: male, female and Δ = female − male per metric.", section=artifacts.MAIN)
    out.figure(plots.transitions(result, "intimate"), "fig7_transitions_intimate", explanation="...",
               section=artifacts.MAIN)

A table goes to tables/<name>.csv|.md|.tex (`table_files.write_table`, escaped for each format), a
figure to figures/<name>.png|.pdf (`plots.save_figure`); both are shown (the calls return nothing, so a
cell that ends with one shows it once, not a repr) and registered in the run's artifacts.json with their
section, explanation and notebook. `register` does the last step alone for files other code wrote (03's
benchmark figures).

<run>/artifacts.json holds one entry per artifact name (the file stem under tables/, figures/ or
benchmark/): the section it belongs to, a sentence on how to read it, the notebook that emitted it and
whether it is a simulated control; the run report (`gama_utils.report.run_report`) builds its sections
from them, so a new notebook's artifacts appear in the report without editing any list. Report order:
the sections of SECTIONS in the paper's order, then sections the paper lacks (in the order their
notebooks ran); within a section, by notebook and then by the order the notebook registered them (a
re-run keeps an artifact's place).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display
from matplotlib.figure import Figure

from gama_utils.core.escaping import markdown_text
from gama_utils.core.run_folders import atomic_write, exclusive
from gama_utils.core.schema import Absent
from gama_utils.report.plots import save_figure
from gama_utils.report.table_files import display_table, provenance_note, write_table

# --- artifacts ------------------------------------------------------------------------------------------

INDEX_FILE = "artifacts.json"

BENCHMARK = "Benchmark (§3)"

RESPONSES = "Responses and evaluation"

MAIN = "Main results (§4.2)"

CHECKS = "Power and checks of the analysis (beyond the paper)"

ABLATION = "Model scale, post-training and reasoning (§4.3)"

ROBUSTNESS = "Robustness to evaluator choice (§4.4)"

HUMAN = "Human validation (§4.5)"

STRATA = "Dimension, severity and scenario metadata (App. B and beyond)"

OTHER = "Other artifacts"

STALE_REPORT = ("report.html predates the tables and figures this notebook writes: rebuild it with "
                "`make report RUN={run}` (or `python -m gama_utils.report.run_report {run}`).")

SECTIONS: tuple[str, ...] = (BENCHMARK, RESPONSES, MAIN, CHECKS, ABLATION, ROBUSTNESS, HUMAN, STRATA)

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


class ArtifactIndexError(ValueError):
    """An artifact entry is malformed; the message names the file, the entry and the field."""


@dataclass(frozen=True)
class Entry:
    """One registered artifact."""

    name: str  # file stem under tables/, figures/ or benchmark/
    section: str  # a SECTIONS value, or a section of one's own
    explanation: str  # how to read it, one or two sentences
    notebook: str  # the notebook that emitted it, e.g. "06_analyze"
    control: bool = False  # a simulated check by design: its SIMULATED caption does not make the run simulated


def check(entry: Entry, where: str = "artifact entry") -> Entry:
    """`entry` if every field is usable, else an ArtifactIndexError naming `where` and the field."""
    if not isinstance(entry.name, str) or not NAME.fullmatch(entry.name):
        raise ArtifactIndexError(f"{where}: name {entry.name!r} must be a file stem of letters, digits, '_', '.' "
                                 "or '-'")
    for field in ("section", "explanation", "notebook"):
        value = getattr(entry, field)
        if not isinstance(value, str) or not value.strip():
            raise ArtifactIndexError(f"{where} ({entry.name}): {field} must be non-empty text, got {value!r}")
    if not isinstance(entry.control, bool):
        raise ArtifactIndexError(f"{where} ({entry.name}): control must be true or false, got {entry.control!r}")
    return entry


def read_index(run: str | Path) -> list[Entry]:
    """The run's entries in registration order ([] when nothing was registered)."""
    path = Path(run) / INDEX_FILE
    if not path.exists():
        return []
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ArtifactIndexError(f"{path} is not valid JSON: {error}") from error
    if not isinstance(rows, list):
        raise ArtifactIndexError(f"{path}: expected a list of entries, got {type(rows).__name__}")
    known = {f.name for f in fields(Entry)}
    entries = []
    for i, row in enumerate(rows):
        where = f"{path} entry {i}"
        if not isinstance(row, dict) or not {"name", "section", "explanation", "notebook"} <= set(row):
            raise ArtifactIndexError(f"{where}: needs name, section, explanation and notebook; got {row!r}")
        unknown = sorted(set(row) - known)
        if unknown:
            raise ArtifactIndexError(f"{where}: unknown field(s) {', '.join(unknown)}")
        entries.append(check(Entry(**row), where))
    return entries


def register(run: str | Path, entry: Entry) -> Path:
    """Add or replace (by name, keeping its place) `entry` in the run's index, atomically; returns the index path."""
    check(entry)
    with exclusive(Path(run) / INDEX_FILE):
        entries = read_index(run)
        names = [e.name for e in entries]
        if entry.name in names:
            entries[names.index(entry.name)] = entry
        else:
            entries.append(entry)
        text = json.dumps([asdict(e) for e in entries], indent=1, ensure_ascii=False) + "\n"
        return atomic_write(Path(run) / INDEX_FILE, text)


def ordered(entries: Iterable[Entry]) -> list[Entry]:
    """Entries in report order (see the module docstring)."""
    entries = list(entries)
    position = {e.name: i for i, e in enumerate(entries)}

    def place(e: Entry) -> tuple[str, int]:
        return (e.notebook, position[e.name])

    first: dict[str, tuple[str, int]] = {}
    for e in sorted(entries, key=place):
        first.setdefault(e.section, place(e))

    def section_key(section: str) -> tuple:
        return (SECTIONS.index(section), ("", 0)) if section in SECTIONS else (len(SECTIONS), first[section])

    return sorted(entries, key=lambda e: (section_key(e.section), place(e)))


# --- emit ------------------------------------------------------------------------------------------


class Outputs:
    """Where one notebook's tables and figures go; `show=False` writes and registers without displaying."""

    def __init__(self, run: str | Path, notebook: str, show: bool = True):
        self.run = Path(run)
        self.notebook = notebook
        self.show = show
        self._told_stale = False

    def _stale_report(self) -> None:
        """Say once, after the first file this notebook writes, that an existing report.html no longer shows it."""
        if self.show and not self._told_stale and (self.run / "report.html").exists():
            self._told_stale = True
            display(Markdown(f"*{STALE_REPORT.format(run=markdown_text(self.run.name))}*"))

    def table(self, table: pd.DataFrame | Absent, name: str, caption: str, explanation: str, section: str,
              simulated: bool | None = None, control: bool = False) -> None:
        """Write `table` as CSV, Markdown and LaTeX (tables/<name>.*), show it in the paper's style, register it.

        `simulated` as in `write_table` (default: the table's attrs); `control` marks a simulated check
        by design (the planted-null table) whose SIMULATED caption must not make a real run simulated.
        An Absent table is not written: its reason is shown in one line.
        """
        entry = self._entry(name, explanation, section, control)
        if isinstance(table, Absent):
            self._absent(name, table)
            return
        paths = write_table(table, self.run / "tables", name, caption, simulated)
        register(self.run, entry)
        self._stale_report()
        if self.show:
            shown = paths["md"].read_text(encoding="utf-8").splitlines()[0]
            display(Markdown(f"**{shown}** {markdown_text(entry.explanation)}"))
            display(display_table(table))

    def figure(self, fig: Figure | Absent, name: str, explanation: str, section: str) -> None:
        """Write `fig` as PNG and PDF (figures/<name>.*), show it once, register it; the figure is closed.

        An Absent figure is not drawn: its reason is shown in one line.
        """
        entry = self._entry(name, explanation, section)
        if isinstance(fig, Absent):
            self._absent(name, fig)
            return
        save_figure(fig, self.run / "figures", name)
        register(self.run, entry)
        self._stale_report()
        if self.show:
            note = provenance_note(self.run / "figures", simulated=False)
            display(Markdown(markdown_text(f"{note} {entry.explanation}".strip())))
            display(fig)
        plt.close(fig)

    def register(self, name: str, explanation: str, section: str, control: bool = False) -> None:
        """Register an artifact (its files written by this notebook or by other code) for the run report."""
        register(self.run, self._entry(name, explanation, section, control))

    def _absent(self, name: str, absent: Absent) -> None:
        if self.show:
            show(absent, name)

    def _entry(self, name: str, explanation: str, section: str, control: bool = False) -> Entry:
        return check(Entry(name, section, explanation, self.notebook, control))


def show_markdown(text: str) -> None:
    """Show Markdown text in the notebook (printed as is outside one)."""
    display(Markdown(text))


def show(frame: pd.DataFrame | Absent, name: str = "") -> None:
    """Show a frame in the notebook, or in one line why it is not in this run."""
    if isinstance(frame, Absent):
        label = f"`{name}`: " if name else ""
        display(Markdown(f"*{label}not in this run: {markdown_text(frame.reason)}*"))
    else:
        display(frame)
