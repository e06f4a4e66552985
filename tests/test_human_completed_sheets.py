"""Completed sheets (gama_utils.human.completed_sheets): labels read back, problems named by file, row and field."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from human_data import completed_sheet, sample_key, synthetic_run

from gama_utils import human

pytestmark = pytest.mark.usefixtures("paper_metrics_only")


@pytest.fixture(scope="module")
def key() -> pd.DataFrame:
    return sample_key()


def problems_of(files: list[Path], key: pd.DataFrame, **kwargs) -> list:
    """The problems read_completed_sheets reports; the message lists each on its own line."""
    with pytest.raises(human.AnnotationError) as error:
        human.read_completed_sheets(files, key, **kwargs)
    problems = error.value.problems
    lines = str(error.value).splitlines()
    assert lines[0] == f"{len(problems)} problem(s) in the completed sheets:"
    assert lines[1:] == [str(p) for p in problems]
    return problems


def where(problem) -> tuple:
    return problem.file, problem.row, problem.item, problem.field


def sheet_rows(key: pd.DataFrame) -> dict[str, int]:
    """Row of each item in a sheet (the header is row 1; sheets are sorted by item_id)."""
    return {item: row for row, item in enumerate(sorted(key["item_id"]), start=2)}


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
    assert any("item-002" in ln and "labelled twice" in ln for ln in lines)
    assert any("item-999" in ln and "unknown item_id" in ln for ln in lines)
    assert any("missing sheet for annotator r3" in ln for ln in lines)
    assert not any("r2_completed.csv" in ln for ln in lines)
    assert message.startswith("6 problem(s)")


# ------------------------------------------------------------------ one test per class of bad input


def test_a_sheet_that_is_not_utf8_names_the_cells_with_foreign_bytes(key, tmp_path) -> None:
    path = completed_sheet(key, tmp_path / "r1_completed.csv", {"item-006|ther": "Tié"})
    sheet = pd.read_csv(path, dtype=str, keep_default_na=False)
    sheet.loc[sheet["item_id"] == "item-004", "answer_a"] = "Un café, s'il vous plaît"
    sheet.to_csv(path, index=False, encoding="cp1252")  # what a spreadsheet's plain "CSV" export writes
    rows = sheet_rows(key)
    problems = problems_of([path], key)
    assert [where(p) for p in problems] == [("r1_completed.csv", rows["item-004"], "item-004", "answer_a"),
                                            ("r1_completed.csv", rows["item-006"], "item-006", "ther")]
    assert all("not UTF-8" in p.message and "0xE9" in p.message and "CSV UTF-8" in p.message for p in problems)


def test_an_empty_file_and_a_header_without_rows(key, tmp_path) -> None:
    empty = tmp_path / "r1_completed.csv"
    empty.write_bytes(b"")
    header_only = tmp_path / "r2_completed.csv"
    header_only.write_text(",".join(human.sheet_columns()) + "\n", encoding="utf-8")
    blank = tmp_path / "r3_completed.csv"
    blank.write_bytes(b"\xef\xbb\xbf \r\n\r\n")
    problems = problems_of([empty, header_only, blank], key)
    assert [(p.file, p.row, p.item, p.field) for p in problems] == [
        ("r1_completed.csv", None, None, None), ("r2_completed.csv", None, None, None),
        ("r3_completed.csv", None, None, None)]
    assert [p.message for p in problems] == ["empty file (no header, no rows)", "a header but no rows",
                                             "empty file (no header, no rows)"]


def test_missing_columns_and_bad_labels_of_one_file_are_reported_together(key, tmp_path) -> None:
    path = completed_sheet(key, tmp_path / "r1_completed.csv", {"item-003|instr": "C"})
    pd.read_csv(path).drop(columns=["ther", "full_bl"]).to_csv(path, index=False)
    no_ids = completed_sheet(key, tmp_path / "r2_completed.csv")
    pd.read_csv(no_ids).drop(columns="item_id").to_csv(no_ids, index=False)
    problems = problems_of([path, no_ids], key)
    assert [where(p) for p in problems] == [
        ("r1_completed.csv", None, None, "ther"), ("r1_completed.csv", None, None, "full_bl"),
        ("r1_completed.csv", sheet_rows(key)["item-003"], "item-003", "instr"),
        ("r2_completed.csv", None, None, "item_id")]
    assert [p.message for p in problems][:2] == ["missing column", "missing column"]
    assert str(problems[0]) == "r1_completed.csv, field ther: missing column"


def test_an_unknown_item_names_its_row(key, tmp_path) -> None:
    path = completed_sheet(key, tmp_path / "r1_completed.csv")
    sheet = pd.read_csv(path, dtype=str, keep_default_na=False)
    pd.concat([sheet, sheet.iloc[[0]].assign(item_id="item-999")]).to_csv(path, index=False)
    [problem] = problems_of([path], key)
    assert where(problem) == ("r1_completed.csv", len(key) + 2, "item-999", "item_id")
    assert str(problem) == f"r1_completed.csv, row {len(key) + 2}, item item-999, field item_id: " \
                           "unknown item_id (not in the key)"


def test_labels_are_normalised_for_case_and_spaces_then_checked(key, tmp_path) -> None:
    accepted = {"item-001|puni": " tIe ", "item-002|ther": "b", "item-003|instr": "\u00a0A\t",
                "item-004|full_bl": "TIE"}
    rejected = {"item-005|puni": "A/B", "item-006|ther": "Ties", "item-007|instr": "0", "item-008|full_bl": "T ie",
                "item-009|puni": " "}
    path = completed_sheet(key, tmp_path / "r1_completed.csv", {**accepted, **rejected})
    rows = sheet_rows(key)
    problems = problems_of([path], key)
    expected = [("r1_completed.csv", rows[cell.split("|")[0]], *cell.split("|")) for cell in rejected]
    assert [where(p) for p in problems] == expected
    assert [p.message for p in problems] == [
        "invalid label 'A/B' (expected A, B or Tie)", "invalid label 'Ties' (expected A, B or Tie)",
        "invalid label '0' (expected A, B or Tie)", "invalid label 'T ie' (expected A, B or Tie)",
        "missing label (expected A, B or Tie)"]
    assert human.normalise_label(" tIe ") == "Tie" and human.normalise_label("\u00a0A\t") == "A"


def test_an_item_labelled_twice_names_both_rows(key, tmp_path) -> None:
    path = completed_sheet(key, tmp_path / "r1_completed.csv")
    sheet = pd.read_csv(path, dtype=str, keep_default_na=False)
    twice = sheet[sheet["item_id"] == "item-002"].assign(puni="B")
    pd.concat([sheet, twice]).to_csv(path, index=False)
    [problem] = problems_of([path], key)
    assert where(problem) == ("r1_completed.csv", len(key) + 2, "item-002", "item_id")
    assert problem.message == f"item labelled twice (rows {sheet_rows(key)['item-002']} and {len(key) + 2})"


def test_file_names_that_do_not_say_the_annotator(key, tmp_path) -> None:
    names = ["annotator_1_completed (1).csv", "_completed.csv", "notes.csv", "r 1_completed.csv"]
    files = [completed_sheet(key, tmp_path / name) for name in names]
    files.append(completed_sheet(key, tmp_path / "r9_completed.csv"))
    problems = problems_of(files, key, annotators=["r1", "r9"])
    assert [(p.file, p.row, p.item, p.field) for p in problems[:4]] == [(name, None, None, None) for name in names]
    assert all("cannot tell the annotator from the file name" in p.message and "<annotator>_completed.csv" in p.message
               for p in problems[:4])
    assert [str(p) for p in problems[4:]] == ["r1_completed.csv: missing sheet for annotator r1"]
    assert human.annotator_name(tmp_path / "r9_completed.csv") == "r9"
    assert human.annotator_name(tmp_path / "notes.csv") is None
    unexpected = completed_sheet(key, tmp_path / "r2_completed.csv")
    assert [str(p) for p in problems_of([files[-1], unexpected], key, annotators=["r9"])] == [
        "r2_completed.csv: annotator r2 is not one of r9"]


def test_export_refuses_annotator_names_that_make_unreadable_file_names(key, tmp_path) -> None:
    for name in ("Dr Smith", "../r1", "r1_completed", ""):
        with pytest.raises(ValueError, match="annotator name"):
            human.export_sheets(key, tmp_path, annotators=[name])
    assert not list(tmp_path.iterdir())


def test_a_sheet_for_another_key(key, tmp_path) -> None:
    other_key = human.validation_key(*synthetic_run(), n=16, seed=8)  # same item ids, other pairs
    assert list(other_key["item_id"]) == list(key["item_id"])
    path = completed_sheet(other_key, tmp_path / "r1_completed.csv")
    [problem] = problems_of([path], key)
    assert (problem.file, problem.field) == ("r1_completed.csv", "answer_a, answer_b")
    ours, theirs = key.set_index("item_id"), other_key.set_index("item_id")
    foreign = [item for item in sorted(key["item_id"])
               if (ours.loc[item, ["answer_a", "answer_b"]] != theirs.loc[item, ["answer_a", "answer_b"]]).any()]
    assert len(foreign) > len(key) / 2
    assert problem.message.startswith(f"{len(foreign)} of {len(key)} rows do not belong to this key (e.g. row "
                                      f"{sheet_rows(key)[foreign[0]]}, item {foreign[0]}")
    assert "a sheet for another key?" in problem.message

    edited = completed_sheet(key, tmp_path / "r2_completed.csv")
    sheet = pd.read_csv(edited, dtype=str, keep_default_na=False)
    sheet.loc[sheet["item_id"] == "item-004", "answer_b"] = "An answer the annotator rewrote."
    sheet.loc[sheet["item_id"] == "item-005", "answer_a"] = "  " + sheet.loc[sheet["item_id"] == "item-005",
                                                                              "answer_a"].str.replace("\n", "\r\n  ")
    sheet.to_csv(edited, index=False)
    [problem] = problems_of([edited], key)  # whitespace and line ends do not count as edits
    assert where(problem) == ("r2_completed.csv", sheet_rows(key)["item-004"], "item-004", "answer_b")
    assert problem.message == "differs from the key's answer (edited, or a sheet for another key)"

    ids = completed_sheet(key, tmp_path / "r3_completed.csv")
    sheet = pd.read_csv(ids, dtype=str, keep_default_na=False)
    sheet.assign(item_id=sheet["item_id"].str.replace("item-0", "item-9")).to_csv(ids, index=False)
    [problem] = problems_of([ids], key)
    assert (problem.file, problem.field) == ("r3_completed.csv", "item_id")
    assert problem.message.startswith(f"{len(key)} of {len(key)} rows do not belong to this key (e.g. row 2, "
                                      "item item-901: unknown item_id")


def test_a_broken_csv_names_the_row(key, tmp_path) -> None:
    path = completed_sheet(key, tmp_path / "r1_completed.csv")
    text = path.read_text(encoding="utf-8").splitlines()
    text.insert(1, "item-002,x,y,A,B,Tie,A,extra")
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    problems = problems_of([path], key)
    assert where(problems[0]) == ("r1_completed.csv", 2, None, None)
    assert problems[0].message == f"8 fields where the header has {len(human.sheet_columns())}"


def test_blank_rows_a_spreadsheet_leaves_at_the_end_are_skipped(key, tmp_path) -> None:
    path = completed_sheet(key, tmp_path / "r1_completed.csv")
    path.write_text(path.read_text(encoding="utf-8") + "\n" + "," * (len(human.sheet_columns()) - 1) + "\n",
                    encoding="utf-8")
    assert len(human.read_completed_sheets([path], key)) == len(key) * len(human.framing_keys())


def test_two_sheets_of_one_annotator(key, tmp_path) -> None:
    (tmp_path / "copy").mkdir()
    files = [completed_sheet(key, tmp_path / "r1_completed.csv"),
             completed_sheet(key, tmp_path / "copy" / "r1_completed.csv")]
    assert [str(p) for p in problems_of(files, key)] == [
        f"r1_completed.csv: second sheet for annotator r1 (first: {files[0]})"]
