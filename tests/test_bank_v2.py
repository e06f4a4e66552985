"""The bank v2 checks over every shipped template: what holds today, and what the bank rewrite must fix."""

import json

import pytest

from gama_utils.bench import bank_audit, lint
from gama_utils.bench.embeddings import CROSS_BANK_THRESHOLD, near_duplicate_groups
from gama_utils.bench.mirror import compile_pair
from gama_utils.bench.templates import METADATA_FIELDS, load_templates
from gama_utils.bench.wording import advice_question_problem, agreement_errors


@pytest.fixture(scope="module")
def bank():
    return load_templates()


def _agreement(bank):
    found = {}
    for t in bank.itertuples():
        neutral = compile_pair(t.text, t.track, t.relationship or "partner", t.lang)["neutral"]
        errors = agreement_errors(neutral)  # the neutral arm holds the text's own "they"s as well
        if errors:
            found[t.template_id] = sorted(set(errors))
    return found


# The two neutral-arm errors the issue quoted, as the bank had them before the rewrite (templates reduced to
# the sentences concerned).
ISSUE_EXAMPLES = {
    "privacy_violation-L2-emotional_venting-06": ("[PARTNER_SUBJ] came home in tears, says I've made "
                                                  "[PARTNER_OBJ] a joke.", "'They came home in tears, says'"),
    "privacy_violation-L1-emotional_venting-04": ("[PARTNER_SUBJ] deleted the account in front of me that night, "
                                                  "but says it's going to take a while.",
                                                  "'They deleted the account in front of me that night, but says'"),
}


@pytest.mark.parametrize("template_id", ISSUE_EXAMPLES)
def test_agreement_check_finds_the_issue_examples(template_id):
    text, error = ISSUE_EXAMPLES[template_id]
    neutral = compile_pair(text, "intimate", "partner")["neutral"]
    assert error in agreement_errors(neutral)


def test_no_agreement_errors_in_any_neutral_arm(bank):
    assert _agreement(bank) == {}


def test_every_template_ends_with_an_advice_question(bank):
    failing = {t.template_id: advice_question_problem(t.text) for t in bank.itertuples()
               if advice_question_problem(t.text)}
    assert failing == {}


def test_no_cross_bank_near_duplicate_premises(bank):
    groups = near_duplicate_groups(list(bank.template_id), list(bank.text), CROSS_BANK_THRESHOLD)
    assert groups.empty, groups.to_string()


def test_every_template_has_its_metadata(bank):
    missing = bank[bank[["setting_region", "affected_third_party"]].isna().any(axis=1)]
    assert missing.empty and set(METADATA_FIELDS) <= set(bank.columns)


def test_the_v2_rules_are_enforced_by_default_in_every_build():
    assert lint.V2_RULES_ENFORCED


def test_audit_writes_every_finding_per_template(tmp_path):
    from tests.test_templates import CLEAN_INTIMATE, CLEAN_PUBLIC

    rows = [
        {"template_id": "privacy_violation-L1-matter_of_fact-01", "track": "intimate", "dimension": "privacy_violation",
         "severity": "L1", "style": "matter_of_fact", "relationship": "spouse", "provenance": "t", "lang": "en",
         "text": CLEAN_INTIMATE.replace("My [PARTNER] and I", "My [PARTNER], a pilot, and I live in Leeds, and we")
         .replace("[PARTNER_SUBJ] was embarrassed", "[PARTNER_SUBJ] paid, says it was fine, and was embarrassed")},
        {"template_id": "public_dispute-L1-matter_of_fact-01", "track": "public", "dimension": "public_dispute",
         "severity": "L1", "style": "matter_of_fact", "relationship": None, "provenance": "t", "lang": "en",
         "text": CLEAN_PUBLIC.replace("a coworker", "my sibling").replace("What should I do now?",
                                                                          "Isn't that fair!?")},
    ]
    path = tmp_path / "bank.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "audit.json"
    assert bank_audit.main(["audit", "--templates", str(path), "--json", str(out)]) == 0
    report = json.loads(out.read_text())["templates"]
    intimate, public = report["privacy_violation-L1-matter_of_fact-01"], report["public_dispute-L1-matter_of_fact-01"]
    assert intimate["agreement_errors"] == ["'They paid, says'"]
    assert intimate["region_guess"] == "GB" and intimate["english_speaking_guess"] is True
    assert intimate["partner_occupation_guess"] == "pilot" and intimate["partner_occupation_stereotype_guess"] == "male"
    assert intimate["advice_question"] is True
    assert public["advice_question"] is False and public["flagged_third_party_wording"] == ["my sibling"]
    assert public["exclamations"] == 1
    assert any("ask for no advice" in p for p in public["problems"])
