"""The offline reproduction's cost: wall and CPU time per notebook, and its heaviest stages.

Runs the offline profile (what `make reproduce` runs) into a throwaway run folder and prints, per
notebook, the wall time, the CPU time (the kernel's and its thread's, user + system; exact with --jobs 1,
approximate while notebooks overlap), the elapsed time of the whole run, and for 05-08
the three cells that took longest (papermill's own cell timings). `--micro` instead times the two
inner loops alone: simulating every answer of 17 models × the benchmark × 2 arms, and scoring them
with the lexicon. Everything it makes is SIMULATED and thrown away. Targets (issue 23, a quiet 2-core
machine): notebooks ≤ 60 s in all, ≤ 150 s of CPU.

    .venv/bin/python benchmarks/bench_offline.py [--only 05 06] [--jobs 1] [--keep outputs/runs/bench] [--micro]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from gama_utils import paths
from gama_utils.analysis import paper
from gama_utils.core.grid import composition
from gama_utils.judge import lexicon
from gama_utils.runs import orchestrate, profiles
from gama_utils.sim import targets as sim

STAGE_NOTEBOOKS = ("05_evaluate", "06_analyze", "07_ablation", "08_robustness")


def heaviest_cells(notebook: Path, n: int = 3) -> list[tuple[float, str]]:
    """The `n` code cells of an executed notebook that took longest: (seconds, first line)."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    timed = [(float(c.get("metadata", {}).get("papermill", {}).get("duration") or 0.0),
              "".join(c["source"]).strip().splitlines()[0][:70]) for c in cells if c["cell_type"] == "code"]
    return sorted(timed, reverse=True)[:n]


def per_notebook(only: list[str], keep: Path | None = None, jobs: int | None = None) -> None:
    settings, notebooks, problems = profiles.plan("offline", orchestrate.notebooks_in_order(), only or None, {})
    if problems:
        raise SystemExit("\n".join(problems))
    jobs = jobs or orchestrate.notebook_jobs()
    paths.RUNS.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-offline-", dir=paths.RUNS) as folder:
        run = keep.resolve() if keep else Path(folder) / "offline"
        started = time.perf_counter()
        rows = orchestrate.execute_notebooks(
            notebooks, run, lambda nb: profiles.notebook_parameters(settings, nb, run, {}), label="bench", jobs=jobs)
        wall = time.perf_counter() - started
        print(f"{'notebook':<16}{'wall s':>8}{'CPU s':>8}   heaviest cells (wall s)")
        for row in rows:
            cells = heaviest_cells(run / "notebooks" / f"{row['notebook']}.ipynb") \
                if row["notebook"] in STAGE_NOTEBOOKS else []
            shown = "; ".join(f"{s:.1f} {text}" for s, text in cells)
            print(f"{row['notebook']:<16}{row['seconds']:>8.1f}{row['cpu_seconds']:>8.1f}   {shown}")
        print(f"{'all':<16}{wall:>8.1f}{sum(r['cpu_seconds'] for r in rows):>8.1f}   (elapsed, {jobs} notebook(s) at "
              f"once; the notebooks' own walls add up to {sum(r['seconds'] for r in rows):.1f} s; target ≤ 60 s, "
              "≤ 150 s CPU)")


def micro(pairs: int, models: int) -> None:
    chosen = [*paper.MAIN_MODELS, *paper.QWEN_VARIANTS][:models]
    n_intimate = round(pairs * 305 / 1298)
    sim.frames()
    lexicon.load_lexicon()
    start = time.perf_counter()
    answers = [sim.simulated_answer(model, "intimate" if i < n_intimate else "public", arm, f"pair-{i}")[0]
               for model in chosen for i in range(pairs) for arm in ("male", "female")]
    simulated = time.perf_counter() - start
    start = time.perf_counter()
    scores = [lexicon.evaluate_text(answer) for answer in answers]
    scored = time.perf_counter() - start
    n = len(answers)
    print(f"SIMULATED responses: {n:,} ({len(chosen)} models × {pairs:,} pairs × 2 arms)")
    print(f"simulate: {simulated:6.1f} s  ({simulated / n * 1e6:5.0f} µs per response)")
    print(f"lexicon:  {scored:6.1f} s  ({scored / n * 1e6:5.0f} µs per response; "
          f"{sum(len(s['punitive_terms']) for s in scores):,} punitive terms found)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=[], help="notebook numbers or names (default: all eight)")
    parser.add_argument("--jobs", type=int, help="notebooks at once (default as make reproduce; 1: one after the "
                                                   "other, exact CPU per notebook)")
    parser.add_argument("--keep", type=Path, help="run into this folder and keep it (default: a throwaway one)")
    parser.add_argument("--micro", action="store_true", help="time the simulator and the lexicon alone")
    parser.add_argument("--pairs", type=int, default=int(composition().n.sum()), help="with --micro")
    parser.add_argument("--models", type=int, default=len(paper.MAIN_MODELS) + len(paper.QWEN_VARIANTS),
                        help="with --micro")
    args = parser.parse_args()
    if args.micro:
        micro(args.pairs, args.models)
    else:
        per_notebook(args.only, args.keep, args.jobs)


if __name__ == "__main__":
    main()
