"""Paired gaps from evaluations (gama_utils.analysis.gaps) on small frames whose answers are worked out by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gama_utils.analysis import gaps, stats
from gama_utils.core import metrics
from gama_utils.core.schema import GAPS, SchemaError, evaluations_columns

pytestmark = pytest.mark.usefixtures("paper_metrics_only")

# Model "M", intimate track, pairs p0-p6 (all valid), p7 (female evaluation invalid),
# p8 (male severity missing although valid).
#   punitive_count male   1 5 2 0 3 1 6 | p7: 2 | p8: 1
#   punitive_count female 4 4 6 7 8 9 4 | p7: 9 | p8: 1
#   d = female − male     3 −1 4 7 5 8 −2  (p8: 0)
# Puni. over the 8 usable pairs (p0-p6, p8): male 19/8, female 43/8, Δ = 24/8 = 3.
#   Nonzero d are twice the "seven pairs" sample of test_stats (p8's zero is dropped), so the
#   ranks, T+ = 25, T− = 3, exact p = 10/128 and r = 22/28 carry over.
# Full-Bl. male 1 1 1 1 0 1 1 (p8: 1), female 0 1 0 1 0 0 1 (p8: 1): d = −1 0 −1 0 0 −1 0 0
#   Over 8 pairs: male 7/8 = 87.5%, female 4/8 = 50%, Δ = −37.5 pp.
#   Three nonzero d, tied |d| (mid-rank 2 each), all negative: of the 2^3 sign patterns, only
#   all-negative and all-positive are as extreme → exact permutation p = 2/8 = 0.25; r = −1.
# Sev. has p8 missing for the male arm, so 7 pairs: male 3 3 3 3 3 3 3, female 2 3 2 3 3 2 3:
#   Δ = −3/7.
MALE = {"punitive_count": [1, 5, 2, 0, 3, 1, 6, 2, 1], "full_blame": [1, 1, 1, 1, 0, 1, 1, 1, 1],
        "severity_rating": [3, 3, 3, 3, 3, 3, 3, 3, np.nan]}
FEMALE = {"punitive_count": [4, 4, 6, 7, 8, 9, 4, 9, 1], "full_blame": [0, 1, 0, 1, 0, 0, 1, 0, 1],
          "severity_rating": [2, 3, 2, 3, 3, 2, 3, 3, 3]}
DIMENSIONS = ["financial_control", "privacy_violation"] * 4 + ["financial_control"]


def default_values() -> dict[str, object]:
    """One response's default value of every registered metric's evaluations columns (from the registry)."""
    values: dict[str, object] = {}
    for m in metrics.metrics():
        if m.field.type == "terms":
            values[m.field.name] = None
        if m.field.type == "choice":
            values[m.field.name] = m.field.choices[len(m.field.choices) // 2]
        values[m.column] = {"count": 1, "rating": 3}.get(m.kind, 0)
    return values


def evaluation_rows(model: str, arm: str, values: dict[str, list], track: str = "intimate",
                    invalid: tuple[int, ...] = (), sample: int = 0, pair_ids: list[str] | None = None,
                    simulated: bool = False) -> pd.DataFrame:
    """Schema-complete evaluation rows for every registered metric; metric columns not given hold
    `default_values()` (a count of 1, a rating of 3, a rate of 0)."""
    n = len(next(iter(values.values())))
    pair_ids = pair_ids or [f"p{i}" for i in range(n)]
    frame = pd.DataFrame({
        "pair_id": pair_ids, "track": track,
        "dimension": DIMENSIONS[:n] if n <= len(DIMENSIONS) else "financial_control",
        "severity": "L1", "style": "matter_of_fact", "model": model, "arm": arm, "sample": sample,
        "evaluator": "Gemini-3-Pro", "blind": True, "valid": [i not in invalid for i in range(n)],
        **default_values(), "invalid_reason": [("schema" if i in invalid else None) for i in range(n)],
        "simulated": simulated,
    })
    for column, column_values in values.items():
        frame[column] = column_values
    return frame[list(evaluations_columns())]


@pytest.fixture
def hand_frame() -> pd.DataFrame:
    return pd.concat([evaluation_rows("M", "male", MALE), evaluation_rows("M", "female", FEMALE, invalid=(7,))],
                     ignore_index=True)


def cell(frame: pd.DataFrame, metric: str, comparison: str = "female-male", **keys) -> pd.Series:
    rows = frame[(frame["metric"] == metric) & (frame["comparison"] == comparison)]
    for key, value in keys.items():
        rows = rows[rows[key] == value]
    assert len(rows) == 1, rows
    return rows.iloc[0]


def test_output_schema(hand_frame):
    result = gaps.paired_gaps(hand_frame, n_boot=200)
    assert set(GAPS) <= set(result.columns) and "comparison" in result.columns
    assert len(result) == len(metrics.metric_keys())  # one model × one track × every registered metric


def test_counts_means_delta_and_exclusions_by_hand(hand_frame):
    row = cell(gaps.paired_gaps(hand_frame, n_boot=200), "puni")
    assert (row["male"], row["female"], row["delta"]) == (pytest.approx(19 / 8), pytest.approx(43 / 8), 3.0)
    assert (row["n_pairs"], row["n_excluded"]) == (8, 1)


def test_wilcoxon_and_effect_size_by_hand(hand_frame):
    row = cell(gaps.paired_gaps(hand_frame, n_boot=200), "puni")
    assert row["p_value"] == pytest.approx(10 / 128, abs=1e-12)
    assert row["effect_size"] == pytest.approx(22 / 28)


def test_rates_in_percent_and_points_by_hand(hand_frame):
    row = cell(gaps.paired_gaps(hand_frame, n_boot=200), "full_bl")
    assert (row["male"], row["female"], row["delta"]) == (87.5, 50.0, pytest.approx(-37.5))
    assert row["p_value"] == pytest.approx(0.25)
    assert row["effect_size"] == -1.0
    assert row["ci_low"] <= row["delta"] <= row["ci_high"] <= 0.0


def test_missing_metric_value_excludes_that_metric_only(hand_frame):
    result = gaps.paired_gaps(hand_frame, n_boot=200)
    sev = cell(result, "sev")
    assert (sev["n_pairs"], sev["n_excluded"], sev["delta"]) == (7, 2, pytest.approx(-3 / 7))
    assert cell(result, "puni")["n_excluded"] == 1


def test_holm_family_is_every_cell_of_the_call(hand_frame):
    result = gaps.paired_gaps(hand_frame, n_boot=200)
    assert result["p_holm"].to_numpy() == pytest.approx(stats.holm(result["p_value"].to_numpy()))


def test_samples_are_averaged_within_pair_and_arm_over_valid_ones():
    # Pair q0: male samples 2 and 4 → 3; female samples 1 and (invalid) 9 → 1; Δ = −2.
    # Pair q1: male 5 (one sample), female 5 → Δ = 0. Mean Δ over two pairs = −1.
    frame = pd.concat([
        evaluation_rows("S", "male", {"punitive_count": [2, 5]}, pair_ids=["q0", "q1"], sample=0),
        evaluation_rows("S", "male", {"punitive_count": [4]}, pair_ids=["q0"], sample=1),
        evaluation_rows("S", "female", {"punitive_count": [1, 5]}, pair_ids=["q0", "q1"], sample=0),
        evaluation_rows("S", "female", {"punitive_count": [9]}, pair_ids=["q0"], sample=1, invalid=(0,)),
    ], ignore_index=True)
    row = cell(gaps.paired_gaps(frame, n_boot=100), "puni")
    assert (row["male"], row["female"], row["delta"], row["n_pairs"]) == (4.0, 3.0, -1.0, 2)


def test_neutral_arm_compared_with_each_gender(hand_frame):
    # Neutral puni = male + 1 on every pair: neutral − male = +1 over the 9 pairs with both arms valid;
    # neutral − female over the 8 pairs where the female arm is valid: neutral mean (19 + 8)/8 = 27/8,
    # female 43/8 → Δ = −2.
    neutral = evaluation_rows("M", "neutral", {"punitive_count": [v + 1 for v in MALE["punitive_count"]]})
    result = gaps.paired_gaps(pd.concat([hand_frame, neutral], ignore_index=True), n_boot=200)
    assert set(result["comparison"]) == {"female-male", "neutral-male", "neutral-female"}
    neutral_male = cell(result, "puni", "neutral-male")
    assert (neutral_male["delta"], neutral_male["n_pairs"], neutral_male["p_value"]) == (1.0, 9, pytest.approx(
        stats.wilcoxon(np.ones(9))))
    assert np.isnan(neutral_male["female"])
    neutral_female = cell(result, "puni", "neutral-female")
    assert (neutral_female["delta"], neutral_female["neutral"], neutral_female["female"]) == (
        pytest.approx(-2.0), pytest.approx(27 / 8), pytest.approx(43 / 8))


def test_neutral_reference_and_stable_paper_holm(hand_frame):
    neutral = evaluation_rows("M", "neutral", {"punitive_count": [v + 1 for v in MALE["punitive_count"]]})
    with_neutral = pd.concat([hand_frame, neutral], ignore_index=True)
    result = gaps.paired_gaps(with_neutral, n_boot=200, reference_arm="neutral")
    assert set(result["comparison"]) == {"female-male", "female-neutral", "male-neutral"}
    assert cell(result, "puni", "male-neutral")["delta"] == -1.0
    # The Holm family is per comparison: the paper's female-male rows are the same with or without the neutral arm.
    paper_rows = result[result["comparison"] == "female-male"].reset_index(drop=True)
    alone = gaps.paired_gaps(hand_frame, n_boot=200)
    assert paper_rows["p_holm"].to_numpy() == pytest.approx(alone["p_holm"].to_numpy())
    assert paper_rows["ci_low"].to_numpy() == pytest.approx(alone["ci_low"].to_numpy())
    with pytest.raises(ValueError, match="reference_arm"):
        gaps.paired_gaps(hand_frame, reference_arm="female")


def test_bootstrap_is_reproducible_and_seeded(hand_frame):
    a = gaps.paired_gaps(hand_frame, n_boot=300, seed=5)
    b = gaps.paired_gaps(hand_frame, n_boot=300, seed=5)
    c = gaps.paired_gaps(hand_frame, n_boot=300, seed=6)
    assert a["ci_low"].tolist() == b["ci_low"].tolist()
    assert a["ci_low"].tolist() != c["ci_low"].tolist()


def test_stratified_gaps_split_the_pairs(hand_frame):
    # p0,p2,p4,p6,p8 are financial_control; p1,p3,p5,p7 privacy_violation (p7 excluded).
    # Puni. d by stratum: financial 3,4,5,−2,0 → Δ = 2; privacy −1,7,8 → Δ = 14/3.
    result = gaps.stratified_gaps(hand_frame, "dimension", n_boot=100)
    assert "dimension" in result.columns
    assert cell(result, "puni", dimension="financial_control")["delta"] == pytest.approx(2.0)
    privacy = cell(result, "puni", dimension="privacy_violation")
    assert (privacy["delta"], privacy["n_pairs"], privacy["n_excluded"]) == (pytest.approx(14 / 3), 3, 1)
    assert result["p_holm"].to_numpy() == pytest.approx(stats.holm(result["p_value"].to_numpy()))
    with pytest.raises(ValueError, match="stratum"):
        gaps.stratified_gaps(hand_frame, "model")


def test_model_average_and_simulated_flag(hand_frame):
    # Model "N" has every female punitive count 2 below the male one: Δ = −2. Average with M's +3 → +0.5.
    other = pd.concat([evaluation_rows("N", "male", {"punitive_count": [5, 5, 5]}, simulated=True),
                       evaluation_rows("N", "female", {"punitive_count": [3, 3, 3]}, simulated=True)])
    result = gaps.paired_gaps(pd.concat([hand_frame, other], ignore_index=True), n_boot=100)
    simulated = result.groupby("model")["simulated"].agg(["all", "any"])
    assert simulated.loc["N", "all"] and not simulated.loc["M", "any"]
    average = gaps.model_average(result)
    puni = average[(average["metric"] == "puni")].iloc[0]
    assert (puni["delta"], puni["n_models"], puni["simulated"]) == (pytest.approx(0.5), 2, True)


def test_per_pair_frame(hand_frame):
    long = gaps.per_pair(hand_frame)
    row = long[(long["pair_id"] == "p0") & (long["metric"] == "full_bl")].iloc[0]
    assert (row["male"], row["female"], row["dimension"]) == (100.0, 0.0, "financial_control")
    p7 = long[(long["pair_id"] == "p7") & (long["metric"] == "puni")].iloc[0]
    assert p7["male"] == 2.0 and np.isnan(p7["female"])


def test_exclusions_report_invalid_evaluations(hand_frame):
    report = gaps.exclusions(hand_frame)
    assert report.to_dict("records") == [{"model": "M", "track": "intimate", "arm": "female",
                                          "invalid_reason": "schema", "n_invalid": 1, "n_evaluations": 9}]


def test_errors_name_the_bad_row_and_field(hand_frame):
    bad_arm = hand_frame.copy()
    bad_arm.loc[3, "arm"] = "other"
    with pytest.raises(ValueError, match=r"row 3: arm='other'"):
        gaps.paired_gaps(bad_arm)
    bad_value = hand_frame.copy().astype({"punitive_count": object})
    bad_value.loc[4, "punitive_count"] = "many"
    with pytest.raises(ValueError, match=r"row 4 .*punitive_count='many'"):
        gaps.paired_gaps(bad_value)
    with pytest.raises(SchemaError, match="full_blame"):
        gaps.paired_gaps(hand_frame.drop(columns="full_blame"))
    with pytest.raises(ValueError, match="no 'female' arm"):
        gaps.paired_gaps(hand_frame[hand_frame["arm"] == "male"])


def test_a_model_missing_an_arm_is_reported_and_left_out(hand_frame):
    lonely = evaluation_rows("Z", "male", MALE)
    with pytest.warns(UserWarning, match="'model': 'Z'.*lacks the male or the female arm"):
        result = gaps.paired_gaps(pd.concat([hand_frame, lonely], ignore_index=True), n_boot=50)
    assert set(result["model"]) == {"M"}


def test_two_evaluators_need_to_be_split(hand_frame):
    second = hand_frame.assign(evaluator="GPT-5.4")
    both = pd.concat([hand_frame, second], ignore_index=True)
    with pytest.raises(ValueError, match="mix evaluators"):
        gaps.paired_gaps(both)
    result = gaps.paired_gaps(both, by=("evaluator",), n_boot=100)
    assert sorted(result["evaluator"].unique()) == ["GPT-5.4", "Gemini-3-Pro"]
    assert cell(result, "puni", evaluator="GPT-5.4")["delta"] == pytest.approx(3.0)


def test_mixed_effects_estimate_equals_delta_on_balanced_pairs():
    # Three models on the same 30 scenarios, every pair complete: the REML arm effect of a balanced
    # paired design is the mean difference, which paired_gaps reports as Δ.
    rng = np.random.default_rng(0)
    scenario = rng.normal(0, 2, 30)
    frames = []
    for model, shift in (("A", -1.0), ("B", 0.0), ("C", 2.0)):
        male = np.rint(6 + scenario + rng.normal(0, 1, 30))
        female = np.rint(6 + shift + scenario + rng.normal(0, 1, 30))
        frames.append(evaluation_rows(model, "male", {"punitive_count": male}))
        frames.append(evaluation_rows(model, "female", {"punitive_count": female}))
    frame = pd.concat(frames, ignore_index=True)
    mixed = gaps.mixed_effects_gaps(frame, metrics=("puni",)).set_index("model")
    delta = gaps.paired_gaps(frame, n_boot=50, metrics=("puni",)).set_index("model")["delta"]
    assert mixed["estimate"].to_numpy() == pytest.approx(delta.loc[mixed.index].to_numpy(), abs=1e-4)
    assert (mixed["ci_low"] < mixed["estimate"]).all() and (mixed["estimate"] < mixed["ci_high"]).all()
    with pytest.raises(ValueError, match="rate"):
        gaps.mixed_effects_gaps(frame, metrics=("full_bl",))


def synthetic(seed: int, gap: float, n_pairs: int = 150) -> pd.DataFrame:
    """Two models × two tracks; female Puni. shifted by `gap` terms, every other metric without a gap."""
    rng = np.random.default_rng(seed)
    frames = []
    for model in ("A", "B"):
        for track in ("intimate", "public"):
            ids = [f"{track}{i}" for i in range(n_pairs)]
            for arm, shift in (("male", 0.0), ("female", gap)):
                frames.append(evaluation_rows(model, arm, {
                    "punitive_count": rng.poisson(np.clip(5 + shift, 0.1, None), n_pairs),
                    "therapeutic_count": rng.poisson(3, n_pairs),
                    "severity_rating": rng.integers(1, 6, n_pairs),
                    "empathizes_with_actor": rng.integers(0, 2, n_pairs),
                    "instructional": rng.integers(0, 2, n_pairs),
                    "full_blame": rng.integers(0, 2, n_pairs)}, track=track, pair_ids=ids))
    return pd.concat(frames, ignore_index=True)


def test_planted_gap_is_recovered():
    result = gaps.paired_gaps(synthetic(1, gap=-2.0), n_boot=500)
    puni = result[result["metric"] == "puni"]
    assert ((puni["ci_low"] <= -2.0) & (-2.0 <= puni["ci_high"])).all()
    assert (puni["p_holm"] < 0.05).all()


def test_zero_gap_rarely_gives_a_holm_significant_cell():
    # Holm keeps the family-wise error at 5% over the 24 cells of a call, so at most 1 of 10 seeds
    # may show any significant cell.
    significant = [(gaps.paired_gaps(synthetic(seed, gap=0.0), n_boot=20)["p_holm"] < 0.05).any()
                   for seed in range(10)]
    assert sum(significant) <= 1


# ---------------------------------------------------------------- what the saved gaps state (issue 16.3, 16.5)

def test_sensitivity_columns_by_hand_and_against_scipy(hand_frame):
    # Puni. d over the 8 usable pairs: 3 −1 4 7 5 8 −2 0. |d| ranked with the zero: 0→1, 1→2, 2→3, 3→4, 4→5,
    # 5→6, 7→7, 8→8; R+ = 4 + 5 + 7 + 6 + 8 = 30, R− = 2 + 3 = 5 → r with ties = 25/36 (untied: 22/28).
    from scipy import stats as scipy_stats

    result = gaps.paired_gaps(hand_frame, n_boot=200)
    row = cell(result, "puni")
    d = np.array([3, -1, 4, 7, 5, 8, -2, 0], dtype=float)
    assert row["effect_size_ties"] == pytest.approx(25 / 36)
    assert row["n_nonzero"] == 7 and row["sd_diff"] == pytest.approx(d.std(ddof=1))
    assert row["p_zsplit"] == pytest.approx(scipy_stats.wilcoxon(d, zero_method="zsplit").pvalue, rel=1e-12)
    assert result["p_holm_zsplit"].to_numpy() == pytest.approx(stats.holm(result["p_zsplit"].to_numpy()))
    assert (result["holm_family_size"] == 6).all()
    assert "Holm step-down over the holm_family_size p-values of the female-male rows" in row["method"]
    assert "zero differences dropped" in row["method"] and "Kerby 2014" in row["method"]


def test_method_notes_count_the_holm_family_and_the_zsplit_flips():
    # Three cells: the first is significant after Holm only with zeros dropped (a flip), the second under
    # both, the third under neither → 1 flip of 3 decisions, family of 3.
    frame = pd.DataFrame({"model": ["A", "A", "B"], "track": "intimate", "metric": ["puni", "instr", "puni"],
                          "comparison": "female-male", "p_value": [0.01, 0.001, 0.5], "p_holm": [0.02, 0.003, 0.5],
                          "p_zsplit": [0.04, 0.001, 0.6], "p_holm_zsplit": [0.08, 0.003, 0.6],
                          "holm_family_size": 3})
    notes = " ".join(gaps.method_notes(frame))
    assert "all 3 model × track × metric cells of the female-male comparison" in notes
    assert "changes 1 of 3 Holm decisions at 0.05" in notes
    assert "Emp.-Agg., Instr., Full-Bl." in notes and "Kerby 2014" in notes


def test_repeated_samples_are_tested_as_pair_means():
    # Three samples per prompt: the test and n_pairs are over the 12 pairs' sample means, never over the
    # 36 samples. Pair i: male samples i, i+1, i+2 (mean i+1); female samples i+2, i+3, i+7 (mean i+4) minus
    # a pair-specific 0..5 → d = 3 − (i mod 6).
    rows = []
    for sample in range(3):
        male = [i + sample for i in range(12)]
        female = [i + (2, 3, 7)[sample] - (i % 6) for i in range(12)]
        rows += [evaluation_rows("S", "male", {"punitive_count": male}, sample=sample,
                                 pair_ids=[f"s{i}" for i in range(12)]),
                 evaluation_rows("S", "female", {"punitive_count": female}, sample=sample,
                                 pair_ids=[f"s{i}" for i in range(12)])]
    row = cell(gaps.paired_gaps(pd.concat(rows, ignore_index=True), n_boot=100), "puni")
    d = np.array([3 - (i % 6) for i in range(12)], dtype=float)
    assert row["n_pairs"] == 12 and row["delta"] == pytest.approx(d.mean())
    assert row["p_value"] == pytest.approx(stats.wilcoxon(d)) and row["n_nonzero"] == 10
