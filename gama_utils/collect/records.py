"""Reading records from files people bring (CSV or JSONL), with errors that name the file, the row and the field.

Rows are numbered from 1 as a reader sees them: the first data row of a CSV (after its header) and the
first line of a JSONL file are row 1.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

FORMATS = (".csv", ".jsonl", ".json")


class RecordError(ValueError):
    """A file of records cannot be read; the message names the file and, where there is one, the row."""


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a CSV (all values as text) or JSONL file (one JSON object per line) as dicts."""
    file = Path(path)
    if not file.exists():
        raise FileNotFoundError(f"{file} does not exist")
    if file.suffix.lower() not in FORMATS:
        raise RecordError(f"{file.name}: unknown format {file.suffix!r}; expected a .csv or .jsonl file")
    raw = file.read_bytes()
    text = _decode(raw, file.name)
    if not text.strip():
        raise RecordError(f"{file.name}: the file is empty")
    rows = _csv_rows(text, file.name) if file.suffix.lower() == ".csv" else _jsonl_rows(text, file.name)
    if not rows:
        raise RecordError(f"{file.name}: no rows (only a header)")
    _refuse_nul(rows, file.name)
    return rows


def _refuse_nul(rows: list[dict[str, Any]], name: str) -> None:
    """RecordError naming row and field of the first text holding a NUL byte (no text answer holds one: a binary
    file, or a sign of a broken export)."""
    for number, row in enumerate(rows, start=1):
        for field, value in row.items():
            for part, text in (("name", field), ("value", value)):
                if isinstance(text, str) and "\x00" in text:
                    raise RecordError(f"{name} row {number}: field {field!r} holds a NUL byte (\\x00) in its {part} "
                                      f"at character {text.index(chr(0)) + 1}; remove it (a text never holds one)")


def _decode(raw: bytes, name: str) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw[:err.start].count(b"\n") + 1
        raise RecordError(f"{name}: not UTF-8 text (byte {raw[err.start]:#04x} on line {line}, row {line - 1} of a "
                          "CSV); save the file as UTF-8") from None


def _csv_rows(text: str, name: str) -> list[dict[str, Any]]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = reader.fieldnames or []
    twice = sorted({c for c in header if header.count(c) > 1})
    if twice:
        where = ", ".join(f"{c!r} (columns {', '.join(str(i + 1) for i, h in enumerate(header) if h == c)})"
                          for c in twice)
        raise RecordError(f"{name}: the header names a column more than once: {where}; only one can be read, so "
                          "rename or drop the others")
    rows = []
    for number, row in enumerate(reader, start=1):
        if None in row:
            raise RecordError(f"{name} row {number}: more values than the header has columns")
        rows.append(row)
    return rows


def _jsonl_rows(text: str, name: str) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line, object_pairs_hook=_unique_keys)
        except json.JSONDecodeError as err:
            raise RecordError(f"{name} line {number}: not valid JSON ({err.msg} at column {err.colno})") from None
        except _DuplicateKey as err:
            raise RecordError(f"{name} line {number}: field {err.args[0]!r} appears more than once in the object; "
                              "only one can be read, so rename or drop the others") from None
        if not isinstance(record, dict):
            raise RecordError(f"{name} line {number}: expected a JSON object, got {type(record).__name__}")
        rows.append(record)
    return rows


class _DuplicateKey(ValueError):
    """A JSON object names a key twice."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    twice = next((k for k in keys if keys.count(k) > 1), None)
    if twice is not None:
        raise _DuplicateKey(twice)
    return dict(pairs)


def is_missing(value: Any) -> bool:
    """None, NaN or text that is only white space."""
    return value is None or (isinstance(value, float) and math.isnan(value)) or \
        (isinstance(value, str) and not value.strip())


def whole_number(value: Any) -> int | None:
    """A whole number from an int, a float without fraction or such text ("1", "1.0"); None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return int(number) if math.isfinite(number) and number.is_integer() else None
