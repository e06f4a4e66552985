"""Figures of the benchmark: composition (as the paper's Fig 2) and a word cloud of the templates (Fig 3).

Both take the pairs frame (gama_utils.core.schema.PAIRS) and return a matplotlib Figure; titles
say the benchmark is this project's authored one, and `construction_note` adds that the
construction stages were simulated when they were. `save` writes PNG and PDF without dates or
version strings, so a rebuild with the same libraries gives the same bytes.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from gama_utils.bench.mirror import PREFIXES
from gama_utils.core import grid
from gama_utils.core.schema import require

DATASET_NAME = "GAMA-Bench (project edition)"
TITLE_SUFFIX = "this project's authored benchmark, not the paper's data"
# Function words of storytelling (time, counting, saying) that would otherwise fill the cloud.
EXTRA_STOPWORDS = frozenset(("ai just really said told will now one even also going got get still know want thing "
                             "things much make made way think back right something lot every last next ago later "
                             "first second two three four five six seven eight nine ten twenty half week weeks "
                             "weekend month months year years day days night time times hour hours minute minutes "
                             "morning evening afternoon today yesterday monday tuesday wednesday thursday friday "
                             "saturday sunday ask asked asking say saying see came come went go put took around "
                             "anything everything nothing someone anyone everyone honestly maybe whole").split())
TRACK_PALETTES = {"intimate": "flare", "public": "crest"}


def construction_note(summary: dict) -> str:
    """A caption line saying how the benchmark was built (SIMULATED stages named), from a construction summary."""
    if summary.get("simulated") and summary.get("replayed_bank"):
        return "built offline: SIMULATED generator/reviewer/compiler replaying the authored template bank"
    if summary.get("simulated"):
        return "some construction stages SIMULATED (offline backend)"
    return "constructed with: " + ", ".join(dict.fromkeys([*summary.get("generators", []),
                                                         *summary.get("reviewers", [])]))


def _dimension_colours() -> dict[str, tuple]:
    colours: dict[str, tuple] = {}
    for track, palette in TRACK_PALETTES.items():
        dims = grid.dimensions(track)
        colours.update(zip((d.slug for d in dims), sns.color_palette(palette, len(dims))))
    return colours


def composition_figure(pairs: pd.DataFrame, note: str = "") -> Figure:
    """Fig 2: a donut of tracks (inner ring) and dimensions (outer ring), and pairs per dimension by severity."""
    require(pairs, ("track", "dimension", "severity"), "pairs")
    counts = pairs.groupby(["dimension", "severity"]).size().unstack(fill_value=0)
    counts = counts.reindex(index=[d.slug for d in grid.DIMENSIONS], columns=list(grid.SEVERITIES), fill_value=0)
    totals = counts.sum(axis=1)
    tracks = pairs["track"].value_counts().reindex(list(grid.TRACKS), fill_value=0)
    colours = _dimension_colours()
    names = {d.slug: d.name for d in grid.DIMENSIONS}

    fig = Figure(figsize=(15, 6.5), layout="constrained")
    donut, bars = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.25]})
    track_colours = [sns.color_palette(TRACK_PALETTES[t], 5)[2] for t in grid.TRACKS]
    donut.pie(tracks.to_numpy(), radius=0.68, colors=track_colours, startangle=90, counterclock=False,
              labels=[f"{t}\n{n:,}" for t, n in tracks.items()], labeldistance=0.78,
              textprops={"color": "white", "fontsize": 10, "weight": "bold", "ha": "center"},
              wedgeprops={"width": 0.3, "edgecolor": "white"})
    wedges, _ = donut.pie(totals.to_numpy(), radius=1.0, colors=[colours[s] for s in totals.index], startangle=90,
                          counterclock=False, wedgeprops={"width": 0.3, "edgecolor": "white"})
    donut.legend(wedges, [f"{names[s]} ({n:,})" for s, n in totals.items()], loc="upper center",
                 bbox_to_anchor=(0.5, 0.02), ncol=2, fontsize=8.5, frameon=False)
    donut.set_title(f"{len(pairs):,} pairs by track and dimension", fontsize=11)
    donut.set_aspect("equal")

    severity_colours = sns.color_palette("YlOrRd", len(grid.SEVERITIES))
    left = np.zeros(len(counts))
    labels = [names[s] for s in counts.index]
    for colour, severity in zip(severity_colours, grid.SEVERITIES):
        values = counts[severity].to_numpy()
        bars.barh(labels, values, left=left, color=colour, edgecolor="white", label=severity)
        for y, (x0, value) in enumerate(zip(left, values)):
            if value:
                bars.text(x0 + value / 2, y, str(value), ha="center", va="center", fontsize=8)
        left += values
    bars.invert_yaxis()
    bars.set_xlabel("pairs")
    bars.legend(title="severity", loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=len(grid.SEVERITIES),
                frameon=False)
    bars.set_title("pairs per dimension by severity (L1 mild, L2 moderate, L3 severe)", fontsize=11)
    sns.despine(ax=bars)
    fig.suptitle(f"{DATASET_NAME} composition: {TITLE_SUFFIX}" + (f"\n{note}" if note else ""), fontsize=12)
    return fig


def neutral_texts(pairs: pd.DataFrame) -> list[str]:
    """The neutral-arm prompts without their "I am a person." prefix: the templates as read in the neutral arm."""
    require(pairs, ("prompt_neutral",), "pairs")
    prefixes = tuple(p["neutral"] for p in PREFIXES.values())
    return [next((t[len(p):].lstrip() for p in prefixes if t.startswith(p)), t) for t in pairs["prompt_neutral"]]


def wordcloud_figure(pairs: pd.DataFrame, note: str = "", max_words: int = 150) -> Figure:
    """Fig 3: a word cloud of the neutral templates (deterministic layout)."""
    from wordcloud import STOPWORDS, WordCloud

    cloud = WordCloud(width=1200, height=600, background_color="white", max_words=max_words, random_state=0,
                      collocations=False, colormap="viridis", min_word_length=3,
                      stopwords=set(STOPWORDS) | EXTRA_STOPWORDS)
    image = cloud.generate(" ".join(neutral_texts(pairs))).to_array()
    fig = Figure(figsize=(12, 6.6), layout="constrained")
    ax = fig.subplots()
    ax.imshow(image, interpolation="bilinear")
    ax.set_axis_off()
    ax.set_title(f"{DATASET_NAME} word cloud of {len(pairs):,} neutral templates: {TITLE_SUFFIX}"
                 + (f"\n{note}" if note else ""), fontsize=11)
    return fig


def save(fig: Figure, folder: str | Path, stem: str) -> list[Path]:
    """Write `<stem>.png` and `<stem>.pdf` with no creation date or software version in them."""
    from gama_utils.core.run_folders import atomic_write

    paths = []
    for suffix, options in (("png", {"dpi": 150, "metadata": {"Software": None}}),
                            ("pdf", {"metadata": {"CreationDate": None, "Producer": None, "Creator": None}})):
        buffer = io.BytesIO()
        fig.savefig(buffer, format=suffix, **options)
        paths.append(atomic_write(Path(folder) / f"{stem}.{suffix}", buffer.getvalue()))
    return paths
