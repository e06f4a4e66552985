"""Completed sheets: the annotators' A/B/Tie labels, read with errors that name the file, row, item and field."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from gama_utils import paths
from gama_utils.human.scale import LABELS, framing_keys
from gama_utils.schema import require

COMPLETED_SUFFIX = "_completed"


class AnnotationError(ValueError):
    """Completed sheets that cannot be used; the message lists every problem (file, item, field)."""


def normalise_label(value: object) -> str | None:
    """'a', ' B ', 'TIE' → 'A', 'B', 'Tie'; '' → ''; anything else → None."""
    text = "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value).strip()
    if text == "":
        return ""
    return {label.lower(): label for label in LABELS}.get(text.lower())


def annotator_name(file: str | Path) -> str:
    """annotator_2_completed.csv → annotator_2."""
    stem = Path(file).stem
    return stem[: -len(COMPLETED_SUFFIX)] if stem.endswith(COMPLETED_SUFFIX) else stem


def read_completed_sheets(files: Iterable[str | Path], key: pd.DataFrame,
                          annotators: Sequence[str] | None = None) -> pd.DataFrame:
    """Read completed sheets into the long labels frame; raise AnnotationError listing every problem.

    Checks: file exists and has item_id and the four label columns; every label is A, B or Tie
    (any case); no unknown, duplicated or missing item_id against the key; one file per
    annotator; every expected annotator (if `annotators` is given) has a file.
    """
    require(key, ("item_id",), "key")
    expected_items = set(key["item_id"])
    errors: list[str] = []
    frames: list[pd.DataFrame] = []
    seen: dict[str, str] = {}
    for file in files:
        file = paths.resolve(file)
        name = annotator_name(file)
        if name in seen:
            errors.append(f"{file.name}: second sheet for annotator {name} (first: {seen[name]})")
            continue
        seen[name] = file.name
        if not file.exists():
            errors.append(f"{file.name}: file not found ({file})")
            continue
        sheet = pd.read_csv(file, dtype=str, keep_default_na=False, encoding="utf-8-sig")
        missing_columns = [c for c in ("item_id", *framing_keys()) if c not in sheet.columns]
        if missing_columns:
            errors.append(f"{file.name}: missing column(s) {', '.join(missing_columns)}")
            continue
        simulated = "simulated" in sheet and sheet["simulated"].str.lower().isin(["true", "1"]).any()
        rows = []
        for number, row in enumerate(sheet.itertuples(index=False), start=2):  # line 1 is the header
            item = row.item_id.strip()
            where = f"{file.name}, line {number}, item {item or '(empty)'}"
            if item == "":
                errors.append(f"{where}, field item_id: empty item_id")
                continue
            if item not in expected_items:
                errors.append(f"{where}, field item_id: unknown item_id (not in the key)")
                continue
            for k in framing_keys():
                raw = getattr(row, k)
                label = normalise_label(raw)
                if label == "":
                    errors.append(f"{where}, field {k}: missing label (expected A, B or Tie)")
                elif label is None:
                    errors.append(f"{where}, field {k}: invalid label {raw!r} (expected A, B or Tie)")
                else:
                    rows.append({"annotator": name, "item_id": item, "framing": k, "label": label})
        ids = sheet["item_id"].str.strip()
        for item in sorted(set(ids[ids.duplicated() & (ids != "")])):
            errors.append(f"{file.name}, item {item}, field item_id: duplicated item_id")
        for item in sorted(set(expected_items) - set(ids)):
            errors.append(f"{file.name}, item {item}, fields {', '.join(framing_keys())}: missing (no row)")
        frame = pd.DataFrame(rows, columns=["annotator", "item_id", "framing", "label"])
        frame["simulated"] = bool(simulated)
        frame["file"] = file.name
        frames.append(frame)
    for name in annotators or ():
        if name not in seen:
            errors.append(f"missing sheet for annotator {name} (expected {name}{COMPLETED_SUFFIX}.csv)")
    if not seen and not errors:
        errors.append("no completed sheets given")
    if errors:
        raise AnnotationError(f"{len(errors)} problem(s) in the completed sheets:\n" + "\n".join(errors))
    return pd.concat(frames, ignore_index=True)
