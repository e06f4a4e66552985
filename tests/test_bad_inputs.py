"""The remaining bad inputs: each a clear error naming file, row and field, before anything is sent or written."""

from __future__ import annotations

import argparse
import json

import pytest

from gama_utils.collect import respond
from gama_utils.runs import orchestrate, profiles
from tests.test_respond import _pairs


@pytest.fixture
def pairs():
    return _pairs(3)


def write(path, text: str):
    path.write_bytes(text.encode("utf-8"))
    return str(path)


def errors(path, pairs) -> str:
    with pytest.raises(ValueError) as err:
        respond.import_responses(path, pairs)
    return str(err.value)


@pytest.mark.parametrize("value", ["&a [*a]", "&a {x: *a}", "[1, &b [2, *b]]"])
def test_a_recursive_yaml_anchor_in_set_is_a_clear_error(value):
    with pytest.raises(argparse.ArgumentTypeError, match=r"--set arms: the value refers to itself"):
        orchestrate._parse_override(f"arms={value}")


def test_the_command_line_says_so_without_a_traceback(capsys):
    with pytest.raises(SystemExit) as stop:
        orchestrate.main(["reproduce", "--set", "arms=&a [*a]"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "--set arms: the value refers to itself" in err and "Traceback" not in err


def test_a_repeated_anchor_that_is_not_recursive_is_fine():
    assert orchestrate._parse_override("x=[&a [1], *a]") == ("x", [[1], [1]])
    assert not profiles.refers_to_itself({"a": [1, 2], "b": {"c": [3]}})


def test_a_recursive_anchor_in_a_profile_is_named(tmp_path, monkeypatch):
    monkeypatch.setattr(profiles, "CONFIGS", tmp_path)
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "loop.yaml").write_text("parameters:\n  arms: &a [*a]\n", encoding="utf-8")
    _, problems = profiles.read_profile("loop")
    assert len(problems) == 1 and "loop.yaml" in problems[0] and "refers to itself" in problems[0]


def test_a_nul_byte_in_an_answer_names_file_row_and_field(tmp_path, pairs):
    text = "pair_id,model,arm,answer\nGB-0000,m,male,ok\nGB-0000,m,female,bro\x00ken\n"
    message = errors(write(tmp_path / "nul.csv", text), pairs)
    assert "nul.csv row 2: field 'answer' holds a NUL byte" in message and "character 4" in message
    rows = [{"pair_id": "GB-0000", "model": "m", "arm": "male", "answer": "ok"},
            {"pair_id": "GB-0000", "model": "m\u0000", "arm": "female", "answer": "ok"}]
    message = errors(write(tmp_path / "nul.jsonl", "\n".join(json.dumps(r) for r in rows)), pairs)
    assert "nul.jsonl row 2: field 'model' holds a NUL byte" in message


def test_a_column_named_twice_is_refused(tmp_path, pairs):
    text = "pair_id,model,arm,answer,answer\nGB-0000,m,male,first,second\nGB-0000,m,female,a,b\n"
    message = errors(write(tmp_path / "twice.csv", text), pairs)
    assert "twice.csv: the header names a column more than once: 'answer' (columns 4, 5)" in message
    line = '{"pair_id": "GB-0000", "model": "m", "arm": "male", "answer": "first", "answer": "second"}'
    message = errors(write(tmp_path / "twice.jsonl", line + "\n"), pairs)
    assert "twice.jsonl line 1: field 'answer' appears more than once" in message


def test_a_pair_with_one_arm_only_is_named(tmp_path, pairs):
    text = ("pair_id,model,arm,answer\nGB-0000,m,male,a\nGB-0000,m,female,b\nGB-0001,m,female,c\n"
            "GB-0002,m,neutral,d\nGB-0002,m,male,e\n")
    message = errors(write(tmp_path / "lone.csv", text), pairs)
    assert "lone.csv row 3: arm: pair_id 'GB-0001' of model 'm' (sample 0) has no male answer" in message
    assert "lone.csv row 4: arm: pair_id 'GB-0002' of model 'm' (sample 0) has no female answer" in message
    assert "GB-0000" not in message


def test_the_dotless_i_look_alike_is_flagged():
    from gama_utils.bench import lint

    problems = lint.lint_template("I laughed at hıs plan and told everyone. What should I do now?", "public")
    assert "look-alike letter(s) 'ı' (LATIN SMALL LETTER DOTLESS I) in 'hıs' (reads 'his'): write it in Latin " \
           "letters" in problems
    assert "gendered word 'his' outside a placeholder" in problems


def test_the_dotless_i_of_a_turkish_place_name_is_a_letter_not_a_disguise():
    from gama_utils.bench import lint

    # the bank's emotional_blackmail-L1-emotional_venting-02 is set in Kadıköy; a Cyrillic 'е' still always counts
    def look_alikes(text: str) -> list[str]:
        return [p for p in lint.lint_template(text, "public") if "look-alike" in p]

    assert look_alikes("We met in Kadıköy and then in Sarıyer. What should I do now?") == []
    assert look_alikes("We met in Kadıköy near the sеa. What should I do now?") == [
        "look-alike letter(s) 'е' (CYRILLIC SMALL LETTER IE) in 'sеa' (reads 'sea'): write it in Latin letters"]
