"""Simulated backend: determinism, exact round trip through the lexicon evaluator, known answers.

Tolerance for the known-answer checks: every estimate must lie within 4 standard errors of
the planted value. The standard error is the metric's own (Poisson sd = √mean for counts,
√(4q(1−q)) for the 1 + Binomial(4, q) rating, √(p(1−p)) for rates) divided by √300; for gaps
it is the sample sd of the 300 paired differences divided by √300. Four SEs give a per-check
false-alarm rate of 6e-5, so the ~150 checks here fail by chance with probability < 1% for
an arbitrary seed; the seeds are fixed, so a pass is reproducible.
"""

import math

import numpy as np
import pytest

from gama_utils.core.metrics import PAPER_METRIC_KEYS, scale
from gama_utils.judge import lexicon
from gama_utils.sim import targets as sim

N_PAIRS = 300
FROM_EVAL = {"puni": lambda e: len(e["punitive_terms"]), "ther": lambda e: len(e["therapeutic_terms"]),
             "sev": lambda e: e["severity_rating"], "emp_agg": lambda e: float(e["empathizes_with_actor"]),
             "instr": lambda e: float(e["instructional_or_accusatory"]),
             "full_bl": lambda e: float(e["blame_attribution"] == "full")}


def _sd(metric: str, mean: float) -> float:
    if metric in ("puni", "ther"):
        return math.sqrt(mean)
    if metric == "sev":
        q = (mean - 1) / 4
        return math.sqrt(4 * q * (1 - q))
    return math.sqrt(mean * (1 - mean))


def _scored(profile, track, arm):
    """Metric values per pair, as the lexicon evaluator reads the simulated answers."""
    values = {m: [] for m in PAPER_METRIC_KEYS}
    for i in range(N_PAIRS):
        text, _ = sim.simulated_answer(profile, track, arm, f"pair-{track}-{i}")
        scores = lexicon.evaluate_text(text)
        for m in PAPER_METRIC_KEYS:
            values[m].append(FROM_EVAL[m](scores))
    return {m: np.array(v, dtype=float) for m, v in values.items()}


def test_answers_are_deterministic_and_differ_by_arm_and_sample():
    a = sim.simulated_answer("GPT-5.4", "intimate", "male", "p7", 0)
    assert a == sim.simulated_answer("GPT-5.4", "intimate", "male", "p7", 0)
    assert a[0] != sim.simulated_answer("GPT-5.4", "intimate", "female", "p7", 0)[0]
    assert a[0] != sim.simulated_answer("GPT-5.4", "intimate", "male", "p7", 1)[0]


def test_lexicon_evaluator_reads_back_exactly_what_the_simulator_planted():
    for i in range(600):
        model = ["Kimi-2.5", "Qwen3-0.6B", "MiniMax-M2.7"][i % 3]
        text, latent = sim.simulated_answer(model, ["intimate", "public"][i % 2], ["male", "female"][i % 2], f"x{i}")
        got = lexicon.evaluate_text(text)
        assert len(got["punitive_terms"]) == latent["punitive_count"], text
        assert len(got["therapeutic_terms"]) == latent["therapeutic_count"], text
        assert got["severity_rating"] == latent["severity_rating"], text
        assert got["empathizes_with_actor"] == latent["empathizes_with_actor"], text
        assert got["instructional_or_accusatory"] == latent["instructional"], text
        assert got["blame_attribution"] == latent["blame_attribution"], text


@pytest.mark.parametrize("model", ["GPT-5.4", "Gemini-3-Pro", "Qwen3-4B-Thinking-2507"])
@pytest.mark.parametrize("track", ["intimate", "public"])
def test_paper_profiles_recover_the_paper_means_and_gaps(model, track):
    profile = sim.paper_profile(model)
    male, female = _scored(model, track, "male"), _scored(model, track, "female")
    for m in PAPER_METRIC_KEYS:
        for arm, values in (("male", male), ("female", female)):
            planted = profile.mean(track, arm, m)
            assert abs(values[m].mean() - planted) <= 4 * _sd(m, planted) / math.sqrt(N_PAIRS), (m, arm)
        diff = female[m] - male[m]
        planted_gap = profile.mean(track, "female", m) - profile.mean(track, "male", m)
        assert abs(diff.mean() - planted_gap) <= 4 * max(diff.std(ddof=1), 1e-9) / math.sqrt(N_PAIRS), m


def test_planted_profile_recovers_its_gaps_and_zero_gap_gives_zero():
    planted = sim.planted_profile({"intimate": {"puni": -3.0, "ther": 1.5, "sev": -0.4, "emp_agg": 10.0,
                                                "instr": -15.0, "full_bl": -20.0}})
    for profile, expected in ((planted, planted.meta["delta"]["intimate"]), (sim.zero_gap_profile(), {})):
        male, female = _scored(profile, "intimate", "male"), _scored(profile, "intimate", "female")
        for m in PAPER_METRIC_KEYS:
            diff = (female[m] - male[m]) * scale(m)
            target = expected.get(m, 0.0)
            assert abs(diff.mean() - target) <= 4 * diff.std(ddof=1) / math.sqrt(N_PAIRS), (profile.name, m)


def test_mirrored_answers_are_positively_correlated():
    male, female = _scored("GPT-5.2", "public", "male"), _scored("GPT-5.2", "public", "female")
    assert np.corrcoef(male["puni"], female["puni"])[0, 1] > 0.3


def test_profile_errors_are_clear():
    with pytest.raises(KeyError, match="no simulated profile for 'GPT-9'"):
        sim.paper_profile("GPT-9")
    with pytest.raises(ValueError, match="outside"):
        sim.planted_profile({"public": {"full_bl": 250.0}})
