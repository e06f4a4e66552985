"""Text from models and users made safe for each format it lands in: CSV, Markdown, LaTeX (HTML: html.escape, Jinja2).

- CSV: a text cell starting with = + - @ tab or CR would run as a formula in a spreadsheet (CSV
  injection), so it gets a leading apostrophe; numbers, and text that is a plain number ("-3.2",
  "+0.78", "-22.3%"), stay as they are.
- Markdown: backslash before the characters that make links, emphasis, code or raw HTML, and
  before pipes (a table cell ends at an unescaped pipe); line breaks become spaces. mistune
  (the report's Markdown → HTML step) and GitHub show the text as written.
- LaTeX: the ten specials and the typographic characters the tables use.
"""

from __future__ import annotations

import re

import pandas as pd

FORMULA_STARTS: tuple[str, ...] = ("=", "+", "-", "@", "\t", "\r")
TEXT_PREFIX = "'"
PLAIN_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?%?")
MARKDOWN_SPECIALS = frozenset("\\`*_[]<>|~&")
MARKDOWN_LINE_START = re.compile(r"#{1,6}(?=\s|$)|[+-](?=\s|$)|[=-]+\s*$|\d+(?=[.)](\s|$))")
LINE_BREAK = re.compile(r"\r\n|\r|\n")
LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
         "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
         "Δ": r"$\Delta$", "−": "-", "–": "--", "×": r"$\times$", "<": r"$<$", ">": r"$>$", "|": r"\textbar{}",
         "\r": " ", "\n": " "}


def csv_cell(value: object) -> object:
    """A formula-like text cell with a leading apostrophe; numbers and plain-number text unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not PLAIN_NUMBER.fullmatch(value):
        return TEXT_PREFIX + value
    return value


def csv_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """`csv_cell` on every cell and column name (numeric columns are left alone)."""
    safe = frame.copy()
    for column in safe.columns:
        if not pd.api.types.is_numeric_dtype(safe[column]):
            safe[column] = safe[column].map(csv_cell)
    safe.columns = [csv_cell(str(c)) for c in safe.columns]
    return safe


def markdown_cell(value: object) -> str:
    """Text for a Markdown table cell: specials and pipes backslash-escaped, line breaks as spaces.

    An underscore between two letters or digits (table2_intimate) cannot start emphasis and stays bare.
    """
    text = LINE_BREAK.sub(" ", str(value))
    out = []
    for i, ch in enumerate(text):
        inside_word = ch == "_" and 0 < i < len(text) - 1 and text[i - 1].isalnum() and text[i + 1].isalnum()
        out.append("\\" + ch if ch in MARKDOWN_SPECIALS and not inside_word else ch)
    return "".join(out)


def markdown_text(value: object) -> str:
    """Text for a Markdown line of its own: as a table cell, and a leading heading, list or rule marker escaped."""
    text = markdown_cell(value)
    start = MARKDOWN_LINE_START.match(text)
    if start is None:
        return text
    if start.group().isdigit():  # "1. x" is a list item: escape the dot after the number
        return text[:start.end()] + "\\" + text[start.end():]
    return "\\" + text


def latex_text(value: object) -> str:
    """Text for LaTeX: specials escaped, line breaks as spaces."""
    return "".join(LATEX.get(ch, ch) for ch in str(value))
