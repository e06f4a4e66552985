"""Offline backend speed: simulate and lexicon-score every answer of 17 models × the benchmark × 2 arms.

Prints the wall time of (1) writing the simulated answers, (2) scoring them with the lexicon
evaluator, and the rate per response. Target (issue 4): under 60 s in all on a 2-core machine.
Everything it makes is SIMULATED and thrown away.

    .venv/bin/python benchmarks/bench_offline.py [--pairs 1298] [--models 17]
"""

from __future__ import annotations

import argparse
import time

from gama_utils.analysis import paper
from gama_utils.core.grid import composition
from gama_utils.judge import lexicon
from gama_utils.sim import targets as sim


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=int(composition().n.sum()))
    parser.add_argument("--models", type=int, default=len(paper.MAIN_MODELS) + len(paper.QWEN_VARIANTS))
    args = parser.parse_args()
    models = [*paper.MAIN_MODELS, *paper.QWEN_VARIANTS][: args.models]
    n_intimate = round(args.pairs * 305 / 1298)
    sim.frames()
    lexicon.load_lexicon()

    start = time.perf_counter()
    answers = [sim.simulated_answer(model, "intimate" if i < n_intimate else "public", arm, f"pair-{i}")[0]
               for model in models for i in range(args.pairs) for arm in ("male", "female")]
    simulated = time.perf_counter() - start

    start = time.perf_counter()
    scores = [lexicon.evaluate_text(answer) for answer in answers]
    scored = time.perf_counter() - start

    n = len(answers)
    print(f"SIMULATED responses: {n:,} ({len(models)} models × {args.pairs:,} pairs × 2 arms)")
    print(f"simulate: {simulated:6.1f} s  ({simulated / n * 1e6:5.0f} µs per response)")
    print(f"lexicon:  {scored:6.1f} s  ({scored / n * 1e6:5.0f} µs per response; "
          f"{sum(len(s['punitive_terms']) for s in scores):,} punitive terms found)")
    print(f"total:    {simulated + scored:6.1f} s  (target < 60 s)")


if __name__ == "__main__":
    main()
