"""Annotation sheets (paper App. F): one blank sheet per annotator, as CSV and as the HTML form.

Sheets show only item_id and the two masked answers: no actor gender, model, scores or study hypothesis.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from gama_utils import paths
from gama_utils.core.schema import require
from gama_utils.human.annotation_form import sheet_html
from gama_utils.human.completed_sheets import ANNOTATOR_NAME, COMPLETED_SUFFIX
from gama_utils.human.csv_cells import write_csv
from gama_utils.human.scale import framing_keys

DEFAULT_ANNOTATORS: tuple[str, ...] = ("annotator_1", "annotator_2", "annotator_3")

SIMULATED_RESPONSES_NOTE = ("SIMULATED responses: these answers come from the offline simulated backend; "
                            "the sheet exercises the pipeline and its labels are not a finding.")


def annotation_sheet(key: pd.DataFrame) -> pd.DataFrame:
    """The blank sheet an annotator sees: item_id, the two masked answers, empty label columns."""
    require(key, ("item_id", "answer_a", "answer_b"), "key")
    sheet = key[["item_id", "answer_a", "answer_b"]].sort_values("item_id").reset_index(drop=True)
    for k in framing_keys():
        sheet[k] = ""
    return sheet


def export_sheets(key: pd.DataFrame, out_dir: str | Path,
                  annotators: Sequence[str] = DEFAULT_ANNOTATORS) -> dict[str, dict[str, Path]]:
    """Write <annotator>.csv and <annotator>.html for each annotator under out_dir; return their paths."""
    if len(set(annotators)) != len(annotators) or not annotators:
        raise ValueError(f"annotator names must be distinct and non-empty, got {list(annotators)}")
    unreadable = [name for name in annotators
                  if not ANNOTATOR_NAME.fullmatch(name) or name.endswith(COMPLETED_SUFFIX)]
    if unreadable:
        raise ValueError(f"annotator name(s) {unreadable} cannot name a sheet: use letters, digits, _, - and . "
                         f"(the completed sheet is <annotator>{COMPLETED_SUFFIX}.csv)")
    out_dir = paths.resolve(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    sheet = annotation_sheet(key)
    written = {}
    for name in annotators:
        csv_path, html_path = out_dir / f"{name}.csv", out_dir / f"{name}.html"
        write_csv(sheet, csv_path, encoding="utf-8-sig")
        note = SIMULATED_RESPONSES_NOTE if "simulated" in key and key["simulated"].any() else None
        html_path.write_text(sheet_html(sheet, name, note), encoding="utf-8")
        written[name] = {"csv": csv_path, "html": html_path}
    return written
