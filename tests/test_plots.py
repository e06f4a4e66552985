"""Figures of 06_analyze (gama_utils.report.plots): what they draw, checked on small hand-made gaps frames."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from gama_utils.analysis import paper
from gama_utils.core.metrics import PAPER_METRIC_KEYS  # noqa: E402
from gama_utils.core.schema import Absent  # noqa: E402
from gama_utils.report import plots, tables  # noqa: E402

BLAME_VALUES = {"A": (1.0, 3.0), "B": (1.0, 3.0)}          # (female, male) for Puni., Sev., Instr., Full-Bl.
THERAPEUTIC_VALUES = {"A": (4.0, 2.0), "B": (2.0, 0.0)}    # (female, male) for Ther., Emp.-Agg.


def gaps_frame(values: dict, simulated: bool = False, **strata) -> pd.DataFrame:
    """Rows model × track × metric from {(model, track, metric): (female, male)} with CIs ±0.5 around Δ."""
    rows = []
    for (model, track, key), (female, male) in values.items():
        rows.append({"model": model, "track": track, "metric": key, "comparison": "female-male", "male": male,
                     "female": female, "delta": female - male, "n_pairs": 10, "n_excluded": 0,
                     "ci_low": female - male - 0.5, "ci_high": female - male + 0.5, "p_value": 0.01,
                     "p_holm": 0.01 if model == "A" else 0.2, "effect_size": 0.5, "simulated": simulated, **strata})
    return pd.DataFrame(rows)


def composite_frame(simulated: bool = False) -> pd.DataFrame:
    values = {}
    for model in ("A", "B"):
        for track in ("intimate", "public"):
            for key in PAPER_METRIC_KEYS:
                source = THERAPEUTIC_VALUES if key in ("ther", "emp_agg") else BLAME_VALUES  # the paper's Figs 7-8 axes
                values[(model, track, key)] = source[model]
    return gaps_frame(values, simulated)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_composites_by_hand():
    # Blame metrics: points (A♀ 1, A♂ 3, B♀ 1, B♂ 3): mean 2, population SD 1 → z = −1, +1, −1, +1.
    # Therapeutic metrics: (A♀ 4, A♂ 2, B♀ 2, B♂ 0): mean 2, SD sqrt(8/4) = √2 → z = √2, 0, 0, −√2.
    points = plots.composites(composite_frame(), "intimate").set_index(["model", "arm"])
    assert points.loc[("A", "female"), ["blame", "therapeutic"]].tolist() == pytest.approx([-1.0, math.sqrt(2)])
    assert points.loc[("A", "male"), ["blame", "therapeutic"]].tolist() == pytest.approx([1.0, 0.0])
    assert points.loc[("B", "male"), ["blame", "therapeutic"]].tolist() == pytest.approx([1.0, -math.sqrt(2)])


def test_transitions_draw_an_arrow_from_female_to_male_per_model():
    fig = plots.transitions(composite_frame(), "intimate")
    ax = fig.axes[0]
    arrows = [t for t in ax.texts if getattr(t, "arrow_patch", None) is not None]
    assert len(arrows) == 2
    ends = sorted((a.xyann, a.xy) for a in arrows)  # (female point, male point)
    assert ends[0][0] == pytest.approx((-1.0, 0.0)) and ends[0][1] == pytest.approx((1.0, -math.sqrt(2)))
    assert ends[1][0] == pytest.approx((-1.0, math.sqrt(2))) and ends[1][1] == pytest.approx((1.0, 0.0))
    assert "Intimate Track" in ax.get_title() and "(simulated)" not in ax.get_title()
    assert "Blame composite" in ax.get_xlabel() and "SD units" in ax.get_xlabel()
    assert "Therapeutic/empathy composite" in ax.get_ylabel()


def test_papers_transitions_move_to_the_lower_right():
    # §4.2 on Figs 7-8: from female- to male-actor prompts the models move toward higher blame and lower
    # therapeutic/empathy composites. With the paper's Tables 2-3 every model does so on both tracks.
    paper_gaps = tables.paper_gaps(paper.main_results())
    for track in ("intimate", "public"):
        points = plots.composites(paper_gaps, track).pivot(index="model", columns="arm",
                                                           values=["blame", "therapeutic"])
        assert len(points) == 10
        assert (points[("blame", "male")] > points[("blame", "female")]).all()
        assert (points[("therapeutic", "male")] < points[("therapeutic", "female")]).all()


def test_simulated_data_is_labelled_in_titles():
    simulated = composite_frame(simulated=True)
    assert plots.transitions(simulated, "public").axes[0].get_title().endswith("(simulated)")
    assert plots.forest(simulated)._suptitle.get_text().endswith("(simulated)")


def stratified_frame(stratum: str, levels: list[str], simulated: bool = False) -> pd.DataFrame:
    # Level 0: Puni. Δ −2 (A) and −4 (B) → mean −3; Full-Bl. Δ −20, −10 → −15.
    # Level 1: Puni. Δ +1 and +1 → +1;     Full-Bl. Δ +5, +5 → +5.
    frames = []
    for level, (puni, full_bl) in zip(levels, [((-2, -4), (-20, -10)), ((1, 1), (5, 5))]):
        values = {}
        for model, p, f in zip(("A", "B"), puni, full_bl):
            values[(model, "intimate", "puni")] = (5.0 + p, 5.0)
            values[(model, "intimate", "full_bl")] = (50.0 + f, 50.0)
        frames.append(gaps_frame(values, simulated, **{stratum: level}))
    return pd.concat(frames, ignore_index=True)


def test_dimension_heatmap_diverging_centred_and_annotated():
    fig = plots.dimension_heatmap(stratified_frame("dimension", ["financial_control", "privacy_violation"]), "intimate")
    ax = fig.axes[0]
    mesh = ax.collections[0]
    assert (mesh.norm.vmin, mesh.norm.vmax) == (-1, 1) and mesh.norm(0.0) == pytest.approx(0.5)  # centred at 0
    low_end, high_end = mesh.cmap(0.0), mesh.cmap(1.0)
    assert low_end[2] > low_end[0] and high_end[0] > high_end[2]  # blue for negative, red for positive
    assert [t.get_text() for t in ax.texts] == ["-3.00", "-15.0%", "+1.00", "+5.0%"]
    colours = mesh.get_facecolors()  # row-major: financial (Puni., Full-Bl.), privacy (Puni., Full-Bl.)
    assert colours[0][2] > colours[0][0] and colours[2][0] > colours[2][2]  # negative blue, positive red
    assert [t.get_text() for t in ax.get_yticklabels()] == ["Financial control", "Privacy violation"]
    assert "pp" in ax.get_xticklabels()[1].get_text() and "Dimension-level" in ax.get_title()
    assert "female − male" in ax.get_xlabel()


def test_severity_heatmap_rows_are_track_and_level():
    fig = plots.severity_heatmap(stratified_frame("severity", ["L1", "L2"], simulated=True))
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["Intimate Track · L1", "Intimate Track · L2"]
    assert [t.get_text() for t in ax.texts] == ["-3.00", "-15.0%", "+1.00", "+5.0%"]
    assert ax.get_title() == "Severity-level gender gaps (simulated)"


def test_forest_one_panel_per_metric_with_cis():
    fig = plots.forest(composite_frame())
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == ["Puni.", "Ther.", "Sev.", "Emp.-Agg.", "Instr.", "Full-Bl."]
    assert "percentage points" in panels[5].get_xlabel() and "terms per response" in panels[0].get_xlabel()
    assert [t.get_text() for t in panels[0].get_yticklabels()] == ["A", "B"]
    # Each panel: one error-bar line collection per track, spanning Δ ± 0.5 (A's Puni. Δ = 1 − 3 = −2).
    segments = panels[0].collections[0].get_segments()
    assert segments[0][:, 0] == pytest.approx([-2.5, -1.5])


def test_save_figure_writes_png_and_pdf(tmp_path):
    paths = plots.save_figure(plots.forest(composite_frame()), tmp_path / "figures", "forest")
    assert paths["png"].read_bytes()[:4] == b"\x89PNG" and paths["pdf"].read_bytes()[:4] == b"%PDF"


def test_composites_need_all_six_metrics():
    frame = composite_frame()
    with pytest.raises(ValueError, match="sev"):
        plots.composites(frame[frame["metric"] != "sev"], "intimate")
    assert np.isfinite(plots.composites(frame, None)[["blame", "therapeutic"]].to_numpy()).all()


def test_model_names_with_dollar_signs_are_drawn_as_written(tmp_path):
    # "a$\foo$b" would be read as mathtext and fail to typeset (ValueError at savefig) if it were parsed.
    hostile = {"A": "a$\\foo$b", "B": "$5 <script>"}
    frame = composite_frame().assign(model=lambda f: f["model"].map(hostile))
    fig = plots.transitions(frame, "intimate")
    paths = plots.save_figure(fig, tmp_path / "figures", "transitions")
    assert paths["png"].read_bytes()[:4] == b"\x89PNG" and paths["pdf"].read_bytes()[:4] == b"%PDF"
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert set(hostile.values()) <= set(legend)
    forest = plots.forest(frame)
    plots.save_figure(forest, tmp_path / "figures", "forest")
    assert [t.get_text() for t in forest.axes[0].get_yticklabels()] == list(hostile.values())


def test_pooled_forest_draws_the_pooled_diamond_and_prediction_interval_below_the_models():
    """A pooled row (made up) with Δ −2, CI −2.6 to −1.4, PI −4 to 0: the diamond's corners and the bar's ends."""
    gaps = composite_frame()
    pooled = pd.DataFrame({"track": "intimate", "metric": list(PAPER_METRIC_KEYS), "pooled_delta": -2.0,
                           "ci_low": -2.6, "ci_high": -1.4, "pi_low": -4.0, "pi_high": 0.0, "i2": 0.9})
    fig = plots.pooled_forest(gaps, pooled, "intimate")
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert panels[0].get_title() == "Puni. (I² 90%)"
    assert [t.get_text() for t in panels[0].get_yticklabels()] == ["A", "B", "Pooled (random effects)"]
    diamond = panels[0].patches[0].get_xy()[:, 0]
    assert sorted(set(np.round(diamond, 6))) == [-2.6, -2.0, -1.4]
    bar = next(line for line in panels[0].get_lines() if len(line.get_xdata()) == 2 and line.get_ydata()[0] > 1)
    assert list(bar.get_xdata()) == [-4.0, 0.0]
    assert isinstance(plots.pooled_forest(gaps, pooled, "public"), Absent)
