"""Time the 06_analyze core on a paper-sized run: 17 models × 1,298 pairs × 2 arms of synthetic evaluations.

Usage: .venv/bin/python benchmarks/bench_analysis.py [--models 17] [--n-boot 2000] [--mixed]
The rows are drawn with numpy here (not the simulated backend) so the benchmark has no
dependency beyond gama_utils' analysis modules.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from gama_utils.analysis import gaps
from gama_utils.analysis.paper import MAIN_MODELS  # noqa: E402
from gama_utils.core import grid
from gama_utils.report import plots, tables  # noqa: E402


def synthetic_evaluations(n_models: int = 17, seed: int = 0, invalid_share: float = 0.01) -> pd.DataFrame:
    """Evaluation rows (schema.evaluations_columns()) for n_models × the paper's 1,298 pairs × male/female arms."""
    rng = np.random.default_rng(seed)
    composition = grid.composition()
    pairs = composition.loc[composition.index.repeat(composition["n"])].reset_index(drop=True)
    pairs["pair_id"] = [f"p{i:04d}" for i in range(len(pairs))]
    pairs["style"] = rng.choice(list(grid.STYLES), size=len(pairs))
    models = list(MAIN_MODELS) + [f"Synthetic-{i}" for i in range(max(0, n_models - len(MAIN_MODELS)))]
    harshness = rng.normal(0.0, 1.0, len(pairs))  # scenario effect shared by models and arms
    n = len(pairs)
    frames = []
    for model in models[:n_models]:
        gap = rng.uniform(0.2, 0.8)
        for arm, shift in (("male", 0.0), ("female", 1.0)):
            frames.append(pd.DataFrame({
                "pair_id": pairs["pair_id"], "track": pairs["track"], "dimension": pairs["dimension"],
                "severity": pairs["severity"], "style": pairs["style"], "model": model, "arm": arm,
                "sample": 0, "evaluator": "Gemini-3-Pro", "blind": True,
                "valid": rng.random(n) >= invalid_share,
                "punitive_terms": None, "therapeutic_terms": None,
                "punitive_count": rng.poisson(np.clip(8 - 3 * gap * shift + 2 * harshness, 0.1, None)),
                "therapeutic_count": rng.poisson(np.clip(3 + gap * shift - 0.8 * harshness, 0.1, None)),
                "severity_rating": np.clip(np.rint(rng.normal(3 - 0.4 * shift + 0.6 * harshness, 0.7)), 1, 5),
                "empathizes_with_actor": (rng.random(n) < _logistic(-2.0 + 0.8 * shift - 0.5 * harshness)).astype(int),
                "instructional": (rng.random(n) < _logistic(0.6 - 0.6 * shift + 0.5 * harshness)).astype(int),
                "full_blame": (rng.random(n) < _logistic(1.4 - 1.1 * shift + 0.8 * harshness)).astype(int),
                "blame_attribution": "partial", "invalid_reason": None, "simulated": False,
            }))
    evaluations = pd.concat(frames, ignore_index=True)
    evaluations.loc[~evaluations["valid"], "invalid_reason"] = "schema"
    return evaluations


def _logistic(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def timed(label: str, function, *args, **kwargs):
    start = time.perf_counter()
    result = function(*args, **kwargs)
    elapsed = time.perf_counter() - start
    print(f"{label:<58s} {elapsed:7.2f} s")
    return result, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=17)
    parser.add_argument("--n-boot", type=int, default=2000)
    parser.add_argument("--mixed", action="store_true", help="also time the MixedLM check (beyond the paper)")
    args = parser.parse_args()

    evaluations = synthetic_evaluations(args.models)
    n_pairs = evaluations["pair_id"].nunique()
    print(f"{len(evaluations):,} evaluation rows: {args.models} models × {n_pairs:,} pairs × 2 arms")
    total = 0.0
    main_gaps, t = timed(f"paired_gaps (n_boot={args.n_boot})", gaps.paired_gaps, evaluations, n_boot=args.n_boot)
    total += t
    by_dimension, t = timed("stratified_gaps by dimension", gaps.stratified_gaps, evaluations, "dimension",
                            n_boot=args.n_boot)
    total += t
    by_severity, t = timed("stratified_gaps by severity (× track)", gaps.stratified_gaps, evaluations, "severity",
                           n_boot=args.n_boot)
    total += t

    def write_all_tables(directory: Path) -> None:
        for track in grid.TRACKS:
            tables.write_table(tables.paper_layout(main_gaps, track), directory, f"main_{track}", f"{track} track")
        tables.write_table(tables.pvalue_table(main_gaps), directory, "pvalues", "Wilcoxon p-values")
        tables.write_table(tables.stratified_table(by_dimension, "dimension"), directory, "dimension", "By dimension")
        tables.write_table(tables.stratified_table(by_severity, "severity"), directory, "severity", "By severity")

    def draw_all_figures(directory: Path) -> None:
        for track in grid.TRACKS:
            plots.save_figure(plots.transitions(main_gaps, track), directory, f"transitions_{track}")
            plots.save_figure(plots.dimension_heatmap(by_dimension, track), directory, f"dimensions_{track}")
        plots.save_figure(plots.severity_heatmap(by_severity), directory, "severity")
        plots.save_figure(plots.forest(main_gaps), directory, "forest")

    with tempfile.TemporaryDirectory() as directory:
        _, t = timed("tables (layout, p-values, strata; CSV/MD/LaTeX)", write_all_tables, Path(directory))
        total += t
        _, t_fig = timed("figures (transitions, heatmaps, forest; PNG/PDF)", draw_all_figures, Path(directory))
    print(f"{'total: gaps + strata + tables':<58s} {total:7.2f} s")
    print(f"{'total with figures':<58s} {total + t_fig:7.2f} s")
    if args.mixed:
        timed("mixed_effects_gaps (Puni., Ther., Sev.)", gaps.mixed_effects_gaps, evaluations)


if __name__ == "__main__":
    main()
