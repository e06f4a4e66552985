"""Bring-your-own answers: every bad input names the file, the row and the field (issue 15, point 5)."""

import json

import pandas as pd
import pytest

from gama_utils.collect import respond
from tests.test_respond import _pairs


@pytest.fixture
def pairs():
    return _pairs(3)


def write(path, text: str | bytes):
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return str(path)


def errors(path, pairs) -> str:
    with pytest.raises(ValueError) as err:
        respond.import_responses(path, pairs)
    return str(err.value)


def test_a_file_that_is_not_utf8_is_named_with_the_row(tmp_path, pairs):
    text = "pair_id,model,arm,answer\nGB-0000,m,male,ok\nGB-0000,m,female,caf\xe9 latin-1\n".encode("latin-1")
    message = errors(write(tmp_path / "latin.csv", text), pairs)
    assert "latin.csv" in message and "UTF-8" in message and "row 2" in message


def test_an_empty_file_is_named(tmp_path, pairs):
    assert "empty.csv" in errors(write(tmp_path / "empty.csv", ""), pairs)
    assert "no rows" in errors(write(tmp_path / "header.csv", "pair_id,model,arm,answer\n"), pairs)
    assert "empty.jsonl" in errors(write(tmp_path / "empty.jsonl", "\n\n"), pairs)


def test_jsonl_with_a_broken_line_names_it(tmp_path, pairs):
    lines = [json.dumps({"pair_id": "GB-0000", "model": "m", "arm": "male", "answer": "a"}), "{not json"]
    message = errors(write(tmp_path / "broken.jsonl", "\n".join(lines) + "\n"), pairs)
    assert "broken.jsonl line 2" in message and "JSON" in message


def test_answers_that_are_not_text_are_named(tmp_path, pairs):
    rows = [{"pair_id": "GB-0000", "model": "m", "arm": "male", "answer": 42},
            {"pair_id": "GB-0000", "model": "m", "arm": "female", "answer": None},
            {"pair_id": "GB-0001", "model": "m", "arm": "male", "answer": ["a", "list"]}]
    message = errors(write(tmp_path / "types.jsonl", "\n".join(json.dumps(r) for r in rows)), pairs)
    assert "types.jsonl row 1: answer 42 is not text" in message
    assert "row 2: answer is missing" in message and "row 3: answer" in message


def test_a_sample_that_is_not_a_whole_number_is_named(tmp_path, pairs):
    frame = pd.DataFrame({"pair_id": ["GB-0000", "GB-0000"], "model": ["m", "m"], "arm": ["male", "female"],
                          "answer": ["a", "b"], "sample": ["0", "one"]})
    frame.to_csv(tmp_path / "sample.csv", index=False)
    assert "sample.csv row 2: sample 'one' is not a whole number" in errors(str(tmp_path / "sample.csv"), pairs)


def test_duplicates_after_type_conversion_are_found(tmp_path, pairs):
    frame = pd.DataFrame({"pair_id": ["GB-0000", "GB-0000"], "model": ["m", "m"], "arm": ["male", "male"],
                          "answer": ["a", "b"], "sample": ["1", "1.0"]})
    frame.to_csv(tmp_path / "dup.csv", index=False)
    message = errors(str(tmp_path / "dup.csv"), pairs)
    assert "dup.csv row 2: duplicate of row 1" in message and "sample" in message


def test_blank_model_names_are_refused(tmp_path, pairs):
    frame = pd.DataFrame({"pair_id": ["GB-0000"], "model": ["  "], "arm": ["male"], "answer": ["a"]})
    frame.to_csv(tmp_path / "blank.csv", index=False)
    assert "blank.csv row 1: model is empty" in errors(str(tmp_path / "blank.csv"), pairs)


def test_a_missing_file_and_an_unknown_format_are_named(tmp_path, pairs):
    with pytest.raises(FileNotFoundError, match="nowhere.csv"):
        respond.import_responses(str(tmp_path / "nowhere.csv"), pairs)
    assert "answers.xlsx" in errors(write(tmp_path / "answers.xlsx", "x"), pairs)
