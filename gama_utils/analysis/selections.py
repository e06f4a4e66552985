"""Selections the analysis notebooks share: the primary judge's sighted rows, the paper's comparison, the run's pairs.

- `primary_sighted(evaluations, evaluator)`: the judge 06 and 08 analyse (the run's first model
  judge unless one is named) and its sighted rows (the actor's gender visible to the judge).
- `paper_comparison(gaps)`: the female − male rows of a gaps frame.
- `run_benchmark(run)`: the pairs 04_respond answered, from the file its manifest entry names,
  checked against the SHA-256 recorded then; `with_pair_metadata` merges their scenario metadata
  (setting region, partner occupation and stereotype, affected third party) into evaluations.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pandas as pd

from gama_utils.analysis import strata
from gama_utils.analysis.gaps import PAPER_COMPARISON
from gama_utils.collect import respond
from gama_utils.core import run_folders
from gama_utils.core.schema import Absent
from gama_utils.judge.evaluate import primary_evaluator
from gama_utils.paths import ROOT, resolve

log = logging.getLogger(__name__)
RESPOND_STAGE = "04_respond"


def primary_sighted(evaluations: pd.DataFrame, evaluator: str | None = None) -> tuple[str, pd.DataFrame]:
    """(judge, its sighted rows): `evaluator`, or the run's primary judge (`evaluate.primary_evaluator`)."""
    judge = evaluator or primary_evaluator(evaluations)
    rows = evaluations[(evaluations["evaluator"] == judge) & ~evaluations["blind"].astype(bool)]
    if rows.empty:
        raise ValueError(f"no sighted evaluations by {judge!r}; judges in this run: "
                         f"{', '.join(map(str, dict.fromkeys(evaluations['evaluator'])))}")
    return judge, rows


def blinded(evaluations: pd.DataFrame, judge: str) -> pd.DataFrame | Absent:
    """The rows `judge` scored with every gender marker masked; Absent when the run scored none blind."""
    rows = evaluations[(evaluations["evaluator"] == judge) & evaluations["blind"].astype(bool)]
    if rows.empty:
        return Absent(f"{judge} scored nothing blind (05_evaluate also_blind=False): no split of Δ into the "
                      "judge's part and the target's")
    return rows


def paper_comparison(gaps: pd.DataFrame) -> pd.DataFrame:
    """The gaps rows of the paper's comparison, Δ = female − male."""
    return gaps[gaps["comparison"] == PAPER_COMPARISON] if "comparison" in gaps.columns else gaps


def benchmark_record(pairs_path: str | None = None) -> dict[str, str]:
    """What 04_respond records of the benchmark it answers: the file (relative to the repository when inside it)
    and its SHA-256, so 06 can read the same pairs' metadata later."""
    path = respond.benchmark_file(pairs_path)
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    return {"benchmark": shown.as_posix(), "benchmark_sha256": run_folders.file_sha256(path)}


def run_benchmark(run: str | Path) -> tuple[Path, pd.DataFrame]:
    """(file, pairs) of the benchmark 04_respond answered in this run.

    The file is the one 04's manifest entry names (`benchmark`), else the shipped benchmark; when
    04 recorded the file's SHA-256, a file that changed since is refused (its metadata would not
    belong to the answered pairs).
    """
    manifest_path = run_folders.run_dir(run) / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.exists() else {}
    stage = (manifest.get("stages") or {}).get(RESPOND_STAGE) or {}
    recorded = stage.get("benchmark")
    path = resolve(recorded) if recorded else respond.benchmark_file(None)
    if not recorded:
        log.info("%s records no benchmark file for %s: using the shipped %s", manifest_path, RESPOND_STAGE, path)
    if not path.exists():
        raise FileNotFoundError(f"{manifest_path}: {RESPOND_STAGE} answered the pairs of {path}, which no longer "
                                "exists")
    expected = stage.get("benchmark_sha256")
    now = run_folders.file_sha256(path) if expected else ""
    if expected and now != expected:
        raise ValueError(f"{path} changed since {RESPOND_STAGE} answered it (SHA-256 recorded in {manifest_path}: "
                         f"{expected[:12]}…, now {now[:12]}…): its metadata would not belong to the answered pairs")
    return path, respond.load_benchmark(str(path))


def with_pair_metadata(evaluations: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """`evaluations` with the pairs' scenario metadata (and the attributes derived from it) merged by pair_id.

    Only the metadata columns the pairs have are added; a pair_id of the evaluations that the pairs
    lack is an error naming it (the pairs belong to another benchmark).
    """
    columns = [k for k in strata.benchmark_keys() if k in pairs.columns and k not in evaluations.columns]
    derived = [s for s in strata.STRATA.values() if s.derived_from in pairs.columns and s.key not in columns
               and s.key not in evaluations.columns]
    missing = sorted(set(evaluations["pair_id"]) - set(pairs["pair_id"]))
    if missing:
        raise ValueError(f"{len(missing)} evaluated pair(s) are not in the benchmark's pairs (first: {missing[0]!r}); "
                         "pass the pairs the run answered (selections.run_benchmark)")
    metadata = pairs.drop_duplicates("pair_id").set_index("pair_id")
    merged = evaluations.copy()
    for column in columns:
        merged[column] = merged["pair_id"].map(metadata[column])
    for stratum in derived:
        assert stratum.derive is not None and stratum.derived_from is not None
        merged[stratum.key] = merged["pair_id"].map(metadata[stratum.derived_from]).map(stratum.derive)
    return merged


def recorded_strata(evaluations: pd.DataFrame, track: str | None = None) -> list[str]:
    """The benchmark strata with a value for at least one pair (of `track`) in `evaluations`."""
    rows = evaluations if track is None else evaluations[evaluations["track"] == track]
    return [k for k in strata.benchmark_keys() if k in rows.columns and rows[k].notna().any()]
