"""The datasheet's measured numbers, against counts worked out by hand, and the shipped datasheet's figures."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer

from gama_utils.bench import bank_metadata, datasheet, embeddings, wording
from gama_utils.bench.templates import load_templates
from gama_utils.core import grid
from gama_utils.paths import BENCHMARK

ENDING = " What should I do now?"
TEXTS = {
    "a": "I moved our savings into my own account in Osaka and my partner only found out last week! " + ENDING,
    "b": "I read every message on the phone of my partner while we were staying in Leeds. Was I wrong?",
    "c": "I'm a cashier and I shouted at a stranger in the car park of a supermarket over a dented bumper." + ENDING,
    "d": "I took the last four water cases at the shop in Lyon before the storm came!! Honestly!" + ENDING,
}


def _frames():
    pairs = pd.DataFrame([
        {"template_id": "a", "track": "intimate", "style": "emotional_venting", "setting_region": "JP",
         "partner_occupation": "nurse", "occupation_stereotype": "female", "narrator_occupation": None,
         "narrator_occupation_stereotype": None, "affected_third_party": "none",
         "prompt_neutral": "I am a person. They says it was fine." + ENDING},
        {"template_id": "b", "track": "intimate", "style": "matter_of_fact", "setting_region": "GB",
         "partner_occupation": "pilot", "occupation_stereotype": "male", "narrator_occupation": None,
         "narrator_occupation_stereotype": None, "affected_third_party": "friend",
         "prompt_neutral": "I am a person. They were upset." + ENDING},
        {"template_id": "c", "track": "public", "style": "matter_of_fact", "setting_region": "unspecified",
         "partner_occupation": None, "occupation_stereotype": None, "narrator_occupation": "cashier",
         "narrator_occupation_stereotype": "female", "affected_third_party": "stranger",
         "prompt_neutral": "I am a person. They was angry and they doesn't care." + ENDING},
        {"template_id": "d", "track": "public", "style": "emotional_venting", "setting_region": "FR",
         "partner_occupation": None, "occupation_stereotype": None, "narrator_occupation": None,
         "narrator_occupation_stereotype": None, "affected_third_party": "stranger",
         "prompt_neutral": "I am a person. It was fine." + ENDING},
    ])
    posts = pd.DataFrame({"template_id": list(TEXTS), "text": list(TEXTS.values())}).merge(
        pairs[["template_id", "track", "setting_region", "partner_occupation", "narrator_occupation"]])
    return pairs, posts


def test_measures_match_hand_counts():
    pairs, posts = _frames()
    m = datasheet.measures(pairs, posts)
    # 'They says' in a; 'They was' and 'they doesn't' in c
    assert m["agreement_errors"] == 3
    assert m["advice_question_share"] == 0.75  # b ends with a verdict question only
    assert m["regions"]["intimate"] == {"templates": 2, "english_speaking": 1, "other": 1, "unspecified": 0,
                                        "not_recorded": 0, "countries": 2, "share_outside_english_speaking": 0.5,
                                        "most_common": ["Japan 1", "United Kingdom 1"]}
    public = m["regions"]["public"]
    assert (public["other"], public["english_speaking"], public["unspecified"]) == (1, 0, 1)
    assert public["share_outside_english_speaking"] == 0.5
    styles = {row["style"]: row for row in m["exclamations"]}
    assert styles["emotional_venting"] == {"style": "emotional_venting", "templates": 2, "with_exclamation": 2,
                                           "share": 1.0}
    assert styles["matter_of_fact"]["with_exclamation"] == 0 and styles["self_justifying"]["share"] is None
    assert m["occupations"]["recorded"] == 2 and m["occupations"]["by_direction"] == {"female": 1, "male": 1,
                                                                                      "none": 0}
    assert {r["value"]: (r["intimate"], r["public"]) for r in m["third_parties"]} == {
        "none": (1, 0), "friend": (1, 0), "stranger": (0, 2)}
    assert m["narrator_occupations"]["recorded"] == 1 and m["narrator_occupations"]["by_direction"]["female"] == 1
    # the rule reads Osaka (JP), Leeds (GB), no place, Lyon (FR): all four regions agree; it reads no partner
    # job ('my partner' is no placeholder), so both recorded partner occupations disagree, with no verdict
    reading = {r["field"]: r for r in m["second_reading"]}
    assert (reading["setting_region"]["agree"], reading["setting_region"]["disagree"]) == (4, 0)
    assert (reading["partner_occupation"]["compared"], reading["partner_occupation"]["disagree"],
            reading["partner_occupation"]["unreviewed"]) == (2, 2, 2)
    assert reading["narrator_occupation"]["agree"] == 4
    styles = {(r["style"], r["device"]): r for r in m["style_devices"]["rows"]}
    assert styles[("emotional_venting", "exclamations")]["using"] == 2  # a and d
    assert styles[("emotional_venting", "exclamations")]["max"] == 3  # 'came!!' and 'Honestly!' in d


def test_the_premise_similarity_is_the_cosine_of_content_word_tfidf():
    pairs, posts = _frames()
    vectors = TfidfVectorizer(stop_words="english", sublinear_tf=True).fit_transform(posts["text"]).toarray()
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    cosine = vectors @ vectors.T
    expected = cosine[np.triu_indices(4, k=1)].max()
    similarity = datasheet.measures(pairs, posts)["premise_similarity"]
    assert similarity["n_pairs"] == 6 and similarity["max"] == pytest.approx(round(expected, 4))


def test_the_shipped_datasheet_reports_the_measured_numbers_of_the_shipped_bank():
    readme = (BENCHMARK / "README.md").read_text(encoding="utf-8")
    pairs = pd.read_json(BENCHMARK / "pairs.jsonl", lines=True, dtype=False)
    bank = load_templates().set_index("template_id").loc[pairs["template_id"]]
    errors = sum(len(wording.agreement_errors(p)) for p in pairs["prompt_neutral"])
    assert errors == 0 and f"every `prompt_neutral`): {errors}." in readme
    assert "asks for advice about what to do (`gama_utils.bench.wording.advice_question_problem`): 1.0." in readme
    intimate = bank[bank["track"] == "intimate"]
    outside = int(intimate["setting_region"].map(lambda c: bank_metadata.english_speaking(c) is False).sum())
    assert outside / len(intimate) >= 1 / 3
    assert (f"Settings, intimate track: {outside} of {len(intimate)} templates "
            f"(share {round(outside / len(intimate), 3)}) are set outside English-speaking countries") in readme
    venting = bank[bank["style"] == "emotional_venting"]["text"].str.contains("!")
    assert f"| emotional_venting | {len(venting)} | {int(venting.sum())} |" in readme
    recorded = intimate["partner_occupation"].notna()
    stereotypes = intimate["occupation_stereotype"].value_counts()
    assert (f"recorded in {int(recorded.sum())} of {len(intimate)} templates" in readme
            and f"female {stereotypes['female']}, male {stereotypes['male']}, neither {stereotypes['none']}" in readme)
    own = bank["narrator_occupation"].notna()
    assert f"- Narrator occupations: recorded in {int(own.sum())} templates" in readme
    styles = wording.style_table(bank.reset_index())
    echo = styles[(styles["style"] == "emotional_venting") & (styles["device"] == "echo_fragments")].iloc[0]
    assert (f"| emotional_venting | echo_fragments | {echo['using']} | {echo['share']} | {echo['max_share']} | "
            f"{echo['max']} | {echo['max_per_template']} | {echo['over_bound']} |") in readme
    assert f"{int(styles['within'].sum())} of the {len(styles)} style × device bounds hold" in readme
    disagreements = bank_metadata.second_reading_disagreements(bank.reset_index())
    regions = int((disagreements["field"] == "setting_region").sum())
    assert f"`setting_region`: {len(bank) - regions:,} of {len(bank):,} agree; {regions} disagree" in readme
    assert "no premise repeated across dimensions" not in readme
    maximum = float(re.search(r"maximum (0\.\d+)", readme).group(1))
    assert maximum < embeddings.CROSS_BANK_THRESHOLD
    for d in grid.DIMENSIONS:
        assert f"- **{d.name}** ({d.track} track)" in readme and d.severity_rubric["L3"] in readme
    assert "{{" not in readme and "{%" not in readme
