"""Completed sheets: the annotators' A/B/Tie labels, read with errors that name the file, row, item and field.

Every problem of every file is collected before anything is raised, so one round of corrections fixes them all.
Rows are numbered as a spreadsheet shows them: the header is row 1, the first item row 2.
"""

from __future__ import annotations

import codecs
import csv
import io
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from gama_utils import paths
from gama_utils.core.schema import require
from gama_utils.human.csv_cells import unescape_cell
from gama_utils.human.scale import LABELS, framing_keys

COMPLETED_SUFFIX = "_completed"
ANNOTATOR_NAME = re.compile(r"[\w.-]+")
ANSWER_COLUMNS = ("answer_a", "answer_b")
LABEL_HINT = f"(expected {', '.join(LABELS[:-1])} or {LABELS[-1]})"
NOT_UTF8 = re.compile("[\udc80-\udcff]")  # bytes that are not UTF-8, as decoded with surrogateescape


@dataclass(frozen=True)
class Problem:
    """One problem of a completed sheet and where it is: file, row (header = row 1), item and field."""

    file: str
    message: str
    row: int | None = None
    item: str | None = None
    field: str | None = None

    def __str__(self) -> str:
        where = [self.file, *(f"{name} {value}" for name, value in (("row", self.row), ("item", self.item),
                                                                    ("field", self.field)) if value is not None)]
        return f"{', '.join(part for part in where if part)}: {self.message}"


class AnnotationError(ValueError):
    """Completed sheets that cannot be used; `problems` lists every problem (file, row, item, field)."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = list(problems)
        super().__init__(f"{len(self.problems)} problem(s) in the completed sheets:\n"
                         + "\n".join(str(p) for p in self.problems))


@dataclass
class SheetFile:
    """A sheet's cells as text (formula prefixes stripped; index = spreadsheet row) and the problems found so far."""

    name: str
    cells: pd.DataFrame | None
    problems: list[Problem] = field(default_factory=list)
    undecodable: set[tuple[int, str]] = field(default_factory=set)  # (row, column) cells already reported


def load_sheet(file: str | Path) -> SheetFile:
    """Read a sheet's CSV file as text cells, noting missing or empty files, broken rows and non-UTF-8 bytes."""
    path = paths.resolve(file)
    if not path.is_file():
        return SheetFile(path.name, None, [Problem(path.name, f"file not found ({path})")])
    data = path.read_bytes().removeprefix(codecs.BOM_UTF8)
    if not data.strip():
        return SheetFile(path.name, None, [Problem(path.name, "empty file (no header, no rows)")])
    reader = csv.reader(io.StringIO(data.decode("utf-8", errors="surrogateescape"), newline=""))
    try:
        records = list(reader)
    except csv.Error as error:
        return SheetFile(path.name, None, [Problem(path.name, f"not a readable CSV file ({error})",
                                                   row=reader.line_num)])
    header = records[0]
    rows = {number: cells for number, cells in enumerate(records[1:], start=2)
            if any(cell.strip() for cell in cells)}  # blank lines and rows of empty cells are skipped
    sheet = SheetFile(path.name, None)
    duplicated = sorted({c for c in header if header.count(c) > 1})
    sheet.problems += [Problem(path.name, "column appears twice", field=c) for c in duplicated]
    sheet.problems += [Problem(path.name, f"{len(cells)} fields where the header has {len(header)}", row=number)
                       for number, cells in rows.items() if len(cells) != len(header)]
    if sheet.problems:
        return sheet
    cells = pd.DataFrame(list(rows.values()), columns=header, index=list(rows), dtype=object)
    items = cells["item_id"] if "item_id" in cells else pd.Series(None, index=cells.index)
    for column in header:
        if bad := NOT_UTF8.search(column):
            sheet.problems.append(_not_utf8(path.name, bad, 1, None, column))
        for row, value in cells[column].items():
            if bad := NOT_UTF8.search(value):
                sheet.problems.append(_not_utf8(path.name, bad, row, items[row], column))
                sheet.undecodable.add((row, column))
    sheet.cells = cells.map(unescape_cell)
    return sheet


def _not_utf8(file: str, bad: re.Match[str], row: int, item: str | None, column: str) -> Problem:
    byte = ord(bad.group()) - 0xDC00
    return Problem(file, f"not UTF-8 text (byte 0x{byte:02X}); save the sheet as 'CSV UTF-8'", row,
                   NOT_UTF8.sub("?", item) if item else None, NOT_UTF8.sub("?", column))


def read_sheet(file: str | Path) -> pd.DataFrame:
    """A sheet's cells as text, exactly as exported (formula prefixes stripped); AnnotationError if unreadable."""
    sheet = load_sheet(file)
    if sheet.problems or sheet.cells is None:
        raise AnnotationError(sheet.problems)
    return sheet.cells.reset_index(drop=True)


def normalise_label(value: object) -> str | None:
    """'a', ' B ', 'TIE' → 'A', 'B', 'Tie'; '' → ''; anything else → None."""
    text = "" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value).strip()
    if text == "":
        return ""
    return {label.lower(): label for label in LABELS}.get(text.lower())


def annotator_name(file: str | Path) -> str | None:
    """annotator_2_completed.csv → annotator_2; None when the file name does not say the annotator."""
    stem = Path(file).stem
    name = stem.removesuffix(COMPLETED_SUFFIX)
    return name if stem.endswith(COMPLETED_SUFFIX) and ANNOTATOR_NAME.fullmatch(name) else None


def _same_text(a: str, b: str) -> bool:
    """Equal up to whitespace (spreadsheets and browsers change line ends and trailing spaces)."""
    return a.split() == b.split()


def check_sheet(sheet: SheetFile, key: pd.DataFrame) -> list[dict[str, str]]:
    """The sheet's labels as rows (annotator left out); every problem is appended to `sheet.problems`."""
    if sheet.cells is None:
        return []
    cells, file = sheet.cells, sheet.name
    missing = [c for c in ("item_id", *framing_keys()) if c not in cells.columns]
    sheet.problems += [Problem(file, "missing column", field=c) for c in missing]
    if "item_id" in missing:
        return []
    if cells.empty:
        sheet.problems.append(Problem(file, "a header but no rows"))
        return []
    known = key.set_index("item_id")
    answers = [c for c in ANSWER_COLUMNS if c in cells.columns and c in known.columns]
    labels: list[dict[str, str]] = []
    rows_of: dict[str, list[int]] = {}
    foreign: list[Problem] = []
    row_problems: list[Problem] = []
    for row, values in cells.iterrows():
        item = str(values["item_id"]).strip()
        if (row, "item_id") in sheet.undecodable:
            continue
        if item == "":
            row_problems.append(Problem(file, "empty item_id", row, "(empty)", "item_id"))
            continue
        rows_of.setdefault(item, []).append(row)
        if item not in known.index:
            foreign.append(Problem(file, "unknown item_id (not in the key)", row, item, "item_id"))
        else:
            foreign += [Problem(file, "differs from the key's answer (edited, or a sheet for another key)",
                                row, item, c)
                        for c in answers if (row, c) not in sheet.undecodable
                        and not _same_text(values[c], str(known.loc[item, c]))]
        for k in framing_keys():
            if k in missing or (row, k) in sheet.undecodable:
                continue
            label = normalise_label(values[k])
            if label == "":
                row_problems.append(Problem(file, f"missing label {LABEL_HINT}", row, item, k))
            elif label is None:
                row_problems.append(Problem(file, f"invalid label {values[k]!r} {LABEL_HINT}", row, item, k))
            else:
                labels.append({"item_id": item, "framing": k, "label": label})
    row_problems += [Problem(file, f"item labelled twice (rows {', '.join(map(str, rows[:-1]))} and {rows[-1]})",
                             rows[-1], item, "item_id") for item, rows in rows_of.items() if len(rows) > 1]
    if len({p.row for p in foreign}) * 2 > len(cells):
        sheet.problems.append(_another_key(file, foreign, len(cells)))
    else:
        row_problems += foreign
        row_problems += [Problem(file, "missing (no row)", None, item, ", ".join(framing_keys()))
                         for item in sorted(set(known.index) - set(rows_of))]
    sheet.problems += sorted(row_problems, key=lambda p: (p.row is None, p.row or 0))
    return labels


def _another_key(file: str, foreign: list[Problem], n_rows: int) -> Problem:
    """One problem for a sheet most of whose rows are not the key's items (instead of one per row)."""
    by_row: dict[tuple[int | None, str | None], list[str]] = {}
    for p in foreign:
        named = by_row.setdefault((p.row, p.item), [])
        if p.field:
            named.append(p.field)
    examples = "; ".join(f"row {row}, item {item}: " + ("unknown item_id" if fields == ["item_id"]
                                                        else f"{' and '.join(fields)} differ from the key's")
                         for (row, item), fields in list(by_row.items())[:3])
    return Problem(file, f"{len(by_row)} of {n_rows} rows do not belong to this key (e.g. {examples}): "
                   "a sheet for another key?", field=", ".join(sorted({p.field for p in foreign if p.field})))


def read_completed_sheets(files: Iterable[str | Path], key: pd.DataFrame,
                          annotators: Sequence[str] | None = None) -> pd.DataFrame:
    """Read completed sheets into the long labels frame; raise AnnotationError listing every problem.

    Checks: each file is named <annotator>_completed.csv, exists, is UTF-8 CSV with item_id and the
    label columns; every label is A, B or Tie (any case and surrounding spaces); no unknown,
    duplicated or missing item_id, and the answers are the key's; one file per annotator; every
    expected annotator (if `annotators` is given) has a file, and no other annotator does.
    """
    require(key, ("item_id",), "key")
    problems: list[Problem] = []
    frames: list[pd.DataFrame] = []
    seen: dict[str, Path] = {}
    for file in files:
        path = paths.resolve(file)
        name = annotator_name(path)
        if name is None:
            problems.append(Problem(path.name, f"cannot tell the annotator from the file name: expected "
                                    f"<annotator>{COMPLETED_SUFFIX}.csv, <annotator> made of letters, digits, "
                                    "_, - and ."))
        elif name in seen:
            problems.append(Problem(path.name, f"second sheet for annotator {name} (first: {seen[name]})"))
        elif annotators is not None and name not in annotators:
            problems.append(Problem(path.name, f"annotator {name} is not one of {', '.join(annotators)}"))
        else:
            seen[name] = path
        sheet = load_sheet(path)
        rows = check_sheet(sheet, key)
        problems += sheet.problems
        simulated = sheet.cells is not None and "simulated" in sheet.cells and \
            sheet.cells["simulated"].str.strip().str.lower().isin(["true", "1"]).any()
        frame = pd.DataFrame(rows, columns=["item_id", "framing", "label"])
        frame.insert(0, "annotator", name)
        frames.append(frame.assign(simulated=bool(simulated), file=path.name))
    for name in annotators or ():
        if name not in seen:
            problems.append(Problem(f"{name}{COMPLETED_SUFFIX}.csv", f"missing sheet for annotator {name}"))
    if not frames and not problems:
        problems.append(Problem("", "no completed sheets given"))
    if problems:
        raise AnnotationError(problems)
    return pd.concat(frames, ignore_index=True)
