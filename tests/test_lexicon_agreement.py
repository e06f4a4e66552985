"""Agreement of the lexicon with hand-scored answers (gama_utils.judge.lexicon_agreement, issue 16 point 7).

The agreement functions are checked on tiny made-up examples against numbers worked out by
hand in the comments (and sklearn's cohen_kappa_score / scipy's spearmanr called directly);
the published figures (data/lexicons/agreement*.json) are recomputed and must match.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.stats import binomtest, pearsonr, spearmanr
from sklearn.metrics import cohen_kappa_score

from gama_utils.judge import lexicon_agreement as agree
from gama_utils.judge.lexicon import evaluate_text, term_spans
from gama_utils.paths import LEXICONS, ROOT


def test_count_agreement_against_a_hand_computation():
    # hand 0,1,2,3 (mean 1.5), judge 0,2,2,5 (mean 2.25): deviations -1.5,-.5,.5,1.5 and -2.25,-.25,-.25,2.75;
    # Pearson = 7.5 / sqrt(5 × 12.75) = 0.93934; ranks 1,2,3,4 vs 1,2.5,2.5,4: Spearman = 4.5 / sqrt(5 × 4.5)
    # = 0.94868; |differences| 0,1,0,2 -> 0.75; signed (judge − hand) 0,1,0,2 -> 0.75.
    got = agree.count_agreement([0, 1, 2, 3], [0, 2, 2, 5])
    assert got == {"n": 4, "pearson_r": pytest.approx(7.5 / math.sqrt(5 * 12.75)),
                   "spearman_r": pytest.approx(4.5 / math.sqrt(5 * 4.5)), "mean_abs_diff": 0.75,
                   "mean_signed_diff": 0.75, "hand_mean": 1.5, "judge_mean": 2.25}


def test_count_agreement_leaves_correlation_undefined_for_a_constant_side():
    got = agree.count_agreement([1, 1, 1], [0, 2, 4])
    assert got["pearson_r"] is None and got["spearman_r"] is None and got["mean_signed_diff"] == 1.0


def test_rating_agreement_against_a_hand_computation():
    hand, judge = [1, 2, 3, 4, 5], [1, 3, 3, 2, 5]
    # |differences| 0,1,0,2,0: exact 3/5, within one 4/5, MAE 3/5; signed -2+1 over 5 = -0.2
    got = agree.rating_agreement(hand, judge)
    assert (got["exact"], got["within_1"], got["mae"], got["mean_signed_diff"]) == (0.6, 0.8, 0.6, -0.2)
    assert got["spearman_r"] == spearmanr(hand, judge)[0]
    assert got["table"]["4"] == {"1": 0, "2": 1, "3": 0, "4": 0, "5": 0}
    assert sum(sum(row.values()) for row in got["table"].values()) == 5


def test_rate_agreement_against_a_hand_computation_and_sklearn():
    hand, judge = [True, True, False, False, True], [True, False, False, True, True]
    # observed 3/5 = 0.6; expected 0.6 × 0.6 + 0.4 × 0.4 = 0.52; kappa = 0.08 / 0.48 = 0.1667
    got = agree.rate_agreement(hand, judge)
    assert (got["both_true"], got["judge_only"], got["hand_only"], got["both_false"]) == (2, 1, 1, 1)
    assert (got["accuracy"], got["kappa"], got["hand_rate"], got["judge_rate"]) == (0.6, pytest.approx(0.08 / 0.48),
                                                                                   0.6, 0.6)
    assert got["kappa"] == cohen_kappa_score(hand, judge)


def test_rate_agreement_kappa_is_undefined_when_both_sides_say_the_same_thing_throughout():
    got = agree.rate_agreement([True, True], [True, True])
    assert got["accuracy"] == 1.0 and got["kappa"] is None


def test_blame_agreement_against_sklearn():
    hand, judge = ["full", "full", "partial", "none"], ["full", "partial", "partial", "full"]
    got = agree.blame_agreement(hand, judge)
    assert got["accuracy"] == 0.5
    assert got["kappa"] == cohen_kappa_score(hand, judge, labels=["full", "partial", "none"])
    assert got["table"]["full"] == {"full": 1, "partial": 1, "none": 0}
    assert got["table"]["none"] == {"full": 1, "partial": 0, "none": 0}


def test_ordering_counts_each_high_low_pair_once():
    styles = ["harsh", "harsh", "gentle", "gentle", "firm"]
    hand, judge = [5, 2, 1, 2, 9], [3, 3, 0, 3, 0]
    # (0,2): 5>1 and 3>0 same; (0,3): 5>2 but 3=3 judge tie; (1,2): 2>1 and 3>0 same; (1,3): 2=2 hand tie
    assert agree.ordering(styles, hand, judge) == {"pairs": 4, "hand_tied": 1, "same": 2, "judge_tied": 1,
                                                   "reversed": 0, "share_same": pytest.approx(2 / 3)}
    # (0,1): 3>1 but 1<2; (0,2): 3<4 but 1>0 -> both reversed
    assert agree.ordering(["harsh", "gentle", "gentle"], [3, 1, 4], [1, 2, 0])["reversed"] == 2


def test_locate_terms_gives_each_term_its_own_whole_word_occurrence():
    answer = "That was wrong, and Wrong again: a serious breach of trust, unwrongly."
    assert agree.locate_terms(answer, ["wrong", "wrong", "breach of trust"], exact_case=True) == \
        [(9, 14), None, (43, 58)]
    assert agree.locate_terms(answer, ["wrong", "wrong"]) == [(9, 14), (20, 25)]
    assert agree.locate_terms("crossed a\nline", ["crossed a line"]) == [(0, 14)]
    assert agree.locate_terms("don’t", ["don't"]) == [(0, 5)]


def test_term_agreement_counts_overlaps_both_ways():
    answer = "That was wrong, and wrong again: a serious breach of trust."
    hand = [["wrong", "wrong", "breach of trust"]]
    judge = [[(9, 14), (33, 49)]]  # the first "wrong" and "a serious breach", which overlaps "breach of trust"
    got = agree.term_agreement([answer], hand, judge)
    assert got == {"hand_terms": 3, "judge_terms": 2, "found": 2, "confirmed": 2, "recall": pytest.approx(2 / 3),
                   "precision": 1.0}


def test_agreement_places_lexicon_terms_by_their_offsets_and_other_judges_by_text():
    record = {"id": "X-1", "style_of_answer": "harsh", "answer": "You're not wrong to worry. But lying was wrong.",
              "scores": {"punitive_terms": ["lying", "wrong"], "therapeutic_terms": [], "empathizes_with_actor": False,
                         "severity_rating": 3, "blame_attribution": "full", "instructional_or_accusatory": False}}
    lexicon_reading = evaluate_text(record["answer"])
    assert lexicon_reading["punitive_terms"] == ["lying", "wrong"]
    exact = agree.agreement([record])["puni"]["terms"]
    assert (exact["found"], exact["confirmed"]) == (2, 2)
    # a judge returning the same strings, placed by text: its "wrong" lands on the first, negated occurrence,
    # and the hand-marked "wrong" then follows it there (an occurrence the judge marked is preferred)
    assert agree.locate_terms(record["answer"], ["wrong"]) == [(11, 16)]
    by_text = agree.agreement([record], judge=lambda answer: lexicon_reading)["puni"]["terms"]
    assert (by_text["found"], by_text["confirmed"]) == (2, 2)


def test_a_repeated_hand_term_is_placed_on_an_occurrence_the_judge_marked():
    answer = "Not wrong to ask; wrong to shout."
    assert agree.locate_terms(answer, ["wrong"], exact_case=True) == [(4, 9)]
    assert agree.locate_terms(answer, ["wrong"], exact_case=True, prefer=[(18, 23)]) == [(18, 23)]
    # the preference never moves a term onto text another term already took
    assert agree.locate_terms(answer, ["wrong", "wrong to shout"], prefer=[(18, 23)]) == [(4, 9), (18, 32)]


def _record(**changes) -> str:
    record = {"id": "X-1", "style_of_answer": "harsh", "answer": "That was wrong.",
              "scores": {"punitive_terms": ["wrong"], "therapeutic_terms": [], "empathizes_with_actor": False,
                         "severity_rating": 3, "blame_attribution": "full", "instructional_or_accusatory": True}}
    for key, value in changes.items():
        if key in record["scores"]:
            record["scores"][key] = value
        else:
            record[key] = value
    return json.dumps(record)


@pytest.mark.parametrize("line, message", [
    ("{not json", r"answers.jsonl:1: not JSON"),
    (_record(severity_rating=7), r"answers.jsonl:1: scores.severity_rating"),
    (_record(blame_attribution="mostly"), r"answers.jsonl:1: scores.blame_attribution"),
    (_record(punitive_terms=["cruel"]), r"answers.jsonl:1: scores.punitive_terms: \['cruel'\] do not occur"),
    (_record(style_of_answer="angry"), r"answers.jsonl:1: style_of_answer 'angry'"),
    (json.dumps({"id": "X-1", "answer": "x"}), r"answers.jsonl:1: missing field\(s\) style_of_answer, scores"),
])
def test_bad_records_are_rejected_naming_file_line_and_field(tmp_path, line, message):
    path = tmp_path / "answers.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(agree.ScoredAnswerError, match=message):
        agree.load_scored(path)


def test_duplicate_ids_are_rejected(tmp_path):
    path = tmp_path / "answers.jsonl"
    path.write_text(_record() + "\n" + _record() + "\n", encoding="utf-8")
    with pytest.raises(agree.ScoredAnswerError, match=r"answers.jsonl:2: duplicate id 'X-1'"):
        agree.load_scored(path)


def _json_roundtrip(value):
    return json.loads(json.dumps(value))


@pytest.mark.parametrize("published, reference", [
    (LEXICONS / "agreement.json", agree.REFERENCE),
    (LEXICONS / "agreement_dev.json", agree.DEVELOPMENT),
])
def test_published_agreement_is_what_the_lexicon_measures_now(published, reference):
    stored = json.loads(published.read_text(encoding="utf-8"))
    assert stored["reference"]["path"] == reference.relative_to(ROOT).as_posix()
    fresh = agree.measure(reference)
    assert stored["reference"]["sha256"] == fresh["reference"]["sha256"], "the hand-scored file changed: re-measure"
    assert stored["lexicon"]["version"] == fresh["lexicon"]["version"], (
        "the lexicon changed since the figures were published: "
        "run python -m gama_utils.judge.lexicon_agreement --write")
    assert stored["agreement"] == _json_roundtrip(fresh["agreement"])


def _recorded(value, digits: int = 4):
    """A published figure as the history recorded it: floats rounded to 4 decimals, without the later intervals."""
    if isinstance(value, dict):
        return {k: _recorded(v) for k, v in value.items() if k not in ("ci", "intervals")}
    return round(value, digits) if isinstance(value, float) else value


def test_the_held_out_record_ends_with_the_published_figures():
    """The history (a record kept at 4 decimals, before intervals were added) ends with today's point figures."""
    history = json.loads((LEXICONS / "agreement_history.json").read_text(encoding="utf-8"))
    published = json.loads((LEXICONS / "agreement.json").read_text(encoding="utf-8"))
    assert history["reference_sha256"] == published["reference"]["sha256"]
    assert history["measurements"][-1]["terms_placed"] == "offsets"
    assert history["measurements"][-1]["agreement"] == _recorded(published["agreement"])


def test_the_lexicon_orders_every_harsh_and_gentle_development_answer_like_the_hand_scores():
    # issue 16: on harsh vs gentle answers the old lexicon got 0 of 9 Instr./Full-Bl. comparisons right
    order = agree.agreement(agree.load_scored(agree.DEVELOPMENT))["ordering"]
    for metric in ("puni", "instr", "full_bl"):
        assert order[metric]["pairs"] > 0
        assert order[metric]["same"] == order[metric]["pairs"] - order[metric]["hand_tied"], metric


def test_term_spans_are_the_offsets_of_the_returned_terms():
    answer = "Honestly? You lied to her, and “that’s fine” is not what I’d say. It makes sense you panicked."
    punitive, therapeutic = term_spans(answer)
    reading = evaluate_text(answer)
    assert [answer[a:b] for a, b in punitive] == reading["punitive_terms"] == ["lied"]
    assert [answer[a:b] for a, b in therapeutic] == reading["therapeutic_terms"] == ["It makes sense", "panicked"]


def test_cli_writes_the_measurement_it_prints(tmp_path, capsys):
    out = tmp_path / "agreement.json"
    assert agree.main(["--reference", str(agree.DEVELOPMENT), "--write", str(out)]) == 0
    printed = capsys.readouterr().out
    written = json.loads(out.read_text(encoding="utf-8"))
    assert written["agreement"] == _json_roundtrip(agree.measure(agree.DEVELOPMENT)["agreement"])
    puni = written["agreement"]["puni"]
    low, high = puni["ci"]["pearson_r"]
    assert f"Puni. | Pearson {puni['pearson_r']:.2f} [{low:.2f}, {high:.2f}]" in printed
    assert not math.isnan(written["agreement"]["sev"]["mae"])


AGREE_HAND = [0, 1, 2, 3, 4, 2, 1, 0, 5, 3, 2, 2]
AGREE_JUDGE = [0, 2, 2, 3, 5, 1, 1, 1, 4, 3, 3, 2]


def test_count_intervals_are_the_percentiles_of_scipys_figures_on_the_same_resamples():
    """The resamples rebuilt here (resamples(n, 300, seed 4)) and each figure recomputed by scipy, one by one."""
    got = agree.count_agreement(AGREE_HAND, AGREE_JUDGE, n_boot=300, seed=4)
    rows = agree.resamples(len(AGREE_HAND), 300, 4)
    h, j = np.array(AGREE_HAND, float)[rows], np.array(AGREE_JUDGE, float)[rows]
    pearson = [pearsonr(a, b)[0] for a, b in zip(h, j) if a.std() > 0 and b.std() > 0]
    spearman = [spearmanr(a, b)[0] for a, b in zip(h, j) if a.std() > 0 and b.std() > 0]
    assert got["ci"]["pearson_r"] == pytest.approx(list(np.percentile(pearson, [2.5, 97.5])))
    assert got["ci"]["spearman_r"] == pytest.approx(list(np.percentile(spearman, [2.5, 97.5])))
    assert got["ci"]["mean_abs_diff"] == pytest.approx(list(np.percentile(np.abs(j - h).mean(axis=1), [2.5, 97.5])))
    low, high = got["ci"]["pearson_r"]
    assert low <= got["pearson_r"] <= high


def test_kappa_intervals_are_sklearns_kappa_on_the_same_resamples():
    hand = ["full", "full", "partial", "none", "full", "none", "partial", "full", "none", "full"]
    judge = ["full", "partial", "partial", "full", "full", "none", "none", "full", "none", "partial"]
    got = agree.blame_agreement(hand, judge, n_boot=200, seed=2)
    rows = agree.resamples(len(hand), 200, 2)
    kappas = []
    for row in rows:
        h, j = [hand[i] for i in row], [judge[i] for i in row]
        if len(set(h) | set(j)) > 1:
            kappas.append(cohen_kappa_score(h, j, labels=agree.BLAME))
    assert got["ci"]["kappa"] == pytest.approx(list(np.percentile(kappas, [2.5, 97.5])))


def test_share_intervals_are_clopper_pearson():
    """Accuracy 9/12 on a yes/no metric: scipy's exact binomial interval."""
    hand = [True] * 6 + [False] * 6
    judge = [True] * 5 + [False] + [False] * 4 + [True] * 2
    got = agree.rate_agreement(hand, judge, n_boot=50)
    exact = binomtest(9, 12).proportion_ci(0.95, method="exact")
    assert got["accuracy"] == 0.75 and got["ci"]["accuracy"] == pytest.approx([exact.low, exact.high])


def test_published_figures_carry_intervals_around_them():
    published = json.loads((LEXICONS / "agreement.json").read_text(encoding="utf-8"))["agreement"]
    for key, names in (("puni", ("pearson_r", "spearman_r", "mean_abs_diff")), ("sev", ("exact", "within_1", "mae")),
                       ("instr", ("accuracy", "kappa")), ("full_bl", ("accuracy", "kappa")),
                       ("blame", ("accuracy", "kappa"))):
        for name in names:
            low, high = published[key]["ci"][name]
            assert low <= published[key][name] <= high, (key, name)
