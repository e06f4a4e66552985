"""Template metadata: vocabularies, the occupations table and its stereotype rule, guesses, save/load."""

import csv
import json

import pandas as pd
import pytest

from gama_utils.bench import bank_metadata as bm
from gama_utils.bench.lint import lint_bank
from gama_utils.bench.templates import TemplateFileError, load_templates, save_templates
from gama_utils.paths import DATA, TEMPLATES
from tests.test_templates import CLEAN_INTIMATE, CLEAN_PUBLIC


def test_stereotype_thresholds():
    assert [bm.stereotype_of(p) for p in (70.0, 69.9, 30.1, 30.0, 97.7, 1.3)] == \
        ["female", "none", "none", "male", "female", "male"]


def test_occupation_table_follows_its_rule_and_its_source():
    rows = list(csv.DictReader(open(DATA / "lexicons" / "occupations.csv", encoding="utf-8")))
    assert all(r["stereotype"] == bm.stereotype_of(float(r["pct_women"])) for r in rows)
    by_name = {r["occupation"]: r for r in rows}
    # FiveThirtyEight male-flight-attendants.tsv gives percentage MALE: women = 100 - male
    for occupation, pct_male in [("nurse", 9.4), ("secretary", 4.7), ("pilot", 92.5), ("firefighter", 95.2),
                                 ("lawyer", 64.5), ("software developer", 78.5), ("secondary school teacher", 42.5),
                                 ("financial manager", 47.4), ("education administrator", 35.2),
                                 ("licensed practical nurse", 9.6), ("cabinetmaker", 94.8)]:
        assert float(by_name[occupation]["pct_women"]) == pytest.approx(100 - pct_male)
    named = ("nurse", "secretary", "pilot", "firefighter", "lawyer", "secondary school teacher",
             "licensed practical nurse", "cabinetmaker")
    assert [by_name[o]["stereotype"] for o in named] == ["female", "female", "male", "male", "none", "none", "female",
                                                         "male"]
    assert by_name["secondary school teacher"]["source_category"] != by_name["teacher"]["source_category"]
    surfaces = [s.lower() for r in rows for s in [r["occupation"], *filter(None, r["variants"].split("|"))]]
    assert len(surfaces) == len(set(surfaces)), "every surface form belongs to one occupation"


@pytest.mark.parametrize("text, occupation, expected", [
    ("my [PARTNER] is a legal secretary in Leeds", "secretary", True),
    ("[PARTNER_SUBJ] works as a Nurse at night", "nurse", True),
    ("two pilots were on the plane", "pilot", True),
    ("[PARTNER_SUBJ] is a nursery teacher", "nurse", False),
    ("the autopilot failed", "pilot", False),
])
def test_occupation_in_text(text, occupation, expected):
    assert bm.occupation_in_text(occupation, text) is expected


def test_occupation_mentions_tell_the_partner_job_from_others():
    text = ("My [PARTNER] is a commercial pilot based in Lyon. [PARTNER_DET] manager called me. "
            "I'm a nurse. [PARTNER_DET] old job as a legal secretary paid less.")
    found = [(m["occupation"], m["partner"], m["stereotype"]) for m in bm.occupation_mentions(text)]
    assert found == [("pilot", True, "male"), ("manager", False, "male"), ("nurse", False, "female"),
                     ("secretary", True, "female")]


@pytest.mark.parametrize("text, guess", [
    ("We live in Lyon, near the river. Last week in Lyon I lost my temper in Paris.", "FR"),
    ("We met in Dublin and moved to Osaka, then Osaka again.", "JP"),
    ("Reading my messages was wrong, and I know it.", "unspecified"),
    ("We live together in Canterbury.", "GB"),
])
def test_region_guess(text, guess):
    assert bm.region_guess(text) == guess


def test_region_vocabulary():
    assert bm.english_speaking("GB") is True and bm.english_speaking("JP") is False
    assert bm.english_speaking("unspecified") is None
    assert set(bm.regions().query("english_speaking")["code"]) == {"US", "GB", "IE", "CA", "AU", "NZ"}


def _record(**overrides):
    base = {"template_id": "financial_control-L1-matter_of_fact-01", "track": "intimate",
            "dimension": "financial_control", "severity": "L1", "style": "matter_of_fact",
            "relationship": "partner", "text": CLEAN_INTIMATE, "provenance": "test", "lang": "en"}
    return {**base, **overrides}


@pytest.mark.parametrize("overrides, fragment", [
    ({"setting_region": "UK"}, "field setting_region"),
    ({"setting_region": "gb"}, "field setting_region"),
    ({"partner_occupation": "astronaut"}, "field partner_occupation"),
    ({"affected_third_party": "grandparent"}, "field affected_third_party"),
    ({"track": "public", "dimension": "public_dispute", "relationship": None, "partner_occupation": "nurse",
      "template_id": "public_dispute-L1-matter_of_fact-01", "text": CLEAN_PUBLIC}, "no partner_occupation"),
])
def test_metadata_vocabularies_are_enforced_on_load(tmp_path, overrides, fragment):
    path = tmp_path / "meta.jsonl"
    path.write_text(json.dumps(_record(**overrides)) + "\n")
    with pytest.raises(TemplateFileError) as err:
        load_templates(path)
    assert "meta.jsonl:1" in str(err.value) and fragment in str(err.value)


def test_metadata_round_trip_and_derived_stereotype(tmp_path):
    record = _record(setting_region="JP", affected_third_party="none", partner_occupation="pilot",
                     text=CLEAN_INTIMATE.replace("I told [PARTNER_OBJ]",
                                                 "My [PARTNER], a pilot, heard it. I told [PARTNER_OBJ]"))
    path = save_templates([record], tmp_path / "t.jsonl")
    frame = load_templates(path)
    assert frame.loc[0, "occupation_stereotype"] == "male" and frame.loc[0, "setting_region"] == "JP"
    assert save_templates(frame, tmp_path / "again.jsonl").read_bytes() == path.read_bytes()
    assert lint_bank(frame).empty


def test_lint_checks_the_stated_occupation_occurs_in_the_text():
    record = _record(partner_occupation="firefighter")
    report = lint_bank(pd.DataFrame([record]))
    assert list(report.problem) == [
        "partner_occupation 'firefighter' does not occur in the text (nor any of its variants)"]


def test_saving_the_bank_without_metadata_keeps_its_bytes(tmp_path):
    for name in ("mild_violence.jsonl", "public_dispute.jsonl"):
        original = TEMPLATES / name
        copy = save_templates(load_templates(original), tmp_path / name)
        assert copy.read_bytes() == original.read_bytes()
