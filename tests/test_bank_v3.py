"""Bank v3: rhetorical devices by style against hand counts, the paraphrase reading against its definition,
the narrator's occupation and the rule-based second reader, and the shipped bank within its bounds."""

import numpy as np
import pandas as pd
import pytest
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, TfidfVectorizer

from gama_utils.bench import bank_metadata, embeddings, wording
from gama_utils.bench.templates import load_templates
from gama_utils.paths import DATA

VENTING = ("I worked there for years. Seven years of eighteen-hour Augusts. Seven. Then the attendant told the "
           "manager, and the attendant laughed. \"Why would you do that?\" the attendant asked. Why me? Hostage. "
           "I said okay. Every day! It was SO unfair and the HR team knew. The CCTV showed it. A sign said "
           "FRIDGES AND FREEZERS ONLY. It cost me 900 DKK. Isn't that unfair? What should I do now?")


def test_devices_match_a_hand_count():
    # fragments: 'Seven.', 'Hostage.', 'Every day!' ('I said okay.' has a subject; the quote is speech)
    assert wording.echo_fragments(VENTING) == ["Seven.", "Hostage.", "Every day!"]
    # SO is emphasis; HR, CCTV, DKK are abbreviations; FRIDGES AND FREEZERS ONLY is a sign (three capitals in a row)
    assert wording.emphatic_capitals(VENTING) == ["SO"]
    # 'Why me?' comes before the closing run; 'Isn't that unfair?' opens rhetorically; the quoted question is speech
    assert wording.rhetorical_questions(VENTING) == ["Why me?", "Isn't that unfair?"]
    # 'the attendant' three times; the tag after the quote ('the attendant asked') is narration and counts
    assert wording.repeated_role_noun(VENTING) == ("attendant", 3)
    assert wording.style_devices(VENTING) == {"echo_fragments": 3, "exclamations": 1, "emphatic_capitals": 1,
                                              "rhetorical_questions": 2, "role_noun_repeats": 3}


def test_a_currency_prefix_is_not_emphasis():
    # the toy dimension's drone sold for NZ$900 (make test-recipes): a country prefix, like HR or DKK above
    assert wording.emphatic_capitals("I sold it for NZ$900 and US$40, and it was SO wrong.") == ["SO"]


def test_short_clauses_and_abbreviated_times_are_not_fragments():
    text = "We left at 5 p.m. on Friday. Nobody checked. Six came up. That wasn't true. It was 4.5 km. What now?"
    assert wording.echo_fragments(text) == []


def test_style_problems_and_the_bank_table_use_the_bounds():
    bounds = wording.STYLE_BOUNDS["matter_of_fact"]
    assert bounds["echo_fragments"][0] == 0
    problems = wording.style_problems(VENTING, "matter_of_fact")
    assert "echo_fragments 3 > 0 allowed in matter_of_fact" in problems
    assert wording.style_problems(VENTING, "emotional_venting") == [
        "echo_fragments 3 > 1 allowed in emotional_venting"]
    frame = pd.DataFrame({"text": [VENTING, "I paid the bill. I told them. What should I do?"],
                          "style": ["emotional_venting", "emotional_venting"]})
    table = wording.style_table(frame).set_index(["style", "device"])
    echo = table.loc[("emotional_venting", "echo_fragments")]
    assert (echo["templates"], echo["using"], echo["share"], echo["max"], echo["over_bound"]) == (2, 1, 0.5, 3, 1)
    assert not echo["within"]
    assert table.loc[("matter_of_fact", "echo_fragments"), "templates"] == 0


def test_the_paraphrase_reading_is_char_ngram_tfidf_then_lsa():
    texts = ["I followed a hiker on the mountain path and called the rangers about them.",
             "A hiker kept following me up the mountain trail, so I phoned the park rangers.",
             "My coworker presented my spreadsheet to the director as their own work.",
             "The director praised the spreadsheet that my coworker had built for the team."]
    cleaned = [" ".join(w for w in t.lower().replace(",", " ").replace(".", " ").split()
                        if w not in ENGLISH_STOP_WORDS and len(w) > 2) for t in texts]
    matrix = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), sublinear_tf=True, min_df=2).fit_transform(cleaned)
    reduced = TruncatedSVD(n_components=3, algorithm="arpack", random_state=0).fit_transform(matrix)
    reduced /= np.linalg.norm(reduced, axis=1, keepdims=True)
    expected = reduced @ reduced.T
    got = embeddings.cosine_matrix(texts, "paraphrase")
    assert got == pytest.approx(expected, abs=1e-6)
    assert got[0, 1] > got[0, 2] and got[2, 3] > got[1, 3]
    assert np.array_equal(got, embeddings.cosine_matrix(texts, "paraphrase"))


@pytest.mark.parametrize("text, occupation", [
    ("I'm a paramedic in Tallinn and I live with my [PARTNER].", "paramedic"),
    ("I worked as a dispatcher for an ambulance company.", "dispatcher"),
    ("I am not a doctor, and I was not going to gamble.", None),
    ("I'm working with a therapist now.", None),
    ("My [PARTNER] is a nurse and I stay home.", None),
    ("I teach primary school in Leeds.", None),
])
def test_narrator_occupation_guess(text, occupation):
    assert bank_metadata.narrator_occupation_guess(text) == occupation


def test_second_reading_lists_each_disagreement():
    frame = pd.DataFrame([
        {"template_id": "a", "track": "intimate", "text": "My [PARTNER] is a pilot. I'm a nurse in Leeds.",
         "setting_region": "GB", "partner_occupation": "pilot", "narrator_occupation": "nurse"},
        {"template_id": "b", "track": "public", "text": "I'm a cashier in Osaka.", "setting_region": "FR",
         "partner_occupation": None, "narrator_occupation": None},
    ])
    found = bank_metadata.second_reading_disagreements(frame)
    assert found.to_dict("records") == [
        {"template_id": "b", "field": "setting_region", "recorded": "FR", "rule": "JP"},
        {"template_id": "b", "field": "narrator_occupation", "recorded": "", "rule": "cashier"}]
    assert bank_metadata.metadata_problems({"track": "public", "text": "I'm a cashier.",
                                            "narrator_occupation": "pilot"}) == [
        "narrator_occupation 'pilot' does not occur in the text (nor any of its variants)"]


@pytest.fixture(scope="module")
def bank():
    return load_templates()


def test_every_style_of_the_shipped_bank_is_within_its_bounds(bank):
    table = wording.style_table(bank)
    assert table["within"].all(), table[~table["within"]].to_string()


def test_every_second_reading_disagreement_of_the_shipped_bank_has_a_verdict(bank):
    found = bank_metadata.second_reading_disagreements(bank)
    judged = found.merge(bank_metadata.reviewed_disagreements(), on=["template_id", "field", "recorded", "rule"],
                         how="left")
    assert judged["verdict"].notna().all(), judged[judged["verdict"].isna()].to_string()


def test_the_read_same_premise_pairs_are_now_apart(bank):
    review = pd.read_csv(DATA / "bank_reviews" / "premise_pairs.csv", keep_default_na=False)
    assert set(review["id_a"]) | set(review["id_b"]) <= set(bank["template_id"])
    same = review[review["verdict"] == "same premise"]
    index = {t: i for i, t in enumerate(bank["template_id"])}
    for method, below in (("premise", embeddings.REVIEW_BAND[0]), ("paraphrase", 0.65)):
        cosine = embeddings.cosine_matrix(list(bank["text"]), method)
        assert max(cosine[index[a], index[b]] for a, b in zip(same["id_a"], same["id_b"])) < below, method


def test_narrator_occupations_are_recorded_and_derived(bank):
    recorded = bank[bank["narrator_occupation"].notna()]
    assert len(recorded) >= 130
    assert (recorded["narrator_occupation_stereotype"]
            == recorded["narrator_occupation"].map(bank_metadata.occupation_stereotype)).all()


def test_the_narrator_occupation_stratum_names_its_levels_in_06s_table():
    from gama_utils.report import tables
    from tests.test_tables import gaps_frame

    frame = gaps_frame([("A", "public", "puni", 5.0, 3.0), ("A", "public", "puni", 4.0, 4.5),
                        ("A", "public", "puni", 3.0, 3.0)])
    frame["narrator_occupation_stereotype"] = ["female", "male", "no occupation named"]
    frame["n_pairs"] = [3, 9, 400]
    table = tables.stratified_table(frame, "narrator_occupation_stereotype")
    # one model: female 3 - 5 = -2.0, male 4.5 - 4 = 0.5, none 0.0
    assert list(table.index) == [("Public Track", "female-stereotyped"), ("Public Track", "male-stereotyped"),
                                 ("Public Track", "no occupation named")]
    assert table["Puni."].tolist() == [-2.0, 0.5, 0.0]
    assert table.index.names == ["Track", "Narrator occupation stereotype"]
