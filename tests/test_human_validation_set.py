"""The validation set (gama_utils.human.validation_set): items, stratified sampling, A/B order, the key."""

from __future__ import annotations

import pandas as pd
import pytest
from human_data import MODELS, N_PAIRS, hostile_key, sample_key, synthetic_run

from gama_utils import human
from gama_utils.human import validation_set
from gama_utils.judge.blind import mask_gender

pytestmark = pytest.mark.usefixtures("paper_metrics_only")


@pytest.fixture(scope="module")
def run() -> tuple[pd.DataFrame, pd.DataFrame]:
    return synthetic_run()


@pytest.fixture(scope="module")
def key() -> pd.DataFrame:
    return sample_key()


def test_items_need_both_answers_and_valid_scores(run) -> None:
    responses, evaluations = run
    assert len(human.mirrored_items(responses, evaluations)) == len(MODELS) * 2 * N_PAIRS
    responses = responses.copy()
    evaluations = evaluations.copy()
    failed = (responses["pair_id"] == "pair-int-001") & (responses["model"] == "GPT-5.4") & (responses["arm"] == "male")
    responses.loc[failed, ["answer", "error"]] = [None, "timeout"]
    invalid = (evaluations["pair_id"] == "pair-pub-002") & (evaluations["model"] == "Qwen3.5") & \
        (evaluations["arm"] == "female")
    evaluations.loc[invalid, "valid"] = False
    items = human.mirrored_items(responses, evaluations)
    assert len(items) == len(MODELS) * 2 * N_PAIRS - 2
    assert ("GPT-5.4", "pair-int-001") not in set(zip(items["model"], items["pair_id"]))
    assert ("Qwen3.5", "pair-pub-002") not in set(zip(items["model"], items["pair_id"]))
    other = evaluations.assign(evaluator="GPT-5.4")
    with pytest.raises(ValueError, match="several evaluators"):
        human.mirrored_items(responses, pd.concat([evaluations, other]))
    assert len(human.mirrored_items(responses, pd.concat([evaluations, other]), evaluator="GPT-5.4")) == len(items)


def test_sampling_is_stratified_and_deterministic(run, key) -> None:
    assert len(key) == 16 and key["item_id"].is_unique
    assert key.groupby(["model", "track"]).size().to_dict() == {(m, t): 4 for m in MODELS
                                                                  for t in ("intimate", "public")}
    pd.testing.assert_frame_equal(key, human.validation_key(*run, n=16, seed=7))
    assert not key["pair_id"].equals(human.validation_key(*run, n=16, seed=8)["pair_id"])


def test_sampling_redistributes_draws_from_a_small_stratum(run) -> None:
    responses, evaluations = run
    small = ~((responses["model"] == "GPT-5.4") & (responses["track"] == "public")
              & (responses["pair_id"] != "pair-pub-000"))
    items = human.mirrored_items(responses[small], evaluations)
    sizes = human.sample_items(items, n=10, seed=1).groupby(["model", "track"]).size()
    assert sizes[("GPT-5.4", "public")] == 1
    assert sizes.sum() == 10 and sizes.drop(("GPT-5.4", "public")).max() - sizes.drop(("GPT-5.4", "public")).min() <= 1
    with pytest.raises(ValueError, match="only 19"):
        human.sample_items(items, n=20)


def test_ab_order_is_random_and_recoverable_from_the_key(run, key) -> None:
    responses, evaluations = run
    assert set(key["female_is"]) == {"A", "B"}
    assert (key["female_is"] == "A").sum() == 8
    answers = responses.set_index(["model", "pair_id", "arm"])["answer"]
    scores = evaluations.set_index(["model", "pair_id", "arm"])["punitive_count"]
    for row in key.itertuples():
        female_side, male_side = ("a", "b") if row.female_is == "A" else ("b", "a")
        assert getattr(row, f"answer_{female_side}") == mask_gender(answers[(row.model, row.pair_id, "female")])
        assert getattr(row, f"answer_{male_side}") == mask_gender(answers[(row.model, row.pair_id, "male")])
        assert getattr(row, f"puni_{female_side}") == scores[(row.model, row.pair_id, "female")]
        assert getattr(row, f"puni_{male_side}") == scores[(row.model, row.pair_id, "male")]


def test_key_round_trips_through_csv(key, tmp_path) -> None:
    back = human.read_key(human.write_key(key, tmp_path / "key.csv"))
    pd.testing.assert_frame_equal(back[list(human.key_columns())], key[list(human.key_columns())],
                                  check_dtype=False)


def test_the_key_keeps_hostile_answers_as_text(tmp_path) -> None:
    key = hostile_key()
    path = human.write_key(key, tmp_path / "key.csv")
    cells = pd.read_csv(path, dtype=str, keep_default_na=False)[["answer_a", "answer_b"]]
    assert not cells.map(lambda cell: cell.startswith(("=", "+", "-", "@", "\t", "\r"))).any().any()
    back = human.read_key(path)
    assert back["answer_a"].tolist() == key["answer_a"].tolist()
    assert back["answer_b"].tolist() == key["answer_b"].tolist()


def test_answers_with_gender_markers_left_after_masking_are_reported(run, monkeypatch) -> None:
    monkeypatch.setattr(validation_set, "mask_gender", lambda answer: answer)  # a masker that misses everything
    with pytest.warns(UserWarning, match=r"gender markers left after masking in 16 item\(s\), e\.g\. "
                                         r"\('item-001', \[.*'woman'.*\]\)"):
        human.validation_key(*run, n=16, seed=7)
