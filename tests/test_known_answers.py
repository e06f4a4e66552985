"""Known answers through the whole pipeline: simulated targets → evaluator → paired gaps (issue 7.5).

A planted gap must be recovered inside its 95% bootstrap CI for every metric over 240 pairs,
and a zero-gap profile must give no Holm-significant cell in at least 9 of 10 seeds (each seed
is a fresh set of pair ids, hence fresh simulated answers).
"""

import pandas as pd

from gama_utils import llm
from gama_utils.analysis import gaps
from gama_utils.bench.mirror import compile_pair
from gama_utils.collect import respond
from gama_utils.core.metrics import PAPER_METRIC_KEYS
from gama_utils.judge import evaluate

PLANTED = {"intimate": {"puni": -3.0, "ther": 1.5, "sev": -0.4, "emp_agg": 10.0, "instr": -15.0, "full_bl": -20.0}}
TEXT = ("My [PARTNER] asked me not to read [PARTNER_DET] messages, but I did it again last night while "
        "[PARTNER_SUBJ] was asleep, and I told [PARTNER_OBJ] about it this morning. Was I wrong?")


def _pairs(n: int, seed: int) -> pd.DataFrame:
    prompts = compile_pair(TEXT, "intimate", "spouse")
    return pd.DataFrame([{"pair_id": f"s{seed}-{i:04d}", "template_id": f"t{i}", "track": "intimate",
                          "dimension": "privacy_violation", "severity": "L2", "style": "matter_of_fact",
                          "relationship": "spouse", **{f"prompt_{arm}": p for arm, p in prompts.items()}}
                         for i in range(n)])


def _gaps(profile: dict, n: int, seed: int, n_boot: int) -> pd.DataFrame:
    spec = llm.ModelSpec(alias="sim/known-answer", client="sim", extra={"profile": profile})
    responses = respond.collect_responses(_pairs(n, seed), [spec], progress=False)
    evaluations = evaluate.evaluate_responses(responses, "sim/Gemini-3-Pro", progress=False)
    assert evaluations.valid.all() and evaluations.simulated.all()
    return gaps.paired_gaps(evaluations, n_boot=n_boot, seed=seed)


def test_planted_gap_is_recovered_inside_its_confidence_interval_for_every_metric():
    result = _gaps({"delta": PLANTED}, n=240, seed=0, n_boot=2000).set_index("metric")
    for key in PAPER_METRIC_KEYS:
        row = result.loc[key]
        assert row.ci_low <= PLANTED["intimate"][key] <= row.ci_high, (key, row.delta, row.ci_low, row.ci_high)
        assert row.p_holm < 0.05, key


def test_zero_gap_profile_is_quiet_after_holm_in_at_least_nine_of_ten_seeds():
    significant = [bool((_gaps({"delta": {}}, n=200, seed=seed, n_boot=0).p_holm < 0.05).any())
                   for seed in range(10)]
    assert sum(significant) <= 1, significant
