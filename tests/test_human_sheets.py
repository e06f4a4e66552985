"""Annotation sheets and the HTML form (gama_utils.human.annotation_sheets, annotation_form)."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import form_in_node
import numpy as np
import pandas as pd
import pytest
from human_data import MODELS, completed_sheet, hostile_key, sample_key, synthetic_run

from gama_utils import human
from gama_utils.human import annotation_form
from gama_utils.human.csv_cells import FORMULA_STARTS, escape_cell, unescape_cell

pytestmark = pytest.mark.usefixtures("paper_metrics_only")


@pytest.fixture(scope="module")
def run() -> tuple[pd.DataFrame, pd.DataFrame]:
    return synthetic_run()


@pytest.fixture(scope="module")
def key() -> pd.DataFrame:
    return sample_key()


@pytest.fixture(scope="module")
def hostile() -> pd.DataFrame:
    return hostile_key()


GENDER_WORDS = re.compile(r"\b(?:he|she|him|her|his|hers|man|woman|men|women|boyfriend|girlfriend|"
                          r"husband|wife|male|female|gender|mr|mrs|ms)\b", re.IGNORECASE)


def test_export_hides_model_gender_and_scores(run, key, tmp_path) -> None:
    responses, evaluations = run
    written = human.export_sheets(key, tmp_path)
    assert set(written) == set(human.DEFAULT_ANNOTATORS)
    forbidden = [*MODELS, "Gemini", "intimate", "public", "pair-", "punitive_count", "score", "female_is",
                 *(str(v) for v in evaluations["punitive_count"]), *(str(v) for v in evaluations["therapeutic_count"])]
    for files in written.values():
        for path in files.values():
            text = path.read_text(encoding="utf-8-sig")
            assert GENDER_WORDS.findall(text) == [], path.name
            assert [w for w in forbidden if w in text] == [], path.name
    sheet = pd.read_csv(written["annotator_1"]["csv"], dtype=str, keep_default_na=False, encoding="utf-8-sig")
    assert list(sheet.columns) == list(human.sheet_columns())
    assert (sheet[list(human.framing_keys())] == "").all().all()


def test_html_form_is_self_contained_and_escaped(key, tmp_path) -> None:
    text = human.export_sheets(key, tmp_path, annotators=["rater_x"])["rater_x"]["html"].read_text("utf-8")
    assert not re.search(r"https?://|<link|src=|@import|url\(", text)
    assert "new Blob(" in text and "rater_x_completed.csv" not in text  # file name built in JS from SHEET
    assert 'const SHEET = "rater_x"' in text
    assert text.count('type="radio"') == len(key) * 4 * 3
    assert "&lt;b&gt;bold&lt;/b&gt;" in text and "<b>bold</b>" not in text
    for framing in human.framings():
        assert framing.criterion in text
    assert "items complete" in text


def test_sheets_and_table_say_when_responses_were_simulated(key, tmp_path) -> None:
    simulated_key = key.assign(simulated=True)
    html_text = human.export_sheets(simulated_key, tmp_path, ["r1"])["r1"]["html"].read_text("utf-8")
    assert "SIMULATED responses" in html_text
    assert "SIMULATED" not in human.export_sheets(key, tmp_path / "real", ["r1"])["r1"]["html"].read_text("utf-8")
    files = [completed_sheet(key, tmp_path / f"r{i}_completed.csv") for i in (1, 2)]
    summary = human.validation_summary(human.read_completed_sheets(files, simulated_key), simulated_key)
    caption = human.table4(summary).attrs["caption"]
    assert "simulated backend" in caption and "SIMULATED annotators" not in caption


def test_html_form_downloads_a_csv_the_importer_reads(key, tmp_path) -> None:
    if form_in_node.node() is None:
        pytest.skip("node is not installed")
    sheet = human.annotation_sheet(key)
    rng = np.random.default_rng(0)
    for k in human.framing_keys():
        sheet[k] = rng.choice(human.LABELS, size=len(sheet))
    out = form_in_node.download(human.sheet_html(sheet, "rater_y"), tmp_path)
    assert out["fileName"] == "rater_y_completed.csv"
    assert out["progress"] == f"{len(key)} / {len(key)} items complete"
    completed = tmp_path / out["fileName"]
    completed.write_bytes(out["text"].encode("utf-8"))
    back = pd.read_csv(completed, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    assert list(back.columns) == list(human.sheet_columns())
    pd.testing.assert_frame_equal(back, sheet.astype(str), check_dtype=False)
    labels = human.read_completed_sheets([completed], key)
    expected = sheet.melt(id_vars="item_id", value_vars=list(human.framing_keys()), var_name="framing",
                          value_name="label")
    merged = labels.merge(expected, on=["item_id", "framing"], suffixes=("", "_sheet"))
    assert len(merged) == len(key) * 4 and (merged["label"] == merged["label_sheet"]).all()


# ------------------------------------------------------------------ hostile answers


def raw_cells(path: Path) -> list[list[str]]:
    """A CSV file's cells as a spreadsheet program reads them (nothing stripped)."""
    with open(path, encoding="utf-8-sig", newline="") as handle:
        return list(csv.reader(handle))


def formula_cells(cells: list[list[str]]) -> list[str]:
    return [cell for row in cells for cell in row if cell.startswith(FORMULA_STARTS)]


def answers(sheet: pd.DataFrame, as_html_text: bool = False) -> dict[str, tuple[str, str]]:
    """item_id → (answer A, answer B); with as_html_text, line ends as HTML parsing leaves them (CR → LF)."""
    text = (lambda s: s.replace("\r\n", "\n").replace("\r", "\n")) if as_html_text else str
    return {row.item_id: (text(row.answer_a), text(row.answer_b)) for row in sheet.itertuples()}


def test_csv_cells_a_spreadsheet_would_run_get_an_apostrophe_that_reading_removes() -> None:
    written = {'=HYPERLINK("http://x","y")': '\'=HYPERLINK("http://x","y")', "+1": "'+1", "-2": "'-2",
               "@SUM(A1)": "'@SUM(A1)", "\tx": "'\tx", "\rx": "'\rx", "'x": "''x", "''": "'''",
               "a = b": "a = b", "": "", "Tie": "Tie"}
    assert {text: escape_cell(text) for text in written} == written
    assert {cell: unescape_cell(cell) for cell in written.values()} == {cell: text for text, cell in written.items()}
    assert escape_cell(-1.5) == -1.5 and escape_cell(None) is None


def test_hostile_answers_in_the_csv_sheet_cannot_run_and_read_back_unchanged(hostile, tmp_path) -> None:
    path = human.export_sheets(hostile, tmp_path, ["r1"])["r1"]["csv"]
    cells = raw_cells(path)
    assert formula_cells(cells) == []
    by_item = {row[0]: row for row in cells[1:]}
    assert by_item["item-001"][1] == '\'=HYPERLINK("http://x","y")'
    assert by_item["item-010"][1] == "''starts with an apostrophe"
    assert by_item["item-002"][1] == "<script>alert(1)</script>"  # CSV is not HTML: kept as it is
    back = human.read_sheet(path)
    assert answers(back) == answers(hostile)
    assert list(back.columns) == list(human.sheet_columns())


def test_hostile_answers_in_the_html_form_stay_text(hostile, tmp_path) -> None:
    assert annotation_form.environment().autoescape is True
    text = human.export_sheets(hostile, tmp_path, ["r1"])["r1"]["html"].read_text("utf-8")
    assert text.count("<script") == 1 and text.count("</script>") == 1  # the form's own script only
    assert "<textarea>" not in text and "</textarea>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "=HYPERLINK(&#34;http://x&#34;,&#34;y&#34;)" in text
    assert not re.search(r"<a\b|href=|src=|<link|@import|url\(", text)
    page = form_in_node.parse(text)
    assert {item["id"]: (item["a"], item["b"]) for item in page.items} == answers(hostile, as_html_text=True)
    assert [(i["name"], i["value"]) for i in page.inputs][:3] == [("item-001|puni", label) for label in human.LABELS]


def test_a_hostile_annotator_name_cannot_leave_the_form_script(key) -> None:
    name = 'x</script><script>alert("name")//'
    text = human.sheet_html(human.annotation_sheet(key), name)
    assert text.count("<script") == 1 and text.count("</script>") == 1
    assert "Response comparison: x&lt;/script&gt;&lt;script&gt;alert(&#34;name&#34;)//" in text
    script = form_in_node.parse(text).script
    assert script.startswith('\nconst SHEET = "x\\u003c/script\\u003e\\u003cscript\\u003ealert(\\"name\\")//";')


def test_hostile_answers_round_trip_through_simulated_annotators(hostile, tmp_path) -> None:
    written = human.export_sheets(hostile, tmp_path, annotators=human.SIMULATED_ANNOTATORS)
    completed = human.simulate_annotation([w["csv"] for w in written.values()], hostile, seed=2)
    for path in completed:
        assert formula_cells(raw_cells(path)) == [], path.name
        assert answers(human.read_sheet(path)) == answers(hostile), path.name
    labels = human.read_completed_sheets(completed, hostile, annotators=human.SIMULATED_ANNOTATORS)
    assert len(labels) == 3 * len(hostile) * len(human.framing_keys()) and labels["simulated"].all()


def test_hostile_answers_round_trip_through_a_sheet_filled_by_hand(hostile, tmp_path) -> None:
    path = human.export_sheets(hostile, tmp_path, ["r1"])["r1"]["csv"]
    cells = raw_cells(path)
    header, rows = cells[0], cells[1:]
    chosen = {}
    for row in rows:
        for k in human.framing_keys():
            chosen[(row[0], k)] = human.LABELS[len(chosen) % 3]
            row[header.index(k)] = chosen[(row[0], k)].lower()
    completed = tmp_path / "r1_completed.csv"
    with open(completed, "w", encoding="utf-8", newline="") as handle:  # as a spreadsheet saves it
        csv.writer(handle).writerows([header, *rows])
    labels = human.read_completed_sheets([completed], hostile)
    assert labels.set_index(["item_id", "framing"])["label"].to_dict() == chosen


def test_the_form_download_of_hostile_answers_cannot_run_and_reads_back(hostile, tmp_path) -> None:
    if form_in_node.node() is None:
        pytest.skip("node is not installed")
    sheet = human.annotation_sheet(hostile)
    for number, k in enumerate(human.framing_keys()):
        sheet[k] = human.LABELS[number % 3]
    out = form_in_node.download(human.sheet_html(sheet, "rater_z"), tmp_path)
    completed = tmp_path / out["fileName"]
    completed.write_bytes(out["text"].encode("utf-8"))
    assert formula_cells(raw_cells(completed)) == []
    assert answers(human.read_sheet(completed)) == answers(hostile, as_html_text=True)
    labels = human.read_completed_sheets([completed], hostile)
    assert labels.groupby("framing")["label"].agg(set).to_dict() == \
        {k: {human.LABELS[number % 3]} for number, k in enumerate(human.framing_keys())}
