"""CSV cells that spreadsheet programs show as text: formula-like text gets a leading apostrophe, readers strip it.

A model's answer that starts with "=", "+", "-", "@", a tab or a carriage return would run as a
formula when an annotator opens the sheet in a spreadsheet program (CSV injection), so such a
cell is written with a leading apostrophe. Text that already starts with an apostrophe gets one
too, so stripping one apostrophe on reading gives back the original text, whatever it was.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd

FORMULA_STARTS: tuple[str, ...] = ("=", "+", "-", "@", "\t", "\r")
TEXT_PREFIX = "'"


def escape_cell(value: object) -> object:
    """Text that a spreadsheet would run as a formula (or that starts with an apostrophe) → apostrophe + text."""
    if isinstance(value, str) and value.startswith((*FORMULA_STARTS, TEXT_PREFIX)):
        return TEXT_PREFIX + value
    return value


def unescape_cell(value: object) -> object:
    """The inverse of `escape_cell`: one leading apostrophe is dropped."""
    if isinstance(value, str) and value.startswith(TEXT_PREFIX):
        return value[len(TEXT_PREFIX):]
    return value


def escape_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """`escape_cell` on every cell (numbers and missing values are left alone)."""
    return frame.map(escape_cell)


def unescape_frame(frame: pd.DataFrame, columns: tuple[str, ...] | list[str] | None = None) -> pd.DataFrame:
    """`unescape_cell` on every cell of `columns` (default: all)."""
    frame = frame.copy()
    for column in frame.columns if columns is None else [c for c in columns if c in frame.columns]:
        frame[column] = frame[column].map(unescape_cell)
    return frame


def write_csv(frame: pd.DataFrame, path: Path, encoding: str = "utf-8") -> Path:
    """Write `frame` as CSV with formula-safe cells, every text cell quoted.

    Quoting every text cell keeps a lone carriage return inside an answer from ending the row.
    """
    escape_frame(frame).to_csv(path, index=False, encoding=encoding, quoting=csv.QUOTE_NONNUMERIC)
    return path
