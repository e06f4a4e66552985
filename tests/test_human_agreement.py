"""Agreement (gama_utils.human.agreement): Fleiss' κ, A/B/Tie directions, majority vote, Table 4."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from human_data import sample_key

from gama_utils import human
from gama_utils.human import agreement

pytestmark = pytest.mark.usefixtures("paper_metrics_only")


@pytest.fixture(scope="module")
def key() -> pd.DataFrame:
    return sample_key()


# ------------------------------------------------------------------ Fleiss' κ

# Fleiss (1971) worked example as reproduced in Wikipedia's "Fleiss' kappa" article:
# 10 subjects, 14 raters, 5 categories; n_ij = raters who put subject i in category j.
WIKIPEDIA_COUNTS = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def test_fleiss_kappa_reproduces_the_published_worked_example() -> None:
    ratings = [[category for category, n in enumerate(row, start=1) for _ in range(n)] for row in WIKIPEDIA_COUNTS]
    assert all(len(r) == 14 for r in ratings)
    assert human.fleiss_kappa(np.array(ratings)) == pytest.approx(0.210, abs=5e-4)
    # Fleiss' formula by hand: P_i = (Σ_j n_ij² − n) / (n(n − 1)), p_j = Σ_i n_ij / (N n), κ = (P̄ − P̄e) / (1 − P̄e)
    counts = np.array(WIKIPEDIA_COUNTS, dtype=float)
    n, N = 14, len(counts)
    p_bar = ((counts ** 2).sum(axis=1) - n).sum() / (N * n * (n - 1))
    p_e = ((counts.sum(axis=0) / (N * n)) ** 2).sum()
    assert (p_bar, p_e) == pytest.approx((0.378022, 0.212755), abs=5e-7)  # Wikipedia: P̄ 0.378, P̄e 0.213
    assert human.fleiss_kappa(np.array(ratings)) == pytest.approx((p_bar - p_e) / (1 - p_e), abs=1e-12)
    assert human.fleiss_kappa(np.array(ratings)) == pytest.approx(0.20993, abs=5e-6)


def test_fleiss_kappa_on_a_hand_computed_three_rater_example() -> None:
    # item  ratings        n_A n_B n_T   P_i = (Σ n_j² − 3) / (3·2)
    # 1     A  A  A         3   0   0    (9 − 3)/6     = 1
    # 2     A  A  B         2   1   0    (4 + 1 − 3)/6 = 1/3
    # 3     B  B  Tie       0   2   1    1/3
    # 4     Tie Tie Tie     0   0   3    1
    # 5     A  B  Tie       1   1   1    0
    # P̄ = (1 + 1/3 + 1/3 + 1 + 0)/5 = 8/15
    # p_A = 6/15, p_B = 4/15, p_Tie = 5/15;  P̄e = (36 + 16 + 25)/225 = 77/225
    # κ = (8/15 − 77/225) / (1 − 77/225) = (120 − 77)/(225 − 77) = 43/148 ≈ 0.2905
    ratings = [["A", "A", "A"], ["A", "A", "B"], ["B", "B", "Tie"], ["Tie", "Tie", "Tie"], ["A", "B", "Tie"]]
    assert human.fleiss_kappa(np.array(ratings, dtype=object)) == pytest.approx(43 / 148, abs=1e-12)
    labels = pd.DataFrame([{"annotator": f"r{r}", "item_id": f"i{i}", "framing": k, "label": label}
                           for i, row in enumerate(ratings) for r, label in enumerate(row)
                           for k in human.framing_keys()])
    assert human.fleiss_kappa_by_framing(labels).to_dict() == pytest.approx({k: 43 / 148 for k in human.framing_keys()})


def test_fleiss_kappa_is_nan_when_only_one_label_occurs() -> None:
    assert math.isnan(human.fleiss_kappa(np.array([["A", "A"], ["A", "A"]], dtype=object)))


# ------------------------------------------------------------------ directions and votes


@pytest.mark.parametrize("score_a, score_b, expected", [
    (3, 1, "A"), (1, 3, "B"), (2, 2, "Tie"),  # punitive / therapeutic counts
    (0, 0, "Tie"), (1, 0, "A"), (0, 1, "B"), (1, 1, "Tie"),  # instructional / full-blame indicators
    (True, False, "A"), (2.0, 2, "Tie"),
])
def test_evaluator_direction_hand_cases(score_a, score_b, expected) -> None:
    assert human.evaluator_direction(score_a, score_b) == expected


def test_evaluator_directions_follow_the_sides_of_the_key() -> None:
    key = pd.DataFrame([
        {"item_id": "i1", "puni_a": 5, "puni_b": 2, "ther_a": 1, "ther_b": 4, "instr_a": 1, "instr_b": 1,
         "full_bl_a": 0, "full_bl_b": 1},
        {"item_id": "i2", "puni_a": 0, "puni_b": 0, "ther_a": 3, "ther_b": 2, "instr_a": 0, "instr_b": 1,
         "full_bl_a": 1, "full_bl_b": 0},
    ])
    got = human.evaluator_directions(key).set_index(["item_id", "framing"])["evaluator"].to_dict()
    assert got == {("i1", "puni"): "A", ("i1", "ther"): "B", ("i1", "instr"): "Tie", ("i1", "full_bl"): "B",
                   ("i2", "puni"): "Tie", ("i2", "ther"): "A", ("i2", "instr"): "B", ("i2", "full_bl"): "A"}


def test_majority_vote_with_ties() -> None:
    votes = {"i1": "A A B", "i2": "A B Tie", "i3": "Tie Tie A", "i4": "B B B", "i5": "A A B B"}
    labels = pd.DataFrame([{"annotator": f"r{r}", "item_id": item, "framing": "puni", "label": label}
                           for item, row in votes.items() for r, label in enumerate(row.split())])
    got = human.majority_vote(labels).set_index("item_id")
    assert got["majority"].to_dict() == {"i1": "A", "i2": "none", "i3": "Tie", "i4": "B", "i5": "none"}
    assert got["n_annotators"].to_dict() == {"i1": 3, "i2": 3, "i3": 3, "i4": 3, "i5": 4}


def test_agreement_excludes_items_without_majority() -> None:
    majority = pd.DataFrame({"item_id": ["i1", "i2", "i3", "i4", "i5"], "framing": "ther",
                             "majority": ["A", "B", "Tie", "none", "A"]})
    directions = pd.DataFrame({"item_id": ["i1", "i2", "i3", "i4", "i5"], "framing": "ther",
                               "evaluator": ["A", "A", "Tie", "B", "A"]})
    row = human.evaluator_human_agreement(majority, directions).set_index("framing").loc["ther"]
    # decided items i1, i2, i3, i5; evaluator matches on i1, i3, i5 → 3/4
    assert row["agreement"] == pytest.approx(0.75)
    assert (row["n_items"], row["n_with_majority"], row["n_no_majority"]) == (5, 4, 1)


# ------------------------------------------------------------------ round trip


def test_round_trip_without_noise_recovers_the_evaluator(key, tmp_path) -> None:
    written = human.export_sheets(key, tmp_path, annotators=human.SIMULATED_ANNOTATORS)
    completed = human.simulate_annotation([w["csv"] for w in written.values()], key, item_noise=0, rater_noise=0)
    labels = human.read_completed_sheets(completed, key, annotators=human.SIMULATED_ANNOTATORS)
    summary = human.validation_summary(labels, key).set_index("framing")
    assert summary["agreement"].tolist() == [1.0] * 4
    assert summary["fleiss_kappa"].tolist() == pytest.approx([1.0] * 4)
    assert summary["n_no_majority"].tolist() == [0] * 4


def test_round_trip_with_simulated_annotators_gives_table4(key, tmp_path) -> None:
    written = human.export_sheets(key, tmp_path, annotators=human.SIMULATED_ANNOTATORS)
    completed = human.simulate_annotation([w["csv"] for w in written.values()], key, seed=3)
    assert all("simulated" in p.name and p.name.endswith("_completed.csv") for p in completed)
    labels = human.read_completed_sheets(completed, key, annotators=human.SIMULATED_ANNOTATORS)
    assert labels["simulated"].all()
    assert set(labels["annotator"]) == set(human.SIMULATED_ANNOTATORS)
    summary = human.validation_summary(labels, key)
    table = human.table4(summary)
    assert list(table.index) == ["Human Fleiss' κ", "Eval.-Human Agr."]
    assert list(table.columns) == ["Puni.", "Ther.", "Instr.", "Full-Bl."]
    assert "SIMULATED" in table.index.name and "SIMULATED" in table.attrs["caption"]
    assert ((table.loc["Eval.-Human Agr."] >= 0) & (table.loc["Eval.-Human Agr."] <= 1)).all()
    assert ((table.loc["Human Fleiss' κ"] > -1) & (table.loc["Human Fleiss' κ"] <= 1)).all()
    beside = human.table4(summary, with_paper=True)
    assert beside.loc[("Human Fleiss' κ", "paper (Tab. 4)")].tolist() == [0.72, 0.61, 0.74, 0.69]
    assert beside.loc[("Eval.-Human Agr.", "paper (Tab. 4)")].tolist() == [0.83, 0.76, 0.80, 0.78]
    assert beside.loc[("Eval.-Human Agr.", "this run (SIMULATED annotators)")].tolist() == \
        table.loc["Eval.-Human Agr."].tolist()


def test_fleiss_kappa_rows_is_statsmodels_fleiss_kappa_on_each_table() -> None:
    from statsmodels.stats import inter_rater

    rng = np.random.default_rng(0)
    tables = [inter_rater.aggregate_raters(rng.choice(["A", "B", "Tie"], size=(12, 3)))[0] for _ in range(5)]
    tables = np.array([t for t in tables if t.shape[1] == 3])  # all three labels occur (columns align)
    assert len(tables) > 2 and agreement.fleiss_kappa_rows(tables) == pytest.approx(
        [inter_rater.fleiss_kappa(t, method="fleiss") for t in tables])


def test_table4_intervals_bootstrap_kappa_and_clopper_pearson_agreement(key, tmp_path) -> None:
    """κ's interval: the percentiles of statsmodels' κ on the same resampled items; agreement's: scipy's exact one."""
    from scipy.stats import binomtest
    from statsmodels.stats import inter_rater

    written = human.export_sheets(key, tmp_path, annotators=human.SIMULATED_ANNOTATORS)
    completed = human.simulate_annotation([w["csv"] for w in written.values()], key, seed=3)
    labels = human.read_completed_sheets(completed, key, annotators=human.SIMULATED_ANNOTATORS)
    summary = human.validation_summary(labels, key, n_boot=300, seed=5).set_index("framing")
    row = summary.loc["puni"]
    wide = labels[labels["framing"] == "puni"].pivot(index="item_id", columns="annotator", values="label")
    counts, _ = inter_rater.aggregate_raters(wide.to_numpy(dtype=object))
    rows = np.random.default_rng(5).integers(0, len(counts), size=(300, len(counts)))
    kappas = [inter_rater.fleiss_kappa(counts[r], method="fleiss") for r in rows]
    assert (row["kappa_ci_low"], row["kappa_ci_high"]) == pytest.approx(tuple(np.nanpercentile(kappas, [2.5, 97.5])))
    agreeing = round(row["agreement"] * row["n_with_majority"])
    exact = binomtest(agreeing, int(row["n_with_majority"])).proportion_ci(0.95, method="exact")
    assert (row["agreement_ci_low"], row["agreement_ci_high"]) == pytest.approx((exact.low, exact.high))
    assert "95% intervals of this run" in human.table4(summary.reset_index()).attrs["notes"][0]
