"""The paper's tables from a gaps frame (Tables 2-3, 6; App. B.1-B.2 and other strata) and the run beside the paper.

Table functions return numeric DataFrames (for notebooks and CSV); a frame's `attrs` carry its
kind and whether any of its rows is simulated. `format_table` (the paper's number style) and
`write_table` (CSV, Markdown, LaTeX, each escaped) live in `gama_utils.report.table_files` and are
re-exported here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from gama_utils.analysis import gaps as gap_stats
from gama_utils.analysis import pooling, strata
from gama_utils.analysis.paper import MAIN_MODELS, QWEN_VARIANTS, model_group
from gama_utils.core.grid import TRACKS
from gama_utils.core.metrics import CORE_TEST_METRICS, metric, metric_keys
from gama_utils.core.schema import OTHER_GROUP, Absent, absent_track, passes_absent, require
from gama_utils.report.table_files import (
    DELTA,
    PLUMBING_NOTE,
    SIMULATED_NOTE,
    format_table,
    key_of_label,
    provenance_note,
    write_table,
)

__all__ = ["DELTA", "PLUMBING_NOTE", "SIMULATED_NOTE", "format_table", "key_of_label", "provenance_note",
           "write_table"]  # re-exported from gama_utils.report.table_files; the rest is defined here

GROUP_LABELS = {"proprietary": "Proprietary models", "open-source": "Open-source models",
                "qwen-variants": "Qwen variants", OTHER_GROUP: "Other models"}
TRACK_LABELS = {"intimate": "Intimate Track", "public": "Public Track"}

# Across-model averages the paper states in §4.2 (DESIGN §7): (track, metric, value, decimals printed).
PAPER_STATEMENTS: tuple[tuple[str, str, float, int], ...] = (
    ("intimate", "puni", -3.3, 1), ("intimate", "ther", 1.3, 1), ("intimate", "sev", -0.40, 2),
    ("intimate", "emp_agg", 9.0, 0), ("intimate", "instr", -14.0, 0), ("intimate", "full_bl", -23.0, 0),
    ("public", "instr", -9.0, 0), ("public", "full_bl", -6.0, 0),
)


def model_rows(models: Iterable[str], groups: Mapping[str, str] | None = None) -> pd.MultiIndex:
    """Row index (Group, Model): the registry's groups (the paper's first, in its order), then "Other models".

    `groups` maps a model to its group (the gaps' `group` column); a model without one is placed by
    the paper model it names, ignoring case and punctuation ("gpt-5.4" sits where GPT-5.4 does), or
    under "Other models". Within a group the paper's order comes first, then the run's; the run's
    spelling is kept.
    """
    known = list(MAIN_MODELS) + list(QWEN_VARIANTS)
    unique = list(dict.fromkeys(models))
    group_of = {m: _group(m, groups) for m in unique}
    extra = [g for g in dict.fromkeys(group_of.values()) if g not in GROUP_LABELS]
    order = [g for g in GROUP_LABELS if g != OTHER_GROUP] + extra + [OTHER_GROUP]

    def placement(model: str) -> tuple[int, int, int]:
        name = paper_name(model) or model
        return order.index(group_of[model]), known.index(name) if name in known else len(known), unique.index(model)

    ordered = sorted(unique, key=placement)
    return pd.MultiIndex.from_tuples([(group_label(group_of[m]), m) for m in ordered], names=["Group", "Model"])


def group_label(group: str) -> str:
    """The row-group heading of a registry group ("proprietary" → "Proprietary models"; own labels as given)."""
    return GROUP_LABELS.get(group, str(group))


def _group(model: str, groups: Mapping[str, str] | None) -> str:
    group = (groups or {}).get(model)
    if isinstance(group, str) and group:
        return group
    return model_group(paper_name(model) or model)


def model_groups(cells: pd.DataFrame) -> dict[str, str] | None:
    """model → group from a frame's optional `group` column."""
    if "group" not in cells.columns:
        return None
    return {m: g for m, g in cells[["model", "group"]].drop_duplicates("model").itertuples(index=False)
            if isinstance(g, str)}


def paper_name(model: str) -> str | None:
    """The paper's spelling of a model name matched ignoring case and punctuation, or None."""
    return _PAPER_NAMES.get(_model_key(model))


@passes_absent
def paper_layout(gaps: pd.DataFrame, track: str,
                 comparison: str = gap_stats.PAPER_COMPARISON) -> pd.DataFrame | Absent:
    """Table 2 (intimate) / Table 3 (public): rows grouped by model family, columns metric × (Male, Female, Δ).

    Absent when the run has no pairs of `track`.
    """
    cells = select_cells(gaps, track=track, comparison=comparison, stratified=False)
    if (absent := absent_track(cells, track)) is not None:
        return absent
    arm, reference = comparison.split("-")
    labels = [reference.capitalize(), arm.capitalize(), DELTA]
    metrics = [m for m in metric_keys() if m in set(cells["metric"])]
    table = cells.pivot(index="model", columns="metric", values=[reference, arm, "delta"])
    table.columns = table.columns.set_names(["value", "metric"])
    rows = model_rows(cells["model"], model_groups(cells))
    columns = pd.MultiIndex.from_tuples([(metric(m).label, label) for m in metrics for label in labels],
                                        names=["Metric", ""])
    data = {(metric(m).label, label): table[(value, m)].reindex(rows.get_level_values("Model")).to_numpy()
            for m in metrics for label, value in zip(labels, (reference, arm, "delta"))}
    return _tag(pd.DataFrame(data, index=rows, columns=columns), "paper_layout", cells)


def pvalue_table(gaps: pd.DataFrame, metrics: Sequence[str] = CORE_TEST_METRICS, adjusted: bool = False,
                 comparison: str = gap_stats.PAPER_COMPARISON) -> pd.DataFrame:
    """Table 6: Wilcoxon p-values (raw, or Holm-adjusted with adjusted=True), rows models, columns track × metric.

    attrs["notes"] (written under the table by `write_table`) state the test, its zero handling, the
    Holm family, the zsplit sensitivity and the effect sizes (`gaps.method_notes`).
    """
    family = select_cells(gaps, comparison=comparison, stratified=False)
    cells = family[family["metric"].isin(metrics)]
    value = "p_holm" if adjusted else "p_value"
    tracks = [t for t in TRACKS if t in set(cells["track"])]
    rows = model_rows(cells["model"], model_groups(cells))
    table = cells.pivot_table(index="model", columns=["track", "metric"], values=value, aggfunc="first", dropna=False)
    columns = pd.MultiIndex.from_tuples([(TRACK_LABELS[t], metric(m).label) for t in tracks for m in metrics],
                                        names=["Track", "Metric"])
    data = {(TRACK_LABELS[t], metric(m).label): table.get((t, m), pd.Series(dtype=float))
            .reindex(rows.get_level_values("Model")).to_numpy() for t in tracks for m in metrics}
    result = _tag(pd.DataFrame(data, index=rows, columns=columns), "pvalues", cells)
    result.attrs["notes"] = gap_stats.method_notes(family)
    return result


def pvalue_details(gaps: pd.DataFrame, metrics: Sequence[str] = CORE_TEST_METRICS,
                 comparison: str = gap_stats.PAPER_COMPARISON) -> pd.DataFrame:
    """Table 6 in long form: per model × track × metric, Δ, pairs, the test, its zsplit check and both effect sizes.

    Rows (Track, Group, Model, Metric); "Holm decision changes" is True where p_holm and p_holm_zsplit
    fall on different sides of .05. Notes as `pvalue_table`.
    """
    require(gaps, ("p_zsplit", "p_holm_zsplit", "effect_size_ties", "n_nonzero"), "gaps")
    cells = select_cells(gaps, comparison=comparison, stratified=False)
    shown = cells[cells["metric"].isin(metrics)]
    frames = []
    for track in [t for t in TRACKS if t in set(shown["track"])]:
        here = shown[shown["track"] == track]
        for group, model in model_rows(here["model"], model_groups(here)):
            for key in [m for m in metrics if m in set(here["metric"])]:
                row = here[(here["model"] == model) & (here["metric"] == key)]
                if row.empty:
                    continue
                row = row.iloc[0]
                frames.append({"Track": TRACK_LABELS[track], "Group": group, "Model": model,
                               "Metric": metric(key).label, DELTA: row["delta"], "n pairs": int(row["n_pairs"]),
                               "n differing": int(row["n_nonzero"]), "p": row["p_value"], "p Holm": row["p_holm"],
                               "p zsplit": row["p_zsplit"], "p Holm zsplit": row["p_holm_zsplit"],
                               "Holm decision changes": bool((row["p_holm"] < 0.05) != (row["p_holm_zsplit"] < 0.05)),
                               "r": row["effect_size"], "r with ties": row["effect_size_ties"]})
    table = pd.DataFrame(frames).set_index(["Track", "Group", "Model", "Metric"])
    table = _tag(table, "tests", cells)
    table.attrs["notes"] = gap_stats.method_notes(cells)
    return table


@passes_absent
def stratified_table(gaps: pd.DataFrame, stratum: str, track: str | None = None, per_model: bool = False,
                     comparison: str = gap_stats.PAPER_COMPARISON) -> pd.DataFrame:
    """Δ per level of a declared stratum (`gama_utils.analysis.strata`) and metric, averaged over models (or per model).

    App. B.1 / B.2 are the dimension and severity tables; the scenario metadata (setting, partner
    occupation stereotype, ...) works the same way. Rows (Track, stratum) or, with per_model,
    (Track, Model, stratum); columns metric labels. attrs["notes"] give the pairs per level.
    """
    declared = strata.stratum(stratum)
    require(gaps, (stratum,), "stratified gaps")
    others = [c for c in gap_stats.stratum_columns(gaps) if c != stratum]
    if others:
        raise ValueError(f"gaps are also stratified by {', '.join(others)}; select one level of it first")
    cells = select_cells(gaps, track=track, comparison=comparison)
    if per_model:
        keys = ["track", "model", stratum]
        values = cells
    else:
        keys = ["track", stratum]
        values = gap_stats.model_average(cells)
    table = values.pivot_table(index=keys, columns="metric", values="delta", aggfunc="first")
    metrics = [m for m in metric_keys() if m in table.columns]
    table = table[metrics].rename(columns=lambda m: metric(m).label)
    table = table.reindex(sorted(table.index, key=lambda key: _stratum_order(key, declared)))
    table.index = pd.MultiIndex.from_tuples(
        [(TRACK_LABELS.get(key[0], key[0]), *key[1:-1], declared.level_name(key[-1])) for key in table.index],
        names=["Track", *(["Model"] if per_model else []), declared.label])
    table.columns.name = f"{DELTA} ({comparison})"
    table = _tag(table, "stratified", cells)
    table.attrs["notes"] = [_pairs_per_level(cells, declared)]
    return table


def stratum_label(stratum: str, value: str) -> str:
    """Readable name of a stratum level (dimension slug → name; others as `gama_utils.analysis.strata` says)."""
    return strata.stratum(stratum).level_name(value)


def _pairs_per_level(cells: pd.DataFrame, declared: strata.Stratum) -> str:
    """'Pairs per level (...): <level> n, ...', the most pairs any model has in a level (tracks apart)."""
    if "n_pairs" not in cells.columns or cells["n_pairs"].isna().all():
        return f"{DELTA} = female − male averaged over models within each level."
    most = cells.groupby(["track", declared.key])["n_pairs"].max()
    parts = [f"{TRACK_LABELS.get(t, t)}: " + ", ".join(
        f"{declared.level_name(level)} {int(most[(t, level)])}"
        for level in sorted(most[t].index, key=declared.level_rank)) for t in TRACKS if t in most.index]
    return (f"Pairs per level (the most any model has; a level with few pairs gives a wide, unstable "
            f"{DELTA}): " + "; ".join(parts) + ".")


def paper_gaps(paper: pd.DataFrame) -> pd.DataFrame:
    """The paper's Tables 2-3 (`gama_utils.analysis.paper.main_results()`) as a gaps frame (no test statistics).

    Accepts metric labels ("Puni.") or keys ("puni") and track names in any case ("Intimate Track").
    """
    require(paper, ("model", "track", "metric", "male", "female", "delta"), "paper results")
    if "evaluator" in paper.columns and paper["evaluator"].nunique() > 1:
        raise ValueError(f"paper results mix evaluators {sorted(paper['evaluator'].unique())}; "
                         "pass one evaluator's table")
    frame = pd.DataFrame({
        "model": paper["model"].astype(str),
        "track": paper["track"].astype(str).str.lower().str.split().str[0],
        "metric": paper["metric"].map(lambda m: key_of_label(m) or m),
        "comparison": gap_stats.PAPER_COMPARISON,
        **{c: paper[c].astype(float) for c in ("male", "female", "delta")},
    })
    unknown = ~frame["metric"].isin(metric_keys())
    if unknown.any():
        row = frame.index[unknown.to_numpy()][0]
        raise ValueError(f"paper results row {row}: metric={paper.at[row, 'metric']!r} is not a registered metric "
                         f"({', '.join(metric_keys())})")
    for column in ("n_pairs", "n_excluded", "ci_low", "ci_high", "p_value", "p_holm", "effect_size"):
        frame[column] = np.nan
    frame["simulated"] = False
    return frame


@passes_absent
def paper_models_only(gaps: pd.DataFrame, models: Sequence[str] = MAIN_MODELS) -> pd.DataFrame | Absent:
    """The rows of the run's models that are among the paper's `models` (its ten of Table 5 by default).

    Absent when none is (the paper's claims are about its own models; others have nothing to check against).
    """
    rows = gaps[gaps["model"].map(lambda m: paper_name(m) in models)]
    if rows.empty:
        return Absent(f"none of this run's models is one of the paper's {len(models)}")
    return rows


@passes_absent
def check_paper_statements(averages: pd.DataFrame) -> pd.DataFrame:
    """The §4.2 across-model averages (PAPER_STATEMENTS) beside `gaps.model_average` output, rounded as printed."""
    require(averages, ("track", "metric", "delta"), "model averages")
    if "comparison" in averages.columns:
        averages = averages[averages["comparison"] == gap_stats.PAPER_COMPARISON]
    lookup = averages.set_index(["track", "metric"])["delta"]
    rows = []
    for track, key, stated, decimals in PAPER_STATEMENTS:
        value = float(lookup.get((track, key), np.nan))
        rows.append({"track": track, "metric": key, "label": metric(key).label, "stated": stated,
                     "average": value, "agrees": bool(abs(value - stated) <= 0.5 * 10.0 ** -decimals + 1e-9)})
    return pd.DataFrame(rows)


def compare_with_paper(gaps: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """Run Δ beside the paper's Δ for the model × track × metric cells both have.

    Models match ignoring case and punctuation ("gpt-5.4" = "GPT-5.4"). same_direction is True/False
    when both Δ are nonzero and NaN otherwise. Columns: model, track, metric, delta, paper_delta,
    same_direction, simulated.
    """
    run = select_cells(gaps, comparison=gap_stats.PAPER_COMPARISON, stratified=False)
    reference = paper_gaps(paper) if "comparison" not in paper.columns else paper
    reference = reference.assign(key=reference["model"].map(_model_key))
    merged = run.assign(key=run["model"].map(_model_key)).merge(
        reference[["key", "track", "metric", "delta"]].rename(columns={"delta": "paper_delta"}),
        on=["key", "track", "metric"], how="inner")
    signs = np.sign(merged["delta"]) * np.sign(merged["paper_delta"])
    merged["same_direction"] = signs.map({1.0: True, -1.0: False}).astype(object).where(signs != 0, np.nan)
    return merged[["model", *(["group"] if "group" in merged.columns else []), "track", "metric", "delta",
                   "paper_delta", "same_direction", "simulated"]]


def side_by_side_with_paper(gaps: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame | Absent:
    """Rows (Track, Group, Model) for the run's models that are the paper's; per metric: run Δ, paper Δ, same sign.

    Absent when none of the run's models is one of the paper's (there is nothing to compare).
    attrs["direction_agreement"]: share of cells with the same sign, over cells where neither Δ is 0; the
    table's note states it.
    """
    compared = compare_with_paper(gaps, paper)
    if compared.empty:
        return Absent("none of this run's models is one of the paper's: there is nothing to put beside the paper")
    metrics = [m for m in metric_keys() if m in set(compared["metric"])]
    labels = ("Run Δ", "Paper Δ", "Same sign")
    frames = []
    for track in [t for t in TRACKS if t in set(compared["track"])]:
        cells = compared[compared["track"] == track]
        rows = model_rows(cells["model"], model_groups(cells))
        by_model = cells.set_index(["model", "metric"])
        models = rows.get_level_values("Model")
        data = {(metric(m).label, label): [by_model[value].get((model, m), np.nan) for model in models]
                for m in metrics for label, value in zip(labels, ("delta", "paper_delta", "same_direction"))}
        index = pd.MultiIndex.from_tuples([(TRACK_LABELS[track], *row) for row in rows],
                                          names=["Track", "Group", "Model"])
        frames.append(pd.DataFrame(data, index=index))
    table = pd.concat(frames)
    table.columns = pd.MultiIndex.from_tuples(table.columns, names=["Metric", ""])
    decided = compared["same_direction"].dropna()
    table = _tag(table, "side_by_side", compared)
    table.attrs["direction_agreement"] = agreement = float(decided.astype(bool).mean()) if len(decided) else np.nan
    if len(decided):
        table.attrs["notes"] = [*table.attrs.get("notes", []),
                                f"Direction agreement with the paper: {agreement:.1%} of {len(decided)} cells "
                                "where neither Δ is 0."]
    return table


@passes_absent
def pooled_table(pooled: pd.DataFrame) -> pd.DataFrame:
    """The random-effects pooled Δ (`gama_utils.analysis.pooling.pooled_gaps`) for reading: one row per track ×
    metric, the pooled Δ with its HKSJ CI and Holm p, τ², I², the prediction interval for a new model, the models
    sharing its sign and the plain mean; the method and the per-track sentence (`pooling.pooled_summary`) as notes."""
    require(pooled, ("track", "metric", "n_models", "pooled_delta", "ci_low", "ci_high", "p_holm", "tau2", "i2",
                     "pi_low", "pi_high", "n_same_sign", "mean_delta"), "pooled gaps")
    table = pd.DataFrame({
        "Models": pooled["n_models"].to_numpy(), "Pooled Δ": pooled["pooled_delta"].to_numpy(),
        "CI low": pooled["ci_low"].to_numpy(), "CI high": pooled["ci_high"].to_numpy(),
        "p (Holm)": pooled["p_holm"].to_numpy(), "τ²": pooled["tau2"].to_numpy(), "I²": pooled["i2"].to_numpy(),
        "PI low": pooled["pi_low"].to_numpy(), "PI high": pooled["pi_high"].to_numpy(),
        "Same sign": pooled["n_same_sign"].to_numpy(), "Mean Δ": pooled["mean_delta"].to_numpy()},
        index=pd.MultiIndex.from_arrays([pooled["track"].map(lambda t: TRACK_LABELS.get(t, t)),
                                         pooled["metric"].map(lambda k: metric(k).label)], names=["Track", "Metric"]))
    notes = [str(pooled["method"].iloc[0])] if "method" in pooled.columns and len(pooled) else []
    table.attrs["notes"] = [*notes, *pooling.pooled_summary(pooled).values()]
    table.attrs["simulated"] = bool(pooled["simulated"].any()) if "simulated" in pooled.columns else False
    return table


def select_cells(gaps: pd.DataFrame, track: str | None = None, comparison: str = gap_stats.PAPER_COMPARISON,
                 stratified: bool | None = None) -> pd.DataFrame:
    """The gaps rows of one comparison (and track); stratified=False refuses gaps split by a stratum."""
    require(gaps, ("model", "track", "metric", "male", "female", "delta"), "gaps")
    stratified_by = gap_stats.stratum_columns(gaps)
    if stratified is False and stratified_by:
        raise ValueError(f"gaps are stratified by {', '.join(stratified_by)}; use stratified_table, "
                         "or paired_gaps without by")
    cells = gaps if "comparison" not in gaps.columns else gaps[gaps["comparison"] == comparison]
    if track is not None:
        if track not in TRACKS:
            raise ValueError(f"unknown track {track!r}; expected one of {', '.join(TRACKS)}")
        cells = cells[cells["track"] == track]
    if cells.empty:
        raise ValueError(f"gaps have no rows for track={track!r}, comparison={comparison!r}")
    return cells


def _tag(table: pd.DataFrame, kind: str, cells: pd.DataFrame) -> pd.DataFrame:
    table.attrs.update(kind=kind, simulated=bool(cells["simulated"].any()) if "simulated" in cells.columns else False)
    return table


def _stratum_order(key: tuple, declared: strata.Stratum) -> tuple:
    track = TRACKS.index(key[0]) if key[0] in TRACKS else len(TRACKS)
    return (track, *[str(k) for k in key[1:-1]], declared.level_rank(key[-1]))


def _model_key(name: str) -> str:
    """Case- and punctuation-free key; a simulated twin ("sim/GPT-5.4") keys as its paper model."""
    return re.sub(r"[^0-9a-z]", "", str(name).lower().removeprefix("sim/"))


_PAPER_NAMES = {_model_key(m): m for m in MAIN_MODELS + QWEN_VARIANTS}
