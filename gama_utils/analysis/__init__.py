"""Notebooks 06-08 (paper §4.2-4.5): the gaps and the statistics behind every claim.

gaps (paired Δ, CIs, tests), stats (Wilcoxon, Holm, effect sizes, the REML mixed model), power (and
sampling variance), strata, selections (the rows an analysis uses), paper (the paper's models and
numbers), pooling (the random-effects Δ over models), ablation (§4.3), robustness (§4.4), null_check.
"""

__all__ = [
    "gaps",
    "stats",
    "power",
    "strata",
    "selections",
    "paper",
    "pooling",
    "ablation",
    "robustness",
    "null_check",
]
