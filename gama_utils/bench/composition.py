"""Composition of a built benchmark (paper Fig 2): pairs per dimension and severity, the paper's counts beside.

Rows come from the grid (data/grid.yaml) and counts from the pairs actually built; the paper's
count sits beside a dimension only when the grid gives it one (a dimension the paper lacks shows
<NA> there).
"""

from __future__ import annotations

import pandas as pd

from gama_utils.core import grid

OURS, PAPER = "GAMA-Bench (this project)", "paper (Fig 2)"


def composition(pairs: pd.DataFrame) -> pd.DataFrame:
    """Pairs per dimension × severity (grid order, 0 when none), the paper's count beside: one row per cell.

    Columns: track, dimension, dimension_name, severity, pairs, paper (nullable integer).
    """
    unknown = sorted(set(pairs["dimension"]) - set(grid.BY_SLUG))
    if unknown:
        raise ValueError(f"pairs have dimension(s) {', '.join(map(str, unknown))} that the grid "
                         f"({grid.active_file().name}) does not declare")
    counts = pairs.groupby(["dimension", "severity"]).size()
    rows = [{"track": d.track, "dimension": d.slug, "dimension_name": d.name, "severity": level,
             "pairs": int(counts.get((d.slug, level), 0)),
             "paper": d.paper_counts[level] if d.paper_counts else pd.NA}
            for d in grid.DIMENSIONS for level in grid.SEVERITIES]
    table = pd.DataFrame(rows, columns=["track", "dimension", "dimension_name", "severity", "pairs", "paper"])
    return table.astype({"pairs": "int64", "paper": "Int64"})


def composition_table(pairs: pd.DataFrame) -> pd.DataFrame:
    """Pairs per dimension (rows, grid order) and severity, this benchmark beside the paper's, with totals."""
    tidy = composition(pairs)
    levels = list(grid.SEVERITIES)
    index = pd.MultiIndex.from_tuples([(d.track, d.name) for d in grid.DIMENSIONS], names=["track", "dimension"])
    blocks = {}
    for source, label in (("pairs", OURS), ("paper", PAPER)):
        wide = tidy.pivot(index=["track", "dimension_name"], columns="severity", values=source)
        wide = wide.reindex(index=list(index), columns=levels)
        wide["total"] = wide[levels].sum(axis=1, min_count=1)
        blocks[label] = wide.astype("Int64")
    table = pd.concat(blocks, axis=1)
    table.index = index
    table.loc[("all", "total"), :] = table.sum(min_count=1)
    return table.astype("Int64")


def cells_missing(pairs: pd.DataFrame) -> list[str]:
    """Condition cells of the grid with no pair."""
    have = set(pairs["dimension"] + "/" + pairs["severity"] + "/" + pairs["style"])
    return sorted(set(grid.condition_grid()["cell_id"]) - have)
