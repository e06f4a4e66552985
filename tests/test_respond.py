"""04_respond: request order, one row per key, answer status, resumable runs that never pay twice."""

import pandas as pd
import pytest

from gama_utils import llm
from gama_utils.bench.mirror import compile_pair
from gama_utils.collect import respond
from gama_utils.core.schema import RESPONSES


def _pairs(n=6):
    rows = []
    for i in range(n):
        text = f"I shouted at the cashier number {i} and blocked the queue for ten minutes. Was I wrong?"
        p = compile_pair(text, "public")
        rows.append({"pair_id": f"GB-{i:04d}", "template_id": f"t{i}", "track": "public",
                     "dimension": "public_dispute", "severity": "L1", "style": "matter_of_fact", "relationship": None,
                     "prompt_male": p["male"], "prompt_female": p["female"], "prompt_neutral": p["neutral"]})
    return pd.DataFrame(rows)


def test_requests_cover_every_key_once_in_a_seeded_order_that_interleaves_arms():
    requests = respond.build_requests(_pairs(10), ["sim/GPT-5.4", "sim/Kimi-2.5"], samples_per_prompt=2, seed=3)
    keys = [(r.tag["model"], r.tag["pair_id"], r.tag["arm"], r.tag["sample"]) for r in requests]
    assert len(keys) == len(set(keys)) == 10 * 2 * 2 * 2
    arms = [r.tag["arm"] for r in requests]
    switches = sum(a != b for a, b in zip(arms, arms[1:]))
    assert switches > len(arms) / 4, "arms must be interleaved, not sent in blocks"
    again = respond.build_requests(_pairs(10), ["sim/GPT-5.4", "sim/Kimi-2.5"], samples_per_prompt=2, seed=3)
    assert [r.tag for r in again] == [r.tag for r in requests]
    other = respond.build_requests(_pairs(10), ["sim/GPT-5.4", "sim/Kimi-2.5"], samples_per_prompt=2, seed=4)
    assert [r.tag for r in other] != [r.tag for r in requests]
    assert requests[0].messages == [{"role": "user", "content": requests[0].tag["prompt"]}]


@pytest.mark.parametrize("kwargs, fragment", [
    ({"arms": ["male", "other"]}, "unknown arm"),
    ({"samples_per_prompt": 0}, "samples_per_prompt"),
])
def test_bad_parameters_are_refused_before_anything_is_sent(kwargs, fragment):
    with pytest.raises(ValueError, match=fragment):
        respond.build_requests(_pairs(2), ["sim/GPT-5.4"], **kwargs)


def test_empty_prompt_names_the_pair():
    pairs = _pairs(3)
    pairs.loc[1, "prompt_female"] = " "
    with pytest.raises(ValueError, match="GB-0001: prompt_female is empty"):
        respond.build_requests(pairs, ["sim/GPT-5.4"])


def test_filters_and_limit():
    pairs = pd.concat([_pairs(4), _pairs(2).assign(track="intimate", pair_id=["X1", "X2"])])
    assert list(respond.select_pairs(pairs, track="intimate").pair_id) == ["X1", "X2"]
    assert len(respond.select_pairs(pairs, limit=3)) == 3
    with pytest.raises(ValueError, match="matches no pair"):
        respond.select_pairs(pairs, dimension="career_sabotage")


def test_simulated_collection_gives_one_row_per_key_and_is_labelled():
    out = respond.collect_responses(_pairs(5), ["sim/GPT-5.4"], arms=["male", "female", "neutral"], progress=False)
    assert list(out.columns[: len(RESPONSES)]) == list(RESPONSES)
    assert len(out) == 15 and out.simulated.all() and out.error.isna().all()
    assert not out.duplicated(["model", "pair_id", "arm", "sample"]).any()


def test_answer_status_counts_failed_empty_truncated_and_refused():
    frame = pd.DataFrame({"answer": ["Fine advice.", "", "I'm sorry, but I can't help with that.", "Long...", None],
                          "finish_reason": ["stop", "stop", "stop", "length", None],
                          "error": [None, None, None, None, "HTTP 500"]})
    assert respond.answer_status(frame).tolist() == ["ok", "empty", "refused", "truncated", "failed"]


def test_interrupted_run_resumes_without_paying_twice_and_reasks_changed_prompts(fake_openai, tmp_path):
    cache = llm.Cache(tmp_path / "cache.sqlite")
    spec = fake_openai.spec()
    pairs = _pairs(6)
    with pytest.raises(llm.BudgetExceeded):
        respond.collect_responses(pairs, [spec], cache=cache, budget=llm.Budget(max_requests=5), progress=False)
    first = fake_openai.stats()["answered"]
    assert 0 < first <= 5
    out = respond.collect_responses(pairs, [spec], cache=cache, progress=False)
    assert len(out) == 12 and out.error.isna().all()
    assert fake_openai.stats()["answered"] == 12 and fake_openai.stats()["billed_twice"] == 0
    out_again = respond.collect_responses(pairs, [spec], cache=cache, progress=False)
    assert fake_openai.stats()["answered"] == 12 and out_again.cached.all()
    pairs.loc[2, "prompt_male"] = pairs.loc[2, "prompt_male"].replace("ten minutes", "twenty minutes")
    changed = respond.collect_responses(pairs, [spec], cache=cache, progress=False)
    assert fake_openai.stats()["answered"] == 13
    assert "twenty minutes" in changed.set_index(["pair_id", "arm"]).loc[("GB-0002", "male"), "answer"]


def test_import_responses_joins_the_benchmark_and_names_bad_rows(tmp_path):
    pairs = _pairs(3)
    good = tmp_path / "answers.csv"
    pd.DataFrame({"pair_id": ["GB-0000", "GB-0000", "GB-0002", "GB-0002"], "model": ["my-model"] * 4,
                  "arm": ["male", "female", "male", "female"],
                  "answer": ["You crossed a line.", "Understandable.", "ok", "fine"]}).to_csv(good, index=False)
    frame = respond.import_responses(str(good), pairs)
    assert list(frame.columns[: len(RESPONSES)]) == list(RESPONSES) and len(frame) == 4
    assert frame.prompt.iloc[1] == pairs.prompt_female.iloc[0] and (frame["sample"] == 0).all()
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"pair_id": ["GB-0000", "GB-9999", "GB-0001"], "model": ["m"] * 3,
                  "arm": ["male", "male", "woman"], "answer": ["a", "b", "c"]}).to_csv(bad, index=False)
    with pytest.raises(ValueError) as err:
        respond.import_responses(str(bad), pairs)
    assert "bad.csv row 2: pair_id 'GB-9999'" in str(err.value) and "row 3: arm 'woman'" in str(err.value)
    missing = tmp_path / "missing.csv"
    pd.DataFrame({"pair_id": ["GB-0000"], "arm": ["male"], "answer": ["a"]}).to_csv(missing, index=False)
    with pytest.raises(ValueError, match=r"missing column\(s\) \['model'\]"):
        respond.import_responses(str(missing), pairs)


def test_summary_counts_and_does_not_price_models_outside_the_registry():
    out = respond.collect_responses(_pairs(3), ["sim/GPT-5.4"], progress=False)
    imported = out.assign(model="my-own-model", answer=["", "I'm sorry, but I can't help with that."] + ["ok"] * 4)
    summary = respond.response_summary(pd.concat([out, imported]))
    mine = summary.set_index("model").loc["my-own-model"]
    assert (mine["n"], mine["empty"], mine["refused"], mine["failed"]) == (6, 1, 1, 0) and pd.isna(mine["cost_usd"])
    assert summary.set_index("model").loc["sim/GPT-5.4"].cost_usd == 0.0


def test_limit_takes_pairs_round_robin_over_dimensions():
    pairs = pd.concat([_pairs(4).assign(dimension="public_dispute"),
                       _pairs(4).assign(dimension="false_allegation", pair_id=[f"F{i}" for i in range(4)])])
    picked = respond.select_pairs(pairs, limit=4)
    assert list(picked.pair_id) == ["GB-0000", "F0", "GB-0001", "F1"]
