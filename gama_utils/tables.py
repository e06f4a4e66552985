"""The paper's tables from a gaps frame (Tables 2-3, 6; App. B.1-B.2) and the run beside the paper.

Table functions return numeric DataFrames (for notebooks and CSV); `format_table` renders the
paper's number style (two decimals for counts and the rating, rates in %, signed Δ, p as
"<.001"), which `write_table` uses for Markdown and LaTeX. A frame's `attrs` carry its kind and
whether any of its rows is simulated.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from gama_utils import gaps as gap_stats
from gama_utils import runs
from gama_utils.grid import BY_SLUG, TRACKS
from gama_utils.metrics import CORE_TEST_METRICS, by_label, metric, metric_keys
from gama_utils.paper import MAIN_MODELS, QWEN_VARIANTS, model_group
from gama_utils.schema import OTHER_GROUP, require

GROUP_LABELS = {"proprietary": "Proprietary models", "open-source": "Open-source models",
                "qwen-variants": "Qwen variants", OTHER_GROUP: "Other models"}
TRACK_LABELS = {"intimate": "Intimate Track", "public": "Public Track"}
DELTA = "Δ"
SIMULATED_NOTE = "SIMULATED data (synthetic answers from the sim backend; not a finding)."
PLUMBING_NOTE = ("PLUMBING CHECK (real answers from a tiny local model, meaningless as findings; "
                 "this run checks the pipeline on a real server).")

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


def paper_layout(gaps: pd.DataFrame, track: str, comparison: str = gap_stats.PAPER_COMPARISON) -> pd.DataFrame:
    """Table 2 (intimate) / Table 3 (public): rows grouped by model family, columns metric × (Male, Female, Δ)."""
    cells = select_cells(gaps, track=track, comparison=comparison, stratified=False)
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
    """Table 6 in long form: per model × track × metric, Δ, pairs, the test, its zsplit sensitivity and both effect sizes.

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


def stratified_table(gaps: pd.DataFrame, stratum: str, track: str | None = None, per_model: bool = False,
                     comparison: str = gap_stats.PAPER_COMPARISON) -> pd.DataFrame:
    """App. B.1 / B.2: Δ per stratum (dimension or severity) and metric, averaged over models (or per model).

    Rows (Track, stratum) or, with per_model, (Track, Model, stratum); columns metric labels.
    """
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
    table = table.reindex(sorted(table.index, key=lambda key: _stratum_order(key, stratum, cells)))
    table.index = pd.MultiIndex.from_tuples(
        [(TRACK_LABELS.get(key[0], key[0]), *key[1:-1], stratum_label(stratum, key[-1])) for key in table.index],
        names=["Track", *(["Model"] if per_model else []), stratum.capitalize()])
    table.columns.name = f"{DELTA} ({comparison})"
    return _tag(table, "stratified", cells)


def key_of_label(label: object) -> str | None:
    """The key of the metric shown as `label` ("Puni." → "puni"), or None."""
    found = by_label(str(label))
    return found.key if found else None


def stratum_label(stratum: str, value: str) -> str:
    """Readable name of a stratum level (dimension slug → its name; severity as is)."""
    return BY_SLUG[value].name if stratum == "dimension" and value in BY_SLUG else str(value)


def paper_gaps(paper: pd.DataFrame) -> pd.DataFrame:
    """The paper's Tables 2-3 (`gama_utils.paper.main_results()`) as a gaps frame (no test statistics).

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


def paper_models_only(gaps: pd.DataFrame, models: Sequence[str] = MAIN_MODELS) -> pd.DataFrame:
    """The rows of the run's models that are among the paper's `models` (its ten of Table 5 by default)."""
    return gaps[gaps["model"].map(lambda m: paper_name(m) in models)]


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


def side_by_side_with_paper(gaps: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame | None:
    """Rows (Track, Group, Model) for the run's models that are the paper's; per metric: run Δ, paper Δ, same sign.

    None when none of the run's models is one of the paper's (there is nothing to compare).
    attrs["direction_agreement"]: share of cells with the same sign, over cells where neither Δ is 0.
    """
    compared = compare_with_paper(gaps, paper)
    if compared.empty:
        return None
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
    table.attrs["direction_agreement"] = float(decided.astype(bool).mean()) if len(decided) else np.nan
    return table


def format_table(table: pd.DataFrame) -> pd.DataFrame:
    """Strings in the paper's style for a table made here (kind in attrs); other frames get 3 significant digits."""
    kind = table.attrs.get("kind")
    formatted = table.copy().astype(object)
    for column in table.columns:
        key, part = _column_metric(column, kind)
        formatted[column] = [_format_cell(v, kind, key, part) for v in table[column]]
    return formatted


def write_table(table: pd.DataFrame, directory: str | Path, name: str, caption: str,
                simulated: bool | None = None) -> dict[str, Path]:
    """Write name.csv (numbers), name.md and name.tex (paper style) with the caption; returns the paths.

    The caption starts with "SIMULATED" when `simulated` (default: the table's attrs) is true, and
    with "PLUMBING CHECK" when the run the folder belongs to used a plumbing-check model. The CSV
    carries a `simulated` column (True/False; a table's own per-row column is kept). attrs["notes"]
    (a string or a list of them) follow the table in the Markdown and LaTeX files.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    simulated = table.attrs.get("simulated", False) if simulated is None else simulated
    caption = f"{provenance_note(directory, simulated)} {caption}".lstrip()
    notes = table.attrs.get("notes") or []
    notes = [notes] if isinstance(notes, str) else list(notes)
    paths = {suffix: directory / f"{name}.{suffix}" for suffix in ("csv", "md", "tex")}
    flat = _flatten(table)
    if "simulated" not in flat.columns:
        flat["simulated"] = bool(simulated)
    flat.to_csv(paths["csv"], index=False)
    shown = _flatten(format_table(table), blank_repeats=True)
    note_text = f"\n\nNotes. {' '.join(notes)}" if notes else ""
    paths["md"].write_text(f"{caption}\n\n{shown.to_markdown(index=False, disable_numparse=True)}{note_text}\n",
                           encoding="utf-8")
    latex = _latex_frame(format_table(table)).to_latex(
        index=False, escape=False, caption=_latex_escape(caption), label=f"tab:{name}", multicolumn=True,
        multicolumn_format="c", column_format="l" * _index_frame(table).shape[1] + "r" * table.shape[1])
    if notes:
        latex = latex.replace("\\end{table}", f"\\par\\smallskip\\footnotesize Notes. "
                                              f"{_latex_escape(' '.join(notes))}\n\\end{{table}}")
    paths["tex"].write_text(latex, encoding="utf-8")
    return paths


def provenance_note(directory: str | Path, simulated: bool) -> str:
    """What a table or figure written into `directory` (a run's tables/ or figures/) must say it is, or ""."""
    if simulated:
        return SIMULATED_NOTE
    return PLUMBING_NOTE if runs.plumbing_check(Path(directory).parent) else ""


def select_cells(gaps: pd.DataFrame, track: str | None = None, comparison: str = gap_stats.PAPER_COMPARISON,
            stratified: bool | None = None) -> pd.DataFrame:
    require(gaps, ("model", "track", "metric", "male", "female", "delta"), "gaps")
    strata = gap_stats.stratum_columns(gaps)
    if stratified is False and strata:
        raise ValueError(f"gaps are stratified by {', '.join(strata)}; use stratified_table, or paired_gaps without by")
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


def _stratum_order(key: tuple, stratum: str, cells: pd.DataFrame) -> tuple:
    order = list(BY_SLUG) if stratum == "dimension" else sorted(cells[stratum].astype(str).unique())
    level = str(key[-1])
    track = TRACKS.index(key[0]) if key[0] in TRACKS else len(TRACKS)
    return (track, *[str(k) for k in key[1:-1]], order.index(level) if level in order else len(order), level)


def _model_key(name: str) -> str:
    """Case- and punctuation-free key; a simulated twin ("sim/GPT-5.4") keys as its paper model."""
    return re.sub(r"[^0-9a-z]", "", str(name).lower().removeprefix("sim/"))


def _column_metric(column, kind: str | None) -> tuple[str | None, str]:
    """(metric key, part) of a column: part is the sub-column label (Male, Δ, Run Δ, ...) or ''."""
    label, part = (column[0], column[1]) if isinstance(column, tuple) else (column, "")
    if kind is None:
        return None, part
    if kind == "pvalues":
        return key_of_label(part), "p"
    if kind == "tests":
        return None, "p" if str(label).split(" ")[0] == "p" else ""
    if kind == "stratified":
        return key_of_label(label), DELTA
    return key_of_label(label), part


def _format_cell(value, kind: str | None, key: str | None, part: str) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "–"
    if part == "p":
        return "<.001" if value < 0.001 else f"{value:.3f}".lstrip("0")
    if part == "Same sign":
        return "yes" if value else "no"
    if key is None:
        return f"{value:.3g}" if isinstance(value, (float, np.floating)) else str(value)
    signed = DELTA in part
    if metric(key).is_rate:
        return f"{value:+.1f}%" if signed else f"{value:.1f}%"
    return f"{value:+.2f}" if signed else f"{value:.2f}"


def _flatten(table: pd.DataFrame, blank_repeats: bool = False) -> pd.DataFrame:
    """Index levels as leading columns and 'Metric Part' column names; repeated index labels blanked if asked."""
    flat = table.copy()
    flat.columns = [" ".join(str(p) for p in c if str(p)) if isinstance(c, tuple) else str(c) for c in flat.columns]
    index = _index_frame(flat)
    index = _blank_repeats(index) if blank_repeats else index
    return pd.concat([index, flat.reset_index(drop=True)], axis=1)


def _index_frame(table: pd.DataFrame) -> pd.DataFrame:
    """The index levels as columns; none for a plain row number (an unnamed RangeIndex)."""
    if isinstance(table.index, pd.RangeIndex) and table.index.name is None:
        return pd.DataFrame(index=range(len(table)))
    return table.index.to_frame(index=False)


def _blank_repeats(index: pd.DataFrame) -> pd.DataFrame:
    """Blank an outer index label where it and every label before it repeat the row above (grouped rows)."""
    levels = list(index.columns)
    shown = index.astype(object)
    for position, level in enumerate(levels[:-1]):
        prefix = levels[:position + 1]
        repeated = (index[prefix] == index[prefix].shift()).all(axis=1)
        shown[level] = shown[level].where(~repeated, "")
    return shown


def _latex_frame(formatted: pd.DataFrame) -> pd.DataFrame:
    flat = formatted.map(_latex_escape)
    index = _blank_repeats(_index_frame(formatted).map(_latex_escape))
    if isinstance(formatted.columns, pd.MultiIndex):
        flat.columns = pd.MultiIndex.from_tuples([tuple(_latex_escape(str(p)) for p in c) for c in formatted.columns])
        index.columns = pd.MultiIndex.from_tuples([(_latex_escape(str(c)),) + ("",) * (formatted.columns.nlevels - 1)
                                                   for c in index.columns])
    else:
        flat.columns = [_latex_escape(str(c)) for c in formatted.columns]
        index.columns = [_latex_escape(str(c)) for c in index.columns]
    return pd.concat([index, flat.reset_index(drop=True)], axis=1)


_PAPER_NAMES = {_model_key(m): m for m in MAIN_MODELS + QWEN_VARIANTS}

_LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
          "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
          "Δ": r"$\Delta$", "−": "-", "–": "--", "×": r"$\times$", "<": r"$<$", ">": r"$>$"}


def _latex_escape(text) -> str:
    return "".join(_LATEX.get(ch, ch) for ch in str(text))
