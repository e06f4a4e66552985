"""Within-prompt sampling variance vs between-scenario variance (gama_utils.analysis.power, issue 16.5)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from gama_utils.analysis import power
from tests.test_gaps import evaluation_rows


def test_one_way_by_hand():
    # Three prompts: (1, 3), (4, 6, 8), (10). Means 2, 6, 10; grand mean (1+3+4+6+8+10)/6 = 16/3.
    # SSW = 2 + 8 + 0 = 10 over N − G = 3 → MSW = 10/3.
    # SSB = 2(2 − 16/3)² + 3(6 − 16/3)² + 1(10 − 16/3)² = 200/9 + 4/3 + 196/9 = 136/3 over G − 1 = 2 → 68/3.
    # n0 = (6 − (4 + 9 + 1)/6)/2 = 11/6; σ²_between = (68/3 − 10/3)/(11/6) = 116/11.
    within, between, n0 = power.one_way(np.array([1, 3, 4, 6, 8, 10.0]), np.array([0, 0, 1, 1, 1, 2]))
    assert (within, between, n0) == (pytest.approx(10 / 3), pytest.approx(116 / 11), pytest.approx(11 / 6))
    assert np.isnan(power.one_way(np.array([1.0, 2.0]), np.array([0, 1]))[0])  # no prompt answered twice


def test_one_way_recovers_known_components_and_equals_reml_when_balanced():
    # 400 prompts × 3 samples, scenario SD 2 (variance 4), sampling SD 1, an arm shift of 5 as a fixed effect.
    rng = np.random.default_rng(0)
    prompts, samples = 400, 3
    arm = np.repeat(np.arange(prompts) % 2, samples)
    y = np.repeat(rng.normal(0, 2, prompts), samples) + rng.normal(0, 1, prompts * samples) + 5 * arm
    groups = np.repeat(np.arange(prompts), samples)
    within, between, n0 = power.one_way(y, groups, arm)
    assert n0 == pytest.approx(3.0)
    assert within == pytest.approx(1.0, abs=0.1) and between == pytest.approx(4.0, abs=0.8)
    reml = sm.MixedLM(y, np.column_stack([np.ones_like(y), arm]), groups=groups).fit(reml=True)
    assert within == pytest.approx(reml.scale, rel=1e-4) and between == pytest.approx(reml.cov_re[0, 0], rel=1e-4)


def test_sampling_variance_per_model_track_metric():
    # Model "noisy": Puni. has no scenario differences at all, only sampling noise (SD 2) → share_within ≈ 1,
    # and the gap's variance is all sampling noise: Var(d) ≈ 4·(1/4 + 1/4) = 2 → gap_sampling_share ≈ 1.
    # Model "stable": scenarios differ (SD 3) and samples barely (SD 0.2) → share_within near 0.
    rng = np.random.default_rng(4)
    pairs, samples = 300, 4
    ids = [f"p{i}" for i in range(pairs)]
    frames = []
    for model, scenario_sd, noise_sd in (("noisy", 0.0, 2.0), ("stable", 3.0, 0.2)):
        scenario = rng.normal(0, scenario_sd, pairs)
        for arm in ("male", "female"):
            for sample in range(samples):
                values = 10 + scenario + rng.normal(0, noise_sd, pairs)
                frames.append(evaluation_rows(model, arm, {"punitive_count": values}, sample=sample, pair_ids=ids))
    result = power.sampling_variance(pd.concat(frames, ignore_index=True), metrics=("puni",)).set_index("model")
    noisy, stable = result.loc["noisy"], result.loc["stable"]
    assert (noisy["n_prompts"], noisy["n_samples"], noisy["mean_samples"]) == (600, 2400, 4.0)
    assert noisy["var_within"] == pytest.approx(4.0, rel=0.1) and noisy["share_within"] > 0.95
    assert noisy["gap_variance"] == pytest.approx(2.0, rel=0.15) and noisy["gap_sampling_share"] > 0.9
    assert stable["var_between"] == pytest.approx(9.0, rel=0.2) and stable["share_within"] < 0.01
    assert stable["var_within"] == pytest.approx(0.04, rel=0.15)
