"""A table in the paper's number style, written as CSV, Markdown and LaTeX with every text cell escaped.

`format_table` renders the paper's style (two decimals for counts and the rating, rates in %,
signed Δ, p as "<.001") for a table made by `gama_utils.report.tables` (its attrs["kind"]); any other
frame gets three significant digits. `write_table` writes the numbers as CSV and the formatted
table as Markdown and LaTeX, escaped for each format (`gama_utils.core.escaping`): text from models
and users (model names, evaluator names, answers) never runs as a spreadsheet formula, never
becomes Markdown markup or raw HTML, and never breaks LaTeX.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd

from gama_utils.core.escaping import csv_frame, latex_text, markdown_cell, markdown_text
from gama_utils.core.metrics import by_label, metric
from gama_utils.core.run_folders import check_path, plumbing_check

DELTA = "Δ"
SIMULATED_NOTE = "SIMULATED data (synthetic answers from the sim backend; not a finding)."
PLUMBING_NOTE = ("PLUMBING CHECK (real answers from a tiny local model, meaningless as findings; "
                 "this run checks the pipeline on a real server).")


def key_of_label(label: object) -> str | None:
    """The key of the metric shown as `label` ("Puni." → "puni"), or None."""
    found = by_label(str(label))
    return found.key if found else None


def format_table(table: pd.DataFrame) -> pd.DataFrame:
    """Strings in the paper's style for a `gama_utils.report.tables` table (kind in attrs); others: 3 digits."""
    kind = table.attrs.get("kind")
    formatted = table.copy().astype(object)
    for column in table.columns:
        key, part = _column_metric(column, kind)
        formatted[column] = [_format_cell(v, kind, key, part) for v in table[column]]
    return formatted


def write_table(table: pd.DataFrame, directory: str | Path, name: str, caption: str,
                simulated: bool | None = None) -> dict[str, Path]:
    """Write name.csv (numbers), name.md and name.tex (paper style) with the caption; returns the paths.

    The caption starts with "SIMULATED" when `simulated` (default: the table's attrs, else whether any row
    of its own `simulated` column is true) is true, and
    with "PLUMBING CHECK" when the run the folder belongs to used a plumbing-check model. The CSV
    carries a `simulated` column (True/False; a table's own per-row column is kept). attrs["notes"]
    (a string or a list of them) follow the table in the Markdown and LaTeX files.
    """
    directory = Path(directory)
    paths = {suffix: check_path(directory / f"{name}.{suffix}") for suffix in ("csv", "md", "tex")}
    directory.mkdir(parents=True, exist_ok=True)
    if simulated is None:
        own = "simulated" in table.columns and bool(table["simulated"].astype(bool).any())
        simulated = table.attrs.get("simulated", own)
    caption = f"{provenance_note(directory, simulated)} {caption}".lstrip()
    notes = table.attrs.get("notes") or []
    notes = [notes] if isinstance(notes, str) else list(notes)
    flat = _flatten(table)
    if "simulated" not in flat.columns:
        flat["simulated"] = bool(simulated)
    csv_frame(flat).to_csv(paths["csv"], index=False, quoting=csv.QUOTE_NONNUMERIC)
    note_text = f"\n\n{markdown_text('Notes. ' + ' '.join(notes))}" if notes else ""
    paths["md"].write_text(f"{markdown_text(caption)}\n\n{markdown_table(format_table(table))}{note_text}\n",
                           encoding="utf-8")
    latex = _latex_frame(format_table(table)).to_latex(
        index=False, escape=False, caption=latex_text(caption), label=f"tab:{name}", multicolumn=True,
        multicolumn_format="c", column_format="l" * _index_frame(table).shape[1] + "r" * table.shape[1])
    if notes:
        latex = latex.replace("\\end{table}", f"\\par\\smallskip\\footnotesize Notes. "
                                              f"{latex_text(' '.join(notes))}\n\\end{{table}}")
    paths["tex"].write_text(latex, encoding="utf-8")
    return paths


def markdown_table(table: pd.DataFrame) -> str:
    """A frame as a Markdown table: index levels as leading columns (repeats blanked), every cell and header escaped."""
    flat = _flatten(table, blank_repeats=True)
    shown = flat.map(lambda v: "" if v is None or (isinstance(v, float) and np.isnan(v)) else markdown_cell(v))
    shown.columns = [markdown_cell(c) for c in flat.columns]
    return shown.to_markdown(index=False, disable_numparse=True)


def provenance_note(directory: str | Path, simulated: bool) -> str:
    """What a table or figure written into `directory` (a run's tables/ or figures/) must say it is, or ""."""
    if simulated:
        return SIMULATED_NOTE
    return PLUMBING_NOTE if plumbing_check(Path(directory).parent) else ""


def _column_metric(column: object, kind: str | None) -> tuple[str | None, str]:
    """(metric key, part) of a column: part is the sub-column label (Male, Δ, Run Δ, ...) or ''."""
    label, part = (column[0], column[1]) if isinstance(column, tuple) else (column, "")
    if kind is None:
        return None, part
    if kind == "pvalues":
        return key_of_label(part), "p"
    if kind == "tests":
        return None, "p" if str(label).split(" ")[0] == "p" else ""
    if kind == "stratified":
        return key_of_label(label), DELTA
    return key_of_label(label), part


def _format_cell(value: object, kind: str | None, key: str | None, part: str) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "–"
    if part == "p":
        return "<.001" if value < 0.001 else f"{value:.3f}".lstrip("0")  # type: ignore[operator]
    if part == "Same sign":
        return "yes" if value else "no"
    if key is None:
        return f"{value:.3g}" if isinstance(value, (float, np.floating)) else str(value)
    signed = DELTA in part
    if metric(key).is_rate:
        return f"{value:+.1f}%" if signed else f"{value:.1f}%"
    return f"{value:+.2f}" if signed else f"{value:.2f}"


def _flatten(table: pd.DataFrame, blank_repeats: bool = False) -> pd.DataFrame:
    """Index levels as leading columns and 'Metric Part' column names; repeated index labels blanked if asked."""
    flat = table.copy()
    flat.columns = [" ".join(str(p) for p in c if str(p)) if isinstance(c, tuple) else str(c) for c in flat.columns]
    index = _index_frame(flat)
    index = _blank_repeats(index) if blank_repeats else index
    return pd.concat([index, flat.reset_index(drop=True)], axis=1)


def _index_frame(table: pd.DataFrame) -> pd.DataFrame:
    """The index levels as columns; none for a plain row number (an unnamed RangeIndex)."""
    if isinstance(table.index, pd.RangeIndex) and table.index.name is None:
        return pd.DataFrame(index=range(len(table)))
    return table.index.to_frame(index=False)


def _blank_repeats(index: pd.DataFrame) -> pd.DataFrame:
    """Blank an outer index label where it and every label before it repeat the row above (grouped rows)."""
    levels = list(index.columns)
    shown = index.astype(object)
    for position, level in enumerate(levels[:-1]):
        prefix = levels[:position + 1]
        repeated = (index[prefix] == index[prefix].shift()).all(axis=1)
        shown[level] = shown[level].where(~repeated, "")
    return shown


def _latex_frame(formatted: pd.DataFrame) -> pd.DataFrame:
    flat = formatted.map(latex_text)
    index = _blank_repeats(_index_frame(formatted).map(latex_text))
    if isinstance(formatted.columns, pd.MultiIndex):
        flat.columns = pd.MultiIndex.from_tuples([tuple(latex_text(str(p)) for p in c) for c in formatted.columns])
        index.columns = pd.MultiIndex.from_tuples([(latex_text(str(c)),) + ("",) * (formatted.columns.nlevels - 1)
                                                   for c in index.columns])
    else:
        flat.columns = [latex_text(str(c)) for c in formatted.columns]
        index.columns = [latex_text(str(c)) for c in index.columns]
    return pd.concat([index, flat.reset_index(drop=True)], axis=1)
