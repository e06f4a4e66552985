"""Annotation sheets and the HTML form (gama_utils.human.annotation_sheets, annotation_form)."""

from __future__ import annotations

import re

import form_in_node
import numpy as np
import pandas as pd
import pytest
from human_data import MODELS, completed_sheet, sample_key, synthetic_run

from gama_utils import human

pytestmark = pytest.mark.usefixtures("paper_metrics_only")


@pytest.fixture(scope="module")
def run() -> tuple[pd.DataFrame, pd.DataFrame]:
    return synthetic_run()


@pytest.fixture(scope="module")
def key() -> pd.DataFrame:
    return sample_key()


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
