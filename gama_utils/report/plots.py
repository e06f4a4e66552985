"""Figures of 06_analyze from a gaps frame: transitions (Figs 7-8), heatmaps (Figs 11-13), forest plot of Δ.

Each function returns a matplotlib Figure; `save_figure` writes it as PNG and PDF. Titles end
in "(simulated)" when any plotted row is simulated. Heatmaps use a diverging palette centred at 0
(red positive, blue negative, as the paper) with Δ written in every cell.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.text import Text

from gama_utils.analysis.ablation import Comparison, short_name
from gama_utils.analysis.gaps import PAPER_COMPARISON
from gama_utils.core.grid import TRACKS
from gama_utils.core.metrics import metric, metric_keys, with_direction
from gama_utils.core.run_folders import check_path
from gama_utils.core.schema import Absent, absent_track, passes_absent, require
from gama_utils.report import tables

ARM_MARKERS = {"female": "o", "male": "s"}
SHORT_UNITS = {"count": "terms", "rating": "1-5 rating", "rate": "pp"}


def composites(gaps: pd.DataFrame, track: str | None = None) -> pd.DataFrame:
    """Blame and therapeutic/empathy composites per model × track × arm (female, male), the axes of Figs 7-8.

    Each metric's per-arm mean is standardised over all model × arm points of its track
    (z = (value − mean) / sd, sd over the 2 × n_models points; 0 when they are all equal).
    blame = mean z of the metrics declared with direction "blame" (the paper's Puni., Sev., Instr.,
    Full-Bl.); therapeutic = mean z of those with direction "care" (Ther., Emp.-Agg.).
    The composites are relative to the models plotted together. Columns: model, track, arm,
    blame, therapeutic, simulated.
    """
    cells = tables.select_cells(gaps, track=track, stratified=False)
    points = cells.melt(id_vars=["model", "track", "metric", "simulated"], value_vars=["female", "male"],
                        var_name="arm", value_name="value")
    grouped = points.groupby(["track", "metric"])["value"]
    spread = grouped.transform("std", ddof=0)
    points["z"] = ((points["value"] - grouped.transform("mean")) / spread.where(spread > 0)).fillna(0.0)
    wide = points.pivot_table(index=["model", "track", "arm"], columns="metric", values="z")
    blame, care = with_direction("blame"), with_direction("care")
    missing = [m for m in blame + care if m not in wide.columns]
    if missing:
        raise ValueError(f"composites need every metric with a direction; gaps lack {', '.join(missing)}")
    result = pd.DataFrame({"blame": wide[list(blame)].mean(axis=1),
                           "therapeutic": wide[list(care)].mean(axis=1)}).reset_index()
    simulated = points.groupby(["model", "track"])["simulated"].any()
    result["simulated"] = [bool(simulated[(m, t)]) for m, t in zip(result["model"], result["track"])]
    return result


@passes_absent
def transitions(gaps: pd.DataFrame, track: str) -> Figure | Absent:
    """Figs 7-8: each model's female-actor point with an arrow to its male-actor point in the composite plane.

    Absent when the run has no pairs of `track`.
    """
    if (absent := absent_track(gaps, track)) is not None:
        return absent
    points = composites(gaps, track)
    models = list(tables.model_rows(points["model"]).get_level_values("Model"))
    palette = dict(zip(models, sns.color_palette("tab20" if len(models) > 10 else "tab10", len(models))))
    with sns.axes_style("whitegrid"):
        fig, ax = plt.subplots(figsize=(9, 6.5), layout="constrained")
        sns.scatterplot(data=points, x="blame", y="therapeutic", hue="model", hue_order=models, palette=palette,
                        style="arm", markers=ARM_MARKERS, style_order=["female", "male"], s=90, ax=ax)
        by_arm = points.set_index(["model", "arm"])
        for model in models:
            start, end = by_arm.loc[(model, "female")], by_arm.loc[(model, "male")]
            ax.annotate("", xy=(end["blame"], end["therapeutic"]), xytext=(start["blame"], start["therapeutic"]),
                        arrowprops={"arrowstyle": "-|>", "color": palette[model], "lw": 1.6,
                                    "shrinkA": 6, "shrinkB": 6})
    ax.axhline(0, color="0.6", lw=0.8, zorder=0)
    ax.axvline(0, color="0.6", lw=0.8, zorder=0)
    ax.set_xlabel(f"Blame composite (mean z-score of {_labels('blame')}; SD units)")
    ax.set_ylabel(f"Therapeutic/empathy composite (mean z-score of {_labels('care')}; SD units)")
    ax.set_title(_title(f"Response transitions on the {tables.TRACK_LABELS[track]}: female → male actor", points))
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False, title="model / actor")
    return fig


@passes_absent
def dimension_heatmap(gaps: pd.DataFrame, track: str, comparison: str = PAPER_COMPARISON) -> Figure | Absent:
    """Figs 11-12: Δ per dimension × metric of one track, averaged over models (gaps stratified by dimension).

    Absent when the run has no pairs of `track`.
    """
    if (absent := absent_track(gaps, track)) is not None:
        return absent
    table = tables.stratified_table(gaps, "dimension", track=track, comparison=comparison)
    table.index = table.index.droplevel("Track")
    return _heatmap(table, f"Dimension-level gender gaps on the {tables.TRACK_LABELS[track]}", "Conflict dimension",
                    "averaged over models")


@passes_absent
def severity_heatmap(gaps: pd.DataFrame, per_model: bool = False, comparison: str = PAPER_COMPARISON) -> Figure:
    """Fig 13: Δ per track × severity (× model with per_model) and metric, averaged over models by default."""
    table = tables.stratified_table(gaps, "severity", per_model=per_model, comparison=comparison)
    table.index = [" · ".join(str(p) for p in key) for key in table.index]
    return _heatmap(table, "Severity-level gender gaps", "Track · " + ("model · " if per_model else "") + "severity",
                    "per model" if per_model else "averaged over models")


def forest(gaps: pd.DataFrame, metrics: Sequence[str] | None = None, comparison: str = PAPER_COMPARISON,
           alpha: float = 0.05, size: tuple[float, float] | None = None) -> Figure:
    """Δ with its bootstrap CI per model (rows) and metric (panels, default every registered metric), one
    colour per track.

    Filled markers: Holm-adjusted p < alpha; hollow: not significant after Holm. `size` (inches) defaults
    to one that grows with the panels and the models.
    """
    cells = tables.select_cells(gaps, comparison=comparison, stratified=False)
    require(cells, ("ci_low", "ci_high", "p_holm"), "gaps")
    metrics = [m for m in (metrics or metric_keys()) if m in set(cells["metric"])]
    models = list(tables.model_rows(cells["model"], tables.model_groups(cells)).get_level_values("Model"))
    tracks = [t for t in TRACKS if t in set(cells["track"])]
    colours = dict(zip(TRACKS, sns.color_palette("colorblind", 2)))
    offsets = dict(zip(tracks, np.linspace(-0.15, 0.15, len(tracks)) if len(tracks) > 1 else [0.0]))
    with sns.axes_style("whitegrid"):
        fig, axes = plt.subplots(1, len(metrics), figsize=size or (2.6 * len(metrics) + 2, 0.42 * len(models) + 1.8),
                                 sharey=True, squeeze=False, layout="constrained")
    for ax, key in zip(axes[0], metrics):
        for track in tracks:
            rows = cells[(cells["metric"] == key) & (cells["track"] == track)].set_index("model").reindex(models)
            y = np.arange(len(models)) + offsets[track]
            errors = np.vstack([rows["delta"] - rows["ci_low"], rows["ci_high"] - rows["delta"]])
            ax.errorbar(rows["delta"], y, xerr=np.abs(errors), fmt="none", ecolor=colours[track], lw=1.2)
            significant = (rows["p_holm"] < alpha).to_numpy()
            ax.scatter(rows["delta"][significant], y[significant], color=colours[track], s=28, zorder=3)
            ax.scatter(rows["delta"][~significant], y[~significant], facecolor="white", edgecolor=colours[track],
                       s=28, zorder=3)
        ax.axvline(0, color="0.3", lw=0.9)
        ax.set_title(metric(key).label)
        ax.set_xlabel(f"Δ ({_unit(key, delta=True)})")
    axes[0][0].set_yticks(np.arange(len(models)), models)
    axes[0][0].invert_yaxis()
    handles = [Line2D([], [], color=colours[t], marker="o", ls="-", label=tables.TRACK_LABELS[t]) for t in tracks]
    handles += [Line2D([], [], color="0.3", marker="o", ls="", label=f"Holm p < {alpha:g}"),
                Line2D([], [], color="0.3", marker="o", mfc="white", ls="", label="not significant")]
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), frameon=False)
    arm, reference = comparison.split("-")
    fig.suptitle(_title(f"Gender gap Δ = {arm} − {reference} with 95% bootstrap CI", cells))
    return fig


@passes_absent
def pooled_forest(gaps: pd.DataFrame, pooled: pd.DataFrame, track: str,
                  metrics: Sequence[str] | None = None) -> Figure | Absent:
    """Each model's Δ with its bootstrap CI and, below them, the random-effects pooled Δ as a diamond (its
    HKSJ CI) with the prediction interval for a new model as a bar; one panel per metric.

    `pooled` is `gama_utils.analysis.pooling.pooled_gaps` output.
    """
    missing = absent_track(pooled, track)
    if missing:
        return missing
    cells = tables.select_cells(gaps, track=track, stratified=False)
    require(pooled, ("track", "metric", "pooled_delta", "ci_low", "ci_high", "pi_low", "pi_high", "i2"), "pooled")
    summary = pooled[pooled["track"] == track].set_index("metric")
    metrics = [m for m in (metrics or metric_keys()) if m in summary.index]
    models = list(tables.model_rows(cells["model"], tables.model_groups(cells)).get_level_values("Model"))
    y_pooled = len(models) + 0.6
    colour = sns.color_palette("colorblind", 3)[dict(zip(TRACKS, range(2))).get(track, 2)]
    with sns.axes_style("whitegrid"):
        fig, axes = plt.subplots(1, len(metrics), figsize=(2.6 * len(metrics) + 2, 0.42 * len(models) + 2.4),
                                 sharey=True, squeeze=False, layout="constrained")
    for ax, key in zip(axes[0], metrics):
        rows = cells[cells["metric"] == key].set_index("model").reindex(models)
        y = np.arange(len(models))
        ax.errorbar(rows["delta"], y, xerr=np.abs(np.vstack([rows["delta"] - rows["ci_low"],
                                                             rows["ci_high"] - rows["delta"]])),
                    fmt="o", color=colour, ms=4, lw=1.1)
        row = summary.loc[key]
        ax.plot([row["pi_low"], row["pi_high"]], [y_pooled, y_pooled], color="0.25", lw=2.5, alpha=0.5,
                solid_capstyle="butt")
        ax.fill([row["ci_low"], row["pooled_delta"], row["ci_high"], row["pooled_delta"]],
                [y_pooled, y_pooled - 0.35, y_pooled, y_pooled + 0.35], color="0.15", zorder=3)
        ax.axvline(0, color="0.3", lw=0.9)
        ax.set_title(f"{metric(key).label} (I² {row['i2']:.0%})")
        ax.set_xlabel(f"Δ ({_unit(key, delta=True)})")
    axes[0][0].set_yticks([*range(len(models)), y_pooled], [*models, "Pooled (random effects)"])
    axes[0][0].invert_yaxis()
    handles = [Line2D([], [], color=colour, marker="o", ls="-", label="model Δ, 95% bootstrap CI"),
               Line2D([], [], color="0.15", marker="D", ls="", label="pooled Δ, 95% HKSJ CI"),
               Line2D([], [], color="0.25", alpha=0.5, lw=2.5, label="95% prediction interval for a new model")]
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), frameon=False)
    fig.suptitle(_title(f"{tables.TRACK_LABELS.get(track, track)}: Δ = female − male per model and pooled over "
                        "models", cells))
    return fig


HEADLINE_WIDTH_IN = 11.5  # at 100 dpi, the report's 1,150 px column


def headline(gaps: pd.DataFrame, alpha: float = 0.05) -> Figure:
    """The report's first figure: `forest` of every metric and both tracks, sized to be read at 1,150 px wide."""
    cells = tables.select_cells(gaps, stratified=False)
    with plt.rc_context({"font.size": 8, "axes.titlesize": 9, "axes.labelsize": 8}):
        fig = forest(gaps, alpha=alpha, size=(HEADLINE_WIDTH_IN, 0.2 * cells["model"].nunique() + 1.6))
    return fig


def run_vs_paper(compared: pd.DataFrame) -> Figure:
    """Run Δ (y) against the paper's Δ (x) per cell, one panel per metric, the line y = x, and the sign agreement.

    `compared` is `tables.compare_with_paper` output (model, track, metric, delta, paper_delta, same_direction).
    """
    require(compared, ("track", "metric", "delta", "paper_delta", "same_direction"), "comparison with the paper")
    metrics = [m for m in metric_keys() if m in set(compared["metric"])]
    colours = dict(zip(TRACKS, sns.color_palette("colorblind", 2)))
    with plt.rc_context({"font.size": 8, "axes.titlesize": 9}), sns.axes_style("whitegrid"):
        fig, axes = plt.subplots(1, len(metrics), figsize=(HEADLINE_WIDTH_IN, 2.6), squeeze=False,
                                 layout="constrained")
        for ax, key in zip(axes[0], metrics):
            cells = compared[compared["metric"] == key]
            for track in [t for t in TRACKS if t in set(cells["track"])]:
                here = cells[cells["track"] == track]
                ax.scatter(here["paper_delta"], here["delta"], s=14, color=colours[track],
                           label=tables.TRACK_LABELS[track])
            values = cells[["delta", "paper_delta"]].to_numpy(dtype=float)
            low, high = float(np.nanmin(values)), float(np.nanmax(values))
            pad = 0.08 * (high - low or 1.0)
            ax.plot([low - pad, high + pad], [low - pad, high + pad], color="0.4", lw=0.9, ls="--")
            ax.axhline(0, color="0.7", lw=0.7)
            ax.axvline(0, color="0.7", lw=0.7)
            decided = cells["same_direction"].dropna().astype(bool)
            agreement = f"same sign {int(decided.sum())}/{len(decided)}" if len(decided) else "no sign to compare"
            ax.set_title(f"{metric(key).label} ({SHORT_UNITS[metric(key).kind]})\n{agreement}")
            ax.set_xlabel("paper Δ")
        axes[0][0].set_ylabel("run Δ")
        handles, labels = axes[0][0].get_legend_handles_labels()
        handles.append(Line2D([], [], color="0.4", ls="--"))
        labels.append("y = x")
        fig.legend(handles, labels, loc="outside lower center", ncol=len(labels), frameon=False)
    decided = compared["same_direction"].dropna().astype(bool)
    overall = f"{decided.mean():.0%} of {len(decided)} cells with the paper's sign" if len(decided) else ""
    fig.suptitle(_title(f"This run against the paper (Tables 2-3), per model × track × metric cell; {overall}",
                        compared))
    return fig


def save_figure(fig: Figure, directory: str | Path, name: str) -> dict[str, Path]:
    """Write the figure as name.png (200 dpi) and name.pdf; returns the paths.

    In a run that used a plumbing-check model the figure carries that note at its top. Every text is
    drawn as written: a model name such as "a$\\foo$" is never read as mathtext (which would fail or
    typeset it).
    """
    for text in fig.findobj(Text):
        text.set_parse_math(False)
    directory = Path(directory)
    paths = {suffix: check_path(directory / f"{name}.{suffix}") for suffix in ("png", "pdf")}
    directory.mkdir(parents=True, exist_ok=True)
    note = tables.provenance_note(directory, simulated=False)
    if note:
        fig.text(0.5, 1.0, note, ha="center", va="bottom", fontsize=8, color="#a33", wrap=True)
    for suffix, path in paths.items():
        fig.savefig(path, dpi=200 if suffix == "png" else None, bbox_inches="tight")
    return paths


def _heatmap(table: pd.DataFrame, title: str, row_label: str, aggregation: str) -> Figure:
    """Cells coloured by Δ / (largest |Δ| of its metric), so counts and rates share one scale; Δ written in each."""
    annotations = tables.format_table(table).to_numpy()
    scale = table.abs().max().replace(0, np.nan)
    relative = (table / scale).fillna(0.0)
    keys = [tables.key_of_label(label) or str(label) for label in table.columns]
    relative.columns = [f"{label}\n({SHORT_UNITS[metric(key).kind]})" for label, key in zip(table.columns, keys)]
    with sns.axes_style("white"):
        fig, ax = plt.subplots(figsize=(1.5 * table.shape[1] + 4, 0.55 * table.shape[0] + 2), layout="constrained")
        colour_label = "colour: Δ / largest |Δ| of its metric\nred: female higher, blue: male higher"
        sns.heatmap(relative, cmap="RdBu_r", center=0, vmin=-1, vmax=1, annot=annotations, fmt="", linewidths=0.5,
                    cbar_kws={"label": colour_label}, ax=ax)
    ax.set_xlabel(f"Metric (cells: Δ = female − male, {aggregation}; pp = percentage points)")
    ax.set_ylabel(row_label)
    ax.set_title(_title(title, table))
    return fig


def _labels(direction: str) -> str:
    return ", ".join(metric(k).label for k in with_direction(direction))  # type: ignore[arg-type]


def _unit(key: str, delta: bool = False) -> str:
    kind = metric(key).kind
    if kind == "rate":
        return "percentage points" if delta else "%"
    return "rating points (1-5 scale)" if kind == "rating" else "terms per response"


def _title(text: str, data: pd.DataFrame) -> str:
    simulated = data.attrs.get("simulated") if "simulated" not in data.columns else bool(data["simulated"].any())
    return f"{text} (simulated)" if simulated else text


ABLATION_METRICS = ("puni", "ther", "instr")


def variant_ablation(gaps: pd.DataFrame, panels: Sequence[Comparison], track: str | None = None,
                     metrics: Sequence[str] = ABLATION_METRICS) -> Figure:
    """Fig 9: Δ with 95% CI along each comparison (scale, base → instruct, thinking off → on), one line per metric.

    `panels` come from `gama_utils.analysis.ablation.comparisons`; with no `track`, both tracks are drawn
    (solid intimate, dashed public).
    """
    if not panels:
        raise ValueError("no comparison to draw: the variants need family, size_b, post_training or thinking "
                         "attributes that differ (see gama_utils.analysis.ablation)")
    cells = tables.select_cells(gaps, track=track, comparison=PAPER_COMPARISON, stratified=False)
    tracks = [t for t in TRACKS if t in set(cells["track"])]
    colours = dict(zip(metrics, sns.color_palette("colorblind", len(metrics))))
    with sns.axes_style("whitegrid"):
        fig, axes = plt.subplots(1, len(panels), figsize=(max(5.0, 4.3 * len(panels)), 4.2), layout="constrained",
                                 squeeze=False, gridspec_kw={"width_ratios": [len(p.models) for p in panels]})
    for ax, panel in zip(axes[0], panels):
        x = np.arange(len(panel.models))
        for t_index, t in enumerate(tracks):
            for key in metrics:
                rows = cells[(cells["metric"] == key) & (cells["track"] == t)].set_index("model").reindex(
                    list(panel.models))
                offset = (t_index - (len(tracks) - 1) / 2) * 0.08
                errors = np.abs(np.vstack([rows["delta"] - rows["ci_low"], rows["ci_high"] - rows["delta"]]))
                ax.errorbar(x + offset, rows["delta"], yerr=errors, color=colours[key], marker="o", ms=4,
                            ls="-" if t == "intimate" else "--", capsize=2, lw=1.3)
        ax.axhline(0, color="0.3", lw=0.9)
        ax.set_xticks(x, [short_name(m, panel.models) for m in panel.models], rotation=20)
        ax.set_title(panel.title)
    axes[0][0].set_ylabel("Δ = female − male (terms; pp for Instr.)")
    handles = [Line2D([], [], color=colours[k], marker="o", label=metric(k).label) for k in metrics]
    handles += [Line2D([], [], color="0.3", ls="-" if t == "intimate" else "--", label=tables.TRACK_LABELS[t])
                for t in tracks]
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), frameon=False)
    fig.suptitle(_title("Effects of scale, post-training and reasoning mode on gender gaps", cells))
    return fig


def evaluator_scatter(a: pd.DataFrame, b: pd.DataFrame, label_a: str, label_b: str,
                      agreement: dict | None = None) -> Figure:
    """Fig 10: Δ by evaluator A (x) vs evaluator B (y) over all model × track × metric cells, with y = x.

    Counts/ratings and percentage points share the axes as the paper's figure does; points are
    coloured by metric and shaped by track.
    """
    keys = ["model", "track", "metric"]
    merged = a[keys + ["delta"]].merge(b[keys + ["delta"]], on=keys, suffixes=("_a", "_b"))
    merged["Metric"] = merged["metric"].map(lambda k: metric(k).label)
    merged["Track"] = merged["track"].map(tables.TRACK_LABELS)
    with sns.axes_style("whitegrid"):
        fig, ax = plt.subplots(figsize=(6.4, 6), layout="constrained")
    sns.scatterplot(data=merged, x="delta_a", y="delta_b", hue="Metric", style="Track", ax=ax, s=45,
                    palette="colorblind")
    low = float(np.nanmin(merged[["delta_a", "delta_b"]].to_numpy())) - 1
    high = float(np.nanmax(merged[["delta_a", "delta_b"]].to_numpy())) + 1
    ax.plot([low, high], [low, high], color="0.4", lw=1, ls="--", label="y = x")
    ax.axhline(0, color="0.7", lw=0.8)
    ax.axvline(0, color="0.7", lw=0.8)
    ax.set_xlabel(f"Δ by {label_a}")
    ax.set_ylabel(f"Δ by {label_b}")
    if agreement:
        ax.text(0.02, 0.98, f"direction agreement {agreement['direction_agreement']:.1%}\n"
                f"Pearson r = {agreement['pearson_r']:.3f}\nmean |ΔA − ΔB| = {agreement['mean_abs_diff']:.2f}",
                transform=ax.transAxes, va="top", fontsize=9, bbox={"facecolor": "white", "alpha": 0.8, "lw": 0})
    ax.set_title(_title("LLM evaluator consistency of gender-gap measurements", a))
    return fig
