"""Emitting a notebook's tables and figures in one call: written in every format, shown, registered for the report.

The calls return nothing, so a cell that ends with one shows the table or figure once, not a repr.

    out = emit.Outputs(run, "06_analyze")
    out.table(tables.paper_layout(result, "intimate"), "table2_intimate", caption="Intimate track",
              explanation="Table 2: male, female and Δ = female − male per metric.", section=artifacts.MAIN)
    out.figure(plots.transitions(result, "intimate"), "fig7_transitions_intimate", explanation="...",
               section=artifacts.MAIN)

A table goes to tables/<name>.csv|.md|.tex (`table_files.write_table`, escaped for each format), a
figure to figures/<name>.png|.pdf (`plots.save_figure`); both are registered in the run's
artifacts.json (`gama_utils.artifacts`) with their section and explanation, which the run report
shows. `register` does the last step alone for files other code wrote (03's benchmark figures).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display
from matplotlib.figure import Figure

from gama_utils import artifacts
from gama_utils.escaping import markdown_text
from gama_utils.plots import save_figure
from gama_utils.table_files import format_table, provenance_note, write_table


class Outputs:
    """Where one notebook's tables and figures go; `show=False` writes and registers without displaying."""

    def __init__(self, run: str | Path, notebook: str, show: bool = True):
        self.run = Path(run)
        self.notebook = notebook
        self.show = show

    def table(self, table: pd.DataFrame, name: str, caption: str, explanation: str, section: str,
              simulated: bool | None = None, control: bool = False) -> None:
        """Write `table` as CSV, Markdown and LaTeX (tables/<name>.*), show it in the paper's style, register it.

        `simulated` as in `write_table` (default: the table's attrs); `control` marks a simulated check
        by design (the planted-null table) whose SIMULATED caption must not make a real run simulated.
        """
        entry = self._entry(name, explanation, section, control)
        paths = write_table(table, self.run / "tables", name, caption, simulated)
        artifacts.register(self.run, entry)
        if self.show:
            shown = paths["md"].read_text(encoding="utf-8").splitlines()[0]
            display(Markdown(f"**{shown}** {markdown_text(entry.explanation)}"))
            display(format_table(table))

    def figure(self, fig: Figure, name: str, explanation: str, section: str) -> None:
        """Write `fig` as PNG and PDF (figures/<name>.*), show it once, register it; the figure is closed."""
        entry = self._entry(name, explanation, section)
        save_figure(fig, self.run / "figures", name)
        artifacts.register(self.run, entry)
        if self.show:
            note = provenance_note(self.run / "figures", simulated=False)
            display(Markdown(markdown_text(f"{note} {entry.explanation}".strip())))
            display(fig)
        plt.close(fig)

    def register(self, name: str, explanation: str, section: str, control: bool = False) -> None:
        """Register an artifact (its files written by this notebook or by other code) for the run report."""
        artifacts.register(self.run, self._entry(name, explanation, section, control))

    def _entry(self, name: str, explanation: str, section: str, control: bool = False) -> artifacts.Entry:
        return artifacts.check(artifacts.Entry(name, section, explanation, self.notebook, control))


def show_markdown(text: str) -> None:
    """Show Markdown text in the notebook (printed as is outside one)."""
    display(Markdown(text))
