"""A table in the paper's number style, written as CSV, Markdown and LaTeX with every text cell escaped.

`format_table` renders the paper's style (two decimals for counts and the rating, rates in %,
signed Δ, p as "<.001") for a table made by `gama_utils.report.tables` (its attrs["kind"]); any other
column gets one precision per column kind (`plain_column`: p-values as p, whole numbers as integers,
yes/no, metric keys as their labels, other numbers with 2 decimals, 3 when every value lies in [-1, 1]),
and the Markdown and LaTeX files show a snake_case column name in words (`column_label`: "p_holm" →
"p Holm", "ci_low" → "CI low"); the CSV keeps the names and the numbers. `write_table` writes the
numbers as CSV and the formatted table as Markdown and LaTeX, escaped for each format
(`gama_utils.core.escaping`): text from models and users (model names, evaluator names, answers)
never runs as a spreadsheet formula, never becomes Markdown markup or raw HTML, and never breaks LaTeX.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np
import pandas as pd

from gama_utils.core.escaping import csv_frame, latex_text, markdown_cell, markdown_text
from gama_utils.core.metrics import by_label, metric, metric_keys
from gama_utils.core.run_folders import check_path, plumbing_check

DELTA = "Δ"
SIMULATED_NOTE = "SIMULATED data (synthetic answers from the sim backend; not a finding)."
PLUMBING_NOTE = ("PLUMBING CHECK (real answers from a tiny local model, meaningless as findings; "
                 "this run checks the pipeline on a real server).")


def key_of_label(label: object) -> str | None:
    """The key of the metric shown as `label` ("Puni." → "puni"), or None."""
    found = by_label(str(label))
    return found.key if found else None


# Words of a snake_case column name shown otherwise ("p_holm" → "p Holm"); a whole name in NAMES wins.
WORDS = {"ci": "CI", "se": "SE", "sd": "SD", "mdd": "MDD", "usd": "(USD)", "delta": DELTA, "holm": "Holm",
         "s": "(s)", "obs": "obs.", "r": "r", "p": "p", "n": "n", "p95": "p95", "abs": "|·|", "diff": "difference"}
NAMES = {"p_value": "p", "n_pairs": "Pairs", "n_models": "Models", "n_cells": "Cells", "n": "n",
         "sd_diff": "SD of differences", "mean_abs_diff": "Mean |ΔA − ΔB|", "pearson_r": "Pearson r"}
P_COLUMN = re.compile(r"p|p_value|p_holm.*|p_zsplit.*|p_.*|.*_p")
SIGNED = re.compile(r".*(delta|Δ|difference|estimate|slope|evaluator_part).*")


def column_label(name: object) -> object:
    """A snake_case column name in words for Markdown and LaTeX ('p_holm' → 'p Holm'); other names as they are."""
    if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)*", name):
        return name
    if name in NAMES:
        return NAMES[name]
    if name in metric_keys():
        return metric(name).label
    words = [WORDS.get(w, w) for w in name.split("_")]
    text = " ".join(words)
    return text if name.split("_")[0] in ("p", "n", "r") else text[0].upper() + text[1:]


def plain_column(values: pd.Series, name: object) -> list[str]:
    """One column of a table without a paper layout, one precision for the whole column (module docstring)."""
    flat = name[-1] if isinstance(name, tuple) else name
    flat = str(flat)
    present = values.dropna()
    if values.dtype == bool or (len(present) and present.map(lambda v: isinstance(v, (bool, np.bool_))).all()):
        return ["–" if _missing(v) else "yes" if v else "no" for v in values]
    numeric = pd.to_numeric(present, errors="coerce") if len(present) else present
    if not len(present) or numeric.isna().any() or present.map(lambda v: isinstance(v, str)).any():
        keys = set(metric_keys())
        return ["–" if _missing(v) else metric(v).label if flat == "metric" and v in keys
                else str(v).capitalize() if flat == "track" and v in ("intimate", "public") else str(v)
                for v in values]
    if P_COLUMN.fullmatch(flat.lower().replace(" ", "_")):
        return ["–" if _missing(v) else "<.001" if v < 0.001 else f"{v:.3f}".lstrip("0") for v in values]
    if np.all(np.isfinite(numeric)) and (numeric == numeric.round()).all():
        return ["–" if _missing(v) else f"{int(v)}" for v in values]
    finite = numeric[np.isfinite(numeric)]
    decimals = 3 if len(finite) and finite.abs().max() <= 1 else 2
    sign = "+" if SIGNED.fullmatch(flat.lower()) else ""
    return ["–" if _missing(v) else f"{v:{sign}.{decimals}f}" for v in values]


def _missing(value: object) -> bool:
    """None, NaN, pd.NA or NaT (a scalar pandas calls missing)."""
    return value is None or (pd.api.types.is_scalar(value) and not isinstance(value, str) and bool(pd.isna(value)))


def format_table(table: pd.DataFrame) -> pd.DataFrame:
    """Strings in the paper's style for a `gama_utils.report.tables` table (kind in attrs); others: `plain_column`."""
    kind = table.attrs.get("kind")
    formatted = table.copy().astype(object)
    for column in table.columns:
        key, part = _column_metric(column, kind)
        if key is None and part not in ("p", "Same sign"):
            formatted[column] = plain_column(table[column], column)
        else:
            formatted[column] = [_format_cell(v, kind, key, part) for v in table[column]]
    return formatted


def display_table(table: pd.DataFrame) -> pd.DataFrame:
    """`format_table` with column and index names in words (`column_label`) and a constant simulated column left
    out (the caption says it); what the Markdown and LaTeX files show."""
    shown = format_table(table)
    if "simulated" in shown.columns and table["simulated"].nunique(dropna=False) <= 1:
        shown = shown.drop(columns="simulated")
    if not isinstance(shown.columns, pd.MultiIndex):
        shown.columns = [column_label(c) for c in shown.columns]
    if isinstance(shown.index, pd.MultiIndex):
        shown.index = shown.index.set_names([column_label(n) for n in shown.index.names])
    elif shown.index.name is not None:
        shown.index = shown.index.rename(column_label(shown.index.name))
    return shown


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
    shown = display_table(table)
    paths["md"].write_text(f"{markdown_text(caption)}\n\n{markdown_table(shown)}{note_text}\n",
                           encoding="utf-8")
    latex = _latex_frame(shown).to_latex(
        index=False, escape=False, caption=latex_text(caption), label=f"tab:{name}", multicolumn=True,
        multicolumn_format="c", column_format="l" * _index_frame(table).shape[1] + "r" * shown.shape[1])
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
