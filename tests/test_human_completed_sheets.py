"""Completed sheets (gama_utils.human.completed_sheets): labels read back, every problem named by file, row and field."""

from __future__ import annotations

import pandas as pd
import pytest
from human_data import completed_sheet, sample_key

from gama_utils import human

pytestmark = pytest.mark.usefixtures("paper_metrics_only")


@pytest.fixture(scope="module")
def key() -> pd.DataFrame:
    return sample_key()


def test_import_accepts_any_case_and_normalises(key, tmp_path) -> None:
    files = [completed_sheet(key, tmp_path / f"r{i}_completed.csv", {"item-001|ther": " tie "}) for i in (1, 2)]
    labels = human.read_completed_sheets(files, key, annotators=["r1", "r2"])
    assert set(labels["label"]) == {"A", "Tie"}
    assert set(labels["annotator"]) == {"r1", "r2"} and len(labels) == 2 * len(key) * 4
    assert not labels["simulated"].any()


def test_import_errors_name_file_item_and_field(key, tmp_path) -> None:
    bad = completed_sheet(key, tmp_path / "r1_completed.csv", {"item-003|instr": "C", "item-005|puni": ""})
    sheet = pd.read_csv(bad, dtype=str, keep_default_na=False)
    sheet = sheet[sheet["item_id"] != "item-007"]
    extra = sheet.iloc[[0]].assign(item_id="item-999")
    pd.concat([sheet, sheet.iloc[[1]], extra]).to_csv(bad, index=False)
    good = completed_sheet(key, tmp_path / "r2_completed.csv")
    with pytest.raises(human.AnnotationError) as error:
        human.read_completed_sheets([bad, good], key, annotators=["r1", "r2", "r3"])
    message = str(error.value)
    lines = message.splitlines()[1:]
    assert any("r1_completed.csv" in ln and "item-003" in ln and "field instr" in ln and "'C'" in ln for ln in lines)
    assert any("r1_completed.csv" in ln and "item-005" in ln and "field puni" in ln and "missing label" in ln
               for ln in lines)
    assert any("r1_completed.csv" in ln and "item-007" in ln and "missing (no row)" in ln and "full_bl" in ln
               for ln in lines)
    assert any("item-002" in ln and "duplicated item_id" in ln for ln in lines)
    assert any("item-999" in ln and "unknown item_id" in ln for ln in lines)
    assert any("missing sheet for annotator r3" in ln for ln in lines)
    assert not any("r2_completed.csv" in ln for ln in lines)
    assert message.startswith("6 problem(s)")


def test_import_names_a_missing_column(key, tmp_path) -> None:
    path = completed_sheet(key, tmp_path / "r1_completed.csv")
    pd.read_csv(path).drop(columns="ther").to_csv(path, index=False)
    with pytest.raises(human.AnnotationError, match=r"r1_completed.csv: missing column\(s\) ther"):
        human.read_completed_sheets([path], key)
