"""Every analysis notebook (notebooks/NN_*.ipynb from 04 on, found by the glob) headless under papermill, offline,
on 20 pairs: each stage writes its artifacts, the tables beyond the paper hold what an independent computation
gives, every artifact reaches the run report in its section, and a new notebook needs no list edited."""

import json
import math
import shutil

import numpy as np
import pandas as pd
import papermill
import pytest
import statsmodels.api as sm
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import TTestPower

from gama_utils.analysis import ablation, paper
from gama_utils.bench import publication
from gama_utils.bench.compilation import METADATA_COLUMNS
from gama_utils.bench.mirror import compile_pair
from gama_utils.bench.templates import load_templates
from gama_utils.core import grid, run_folders
from gama_utils.core.metrics import CORE_TEST_METRICS, metric, metric_keys
from gama_utils.paths import NOTEBOOKS
from gama_utils.report import artifacts
from gama_utils.report import run_report as report
from gama_utils.runs import orchestrate as runs

pytestmark = pytest.mark.slow

FAST = {"06_analyze": {"mixed_effects": False}, "07_ablation": {"limit": 20}, "08_robustness": {"human_n": 20}}
COMMON = {"n_boot": 200}  # passed to every notebook that declares the parameter
STEREOTYPE_FIRST = {"female": 0, "male": 1, "none": 2}
TOY = "Toy analysis (beyond the paper)"


def analysis_notebooks(folder=NOTEBOOKS) -> list:
    """The numbered notebooks this module runs: all of them but the benchmark construction (01-03, run by
    tests/test_notebooks_01_03.py through rebuild.rebuild)."""
    return [nb for nb in runs.notebooks_in_order(folder) if nb.stem not in publication.STAGES]


def parameters_for(notebook, run, pairs) -> dict:
    declared = set(papermill.inspect_notebook(str(notebook)))
    common = {**COMMON, "pairs_path": str(pairs)}
    return {"run_dir": str(run), **{k: v for k, v in common.items() if k in declared}, **FAST.get(notebook.stem, {})}


def fixture_pairs() -> pd.DataFrame:
    """Two templates per dimension, those whose partner has a stereotyped occupation first, mirror-compiled."""
    bank = load_templates()
    bank = bank.assign(rank=bank["occupation_stereotype"].map(STEREOTYPE_FIRST).fillna(3)).sort_values(
        "rank", kind="stable").groupby("dimension").head(2).sort_index().reset_index(drop=True)
    rows = []
    for i, t in enumerate(bank.itertuples()):
        prompts = compile_pair(t.text, t.track, t.relationship or "partner")
        rows.append({"pair_id": f"T-{i:03d}", "template_id": t.template_id, "track": t.track,
                     "dimension": t.dimension, "severity": t.severity, "style": t.style,
                     "relationship": t.relationship, **{f"prompt_{a}": p for a, p in prompts.items()},
                     **{c: getattr(t, c) if isinstance(getattr(t, c), str) else None for c in METADATA_COLUMNS}})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def offline_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("run")
    pairs = root / "pairs.jsonl"
    pairs.write_text("".join(json.dumps(r) + "\n" for r in fixture_pairs().to_dict("records")), encoding="utf-8")
    run = root / "offline"
    # two at once, as `make reproduce` runs them (06 beside 08): every test of this file reads a run made that way
    runs.execute_notebooks(analysis_notebooks(), run, lambda nb: parameters_for(nb, run, pairs), label="test", jobs=2)
    return run


def _csv(run, name: str) -> pd.DataFrame:
    return pd.read_csv(run / "tables" / f"{name}.csv")


def _output_text(run, notebook: str) -> str:
    return json.dumps(json.loads((run / "notebooks" / f"{notebook}.ipynb").read_text(encoding="utf-8")))


def _sighted(run) -> pd.DataFrame:
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    evaluations = run_folders.load(run, "evaluations")
    return evaluations[(evaluations.evaluator == manifest["stages"]["05_evaluate"]["evaluator"]) & ~evaluations.blind]


def test_every_numbered_notebook_is_executed(offline_run):
    found = {nb.stem for nb in runs.notebooks_in_order()}
    executed = {p.stem for p in (offline_run / "notebooks").glob("*.ipynb")}
    assert found == set(publication.STAGES) | executed and {"04_respond", "08_robustness"} <= executed
    assert {row["notebook"] for row in json.loads((offline_run / "timings.json").read_text())} == executed


@pytest.mark.parametrize("notebook", runs.notebooks_in_order(), ids=lambda p: p.stem)
def test_every_notebook_opens_with_what_it_reads_writes_and_how_to_read_it(notebook):
    opening = "".join(json.loads(notebook.read_text(encoding="utf-8"))["cells"][0]["source"])
    for heading in ("**Reads", "**Writes", "**How to read the outputs:**"):
        assert heading in opening, (notebook.stem, heading)


def test_every_stage_writes_its_artifacts(offline_run):
    responses = run_folders.load(offline_run, "responses")
    assert len(responses) == 2 * len(grid.BY_SLUG) * 10 * 2 and responses.simulated.all()  # 2 pairs a dimension
    evaluations = run_folders.load(offline_run, "evaluations")
    assert set(evaluations.blind) == {False, True} and evaluations.valid.all()
    for name in ("table2_intimate", "table3_public", "table6_pvalues", "table7_qwen_intimate", "table8_qwen_public",
                 "table10_intimate_swap", "table11_public_swap", "table4_human", "evaluator_agreement",
                 "ablation_differences", "ablation_trend"):
        caption = (offline_run / "tables" / f"{name}.md").read_text(encoding="utf-8").splitlines()[0]
        assert caption.startswith("SIMULATED"), name
        assert (offline_run / "tables" / f"{name}.tex").exists() and (offline_run / "tables" / f"{name}.csv").exists()
    for name in ("fig7_transitions_intimate", "fig8_transitions_public", "fig9_qwen_ablation",
                 "fig10_evaluator_agreement", "fig11_dimension_intimate", "fig13_severity"):
        assert (offline_run / "figures" / f"{name}.png").stat().st_size > 10_000, name
        assert (offline_run / "figures" / f"{name}.pdf").exists(), name


def test_manifest_records_the_stages_the_benchmark_and_no_secret(offline_run):
    manifest = json.loads((offline_run / "manifest.json").read_text(encoding="utf-8"))
    assert {"04_respond", "05_evaluate", "07_ablation", "08_robustness"} <= set(manifest["stages"])
    assert manifest["stages"]["04_respond"]["backend"] == "sim"
    pairs = offline_run.parent / "pairs.jsonl"
    assert manifest["stages"]["04_respond"]["benchmark"] == pairs.as_posix()
    assert manifest["stages"]["04_respond"]["benchmark_sha256"] == run_folders.file_sha256(pairs)
    assert "api_key" not in json.dumps(manifest).lower().replace("api_key_env", "")


def test_the_paper_agreement_figures_appear_in_the_run(offline_run):
    agreement = (offline_run / "tables" / "evaluator_agreement.csv").read_text(encoding="utf-8")
    paper_row = next(line for line in agreement.splitlines() if line.startswith('"paper'))
    assert ",0.974576" in paper_row and ",0.959829" in paper_row and ",1.80283" in paper_row


# ---------------------------------------------------------------- 06: the tables beyond the paper (issue 16)

def test_table6_tests_hold_the_gaps_tests_and_the_zsplit_decisions(offline_run):
    gaps = run_folders.load(offline_run, "gaps").query("comparison == 'female-male'")
    tests = _csv(offline_run, "table6_tests")
    assert len(tests) == 10 * 2 * 4, "ten models × two tracks × the four core metrics"
    labels = {metric(k).label: k for k in CORE_TEST_METRICS}  # Table 6's four: Puni., Ther., Emp.-Agg., Instr.
    cells = gaps.assign(Track=gaps.track.map({"intimate": "Intimate Track", "public": "Public Track"}))
    merged = tests.assign(metric=tests.Metric.map(labels)).merge(
        cells, left_on=["Track", "Model", "metric"], right_on=["Track", "model", "metric"])
    assert len(merged) == len(tests)
    np.testing.assert_allclose(merged["p"], merged["p_value"], rtol=1e-12)
    np.testing.assert_allclose(merged["p Holm zsplit"], merged["p_holm_zsplit"], rtol=1e-12)
    flips = (merged["p_holm"] < 0.05) != (merged["p_holm_zsplit"] < 0.05)
    assert merged["Holm decision changes"].tolist() == flips.tolist()


def test_power_is_statsmodels_ttest_power_at_the_runs_median_n_and_spread(offline_run):
    gaps = run_folders.load(offline_run, "gaps").query("comparison == 'female-male'")
    power = _csv(offline_run, "power")
    assert len(power) == 2 * len(metric_keys())
    for row in power.itertuples():
        cell = gaps[(gaps.track == row.track) & (gaps.metric == row.metric)]
        n, sd = cell["n_pairs"].median(), cell["sd_diff"].median()
        effect = TTestPower().solve_power(nobs=int(n), alpha=0.05, power=0.8, alternative="two-sided")
        m = int(gaps["holm_family_size"].max())
        effect_holm = TTestPower().solve_power(nobs=int(n), alpha=0.05 / m, power=0.8, alternative="two-sided")
        assert (row.n_pairs, row.sd_diff) == pytest.approx((n, sd))
        assert (row.mdd, row.mdd_holm) == pytest.approx((effect * sd, effect_holm * sd), rel=1e-9)


def test_power_plan_is_the_pairs_statsmodels_needs_for_the_papers_averages(offline_run):
    plan = _csv(offline_run, "power_plan")
    averages = paper.track_averages(paper.main_results()).set_index(["track", "metric"])["delta"]
    assert len(plan) == len(averages)  # a row per track × metric the paper reports an average for
    for row in plan.itertuples():
        assert row.target_delta == pytest.approx(averages[(row.track, row.metric)])
        if row.target_delta != 0 and row.sd_diff > 0:
            n = TTestPower().solve_power(effect_size=abs(row.target_delta) / row.sd_diff, alpha=0.05, power=0.8,
                                         alternative="two-sided")
            assert row.pairs_needed == math.ceil(n), row


def test_one_sample_per_prompt_has_no_sampling_variance_table(offline_run):
    assert not (offline_run / "tables" / "sampling_variance.csv").exists()
    assert "one sample per prompt: there is no sampling variance" in _output_text(offline_run, "06_analyze")


def test_the_null_check_is_a_registered_simulated_control(offline_run):
    table = _csv(offline_run, "null_check")
    caption = (offline_run / "tables" / "null_check.md").read_text(encoding="utf-8").splitlines()[0]
    assert caption.startswith("SIMULATED") and "planted null" in caption
    assert list(table.scope) == ["model × track × metric", "… × dimension", "… × severity", "all"]
    assert (table.raw_rate == table.raw_rejections / table.cells).all()
    assert ((table.raw_ci_low <= table.raw_rate) & (table.raw_rate <= table.raw_ci_high)).all()
    assert (table.holm_rate <= table.raw_rate).all()
    entry = next(e for e in artifacts.read_index(offline_run) if e.name == "null_check")
    assert entry.control and entry.section == artifacts.CHECKS and entry.notebook == "06_analyze"


def test_the_pooled_gaps_are_statsmodels_random_effects_over_the_runs_models(offline_run):
    """Each track × metric: statsmodels' DerSimonian-Laird pooling (method_re "chi2", HKSJ row) of the saved gaps."""
    import warnings

    from statsmodels.stats.meta_analysis import combine_effects

    gaps = run_folders.load(offline_run, "gaps").query("comparison == 'female-male'")
    pooled = run_folders.load(offline_run, "pooled_gaps")
    assert len(pooled) == 2 * len(metric_keys()) and len(_csv(offline_run, "pooled_gaps")) == len(pooled)
    for row in pooled.itertuples():
        cell = gaps[(gaps.track == row.track) & (gaps.metric == row.metric)]
        cell = cell[cell.sd_diff > 0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = combine_effects(cell.delta.to_numpy(), (cell.sd_diff ** 2 / cell.n_pairs).to_numpy(),
                                  method_re="chi2", use_t=True)
        # statsmodels leaves a negative DerSimonian-Laird τ² as it is; truncated at 0 it is the fixed-effect fit
        hksj = fit.summary_frame().loc["random effect wls" if fit.tau2 >= 0 else "fixed effect wls"]
        assert (row.pooled_delta, row.ci_low, row.ci_high) == pytest.approx((hksj.eff, hksj.ci_low, hksj.ci_upp))
        assert (row.tau2, row.i2) == pytest.approx((max(fit.tau2, 0.0), max(fit.i2, 0.0)), abs=1e-12)
        assert row.n_same_sign == (np.sign(cell.delta) == np.sign(row.pooled_delta)).sum()
    for track in ("intimate", "public"):
        assert (offline_run / "figures" / f"pooled_forest_{track}.png").stat().st_size > 10_000


def test_the_judge_sensitivity_flags_follow_the_two_judges_gaps(offline_run):
    table = _csv(offline_run, "judge_sensitivity")
    assert len(table) and set(table.judge_b) and (table.ci_low <= table.difference + 1e-12).all()
    flips = (table.delta_a * table.delta_b < 0) | ((table.p_holm_a < 0.05) != (table.p_holm_b < 0.05))
    assert (table.conclusion_changes == flips).all()  # every answer scored by both judges: Δ over shared pairs = Δ
    summary = _csv(offline_run, "judge_sensitivity_summary")
    assert summary.conclusion_changes.sum() == table.conclusion_changes.sum()


def test_the_replicated_null_check_starts_from_the_single_one(offline_run):
    single, replicated = _csv(offline_run, "null_check"), _csv(offline_run, "null_check_replicated")
    assert list(replicated.scope) == list(single.scope)
    np.testing.assert_allclose(replicated.first_raw_rate, single.raw_rate, rtol=1e-12)
    assert ((replicated.raw_ci_low <= replicated.raw_rate) & (replicated.raw_rate <= replicated.raw_ci_high)).all()


# ---------------------------------------------------------------- 06: gaps by scenario metadata (issue 17.6)

def _level_delta(run, attribute: str, values, level: str, metric_column: str, track: str | None = None) -> float:
    """Mean over models of the mean female − male difference over the pairs of one level, by hand."""
    rows = _sighted(run).merge(values, on="pair_id")
    rows = rows[rows[attribute] == level]
    rows = rows if track is None else rows[rows.track == track]
    wide = rows.pivot_table(index=["model", "pair_id"], columns="arm", values=metric_column, aggfunc="mean")
    return float((wide["female"] - wide["male"]).groupby(level="model").mean().mean())


def test_gaps_by_the_partner_occupations_stereotype_match_a_hand_computation(offline_run):
    pairs = fixture_pairs()
    table = _csv(offline_run, "occupation_stereotype_gaps")
    assert list(table["Partner occupation stereotype"]) == ["female-stereotyped", "male-stereotyped",
                                                            "not stereotyped", "no occupation named"][:len(table)]
    assert set(table.Track) == {"Intimate Track"}
    stereotype = pairs[["pair_id", "occupation_stereotype"]]
    for level, name in (("female", "female-stereotyped"), ("male", "male-stereotyped")):
        shown = table.set_index("Partner occupation stereotype").loc[name, "Puni."]
        assert shown == pytest.approx(_level_delta(offline_run, "occupation_stereotype", stereotype, level,
                                                   "punitive_count", "intimate"))
    notes = (offline_run / "tables" / "occupation_stereotype_gaps.md").read_text(encoding="utf-8")
    n_female = int((pairs.occupation_stereotype == "female").sum())
    assert f"female-stereotyped {n_female}" in notes  # five female-stereotyped pairs in the fixture
    outputs = _output_text(offline_run, "06_analyze")
    assert "congruent in the male-actor arm" in outputs


def test_gaps_by_setting_language_match_a_hand_computation(offline_run):
    from gama_utils.bench.bank_metadata import english_speaking

    pairs = fixture_pairs()
    setting = pairs.assign(language=pairs.setting_region.map(
        lambda r: "unspecified" if english_speaking(r) is None else "English-speaking" if english_speaking(r)
        else "not English-speaking"))[["pair_id", "language"]]
    table = _csv(offline_run, "setting_gaps").set_index(["Track", "Setting"])
    for track, label in (("intimate", "Intimate Track"), ("public", "Public Track")):
        for level in set(setting.language) & set(table.loc[label].index):
            assert table.loc[(label, level), "Full-Bl."] == pytest.approx(
                100 * _level_delta(offline_run, "language", setting, level, "full_blame", track))


# ---------------------------------------------------------------- 07: the ablation tests (issue 16)

def test_ablation_differences_are_paired_changes_with_holm_across_rows(offline_run):
    differences = _csv(offline_run, "ablation_differences")
    gaps = run_folders.load(offline_run, "gaps_qwen").query("comparison == 'female-male'").set_index(
        ["model", "track", "metric"])
    assert set(differences.axis) == {"Scale", "Post-training", "Reasoning mode"}
    np.testing.assert_allclose(differences.difference, differences.delta_to - differences.delta_from, atol=1e-12)
    trend = _csv(offline_run, "ablation_trend")
    tested = differences.p_value.notna()  # a metric no pair differs on has no test and leaves the Holm family
    assert differences.p_holm[~tested].isna().all() and tested.sum() > 10
    family = pd.concat([differences.p_value[tested], trend.p_value.dropna()])  # §4.3: differences and trends together
    np.testing.assert_allclose(pd.concat([differences.p_holm[tested], trend.p_holm.dropna()]),
                               multipletests(family, method="holm")[1], rtol=1e-12)
    assert set(differences.holm_family_size) == set(trend.holm_family_size) == {len(family)}
    for row in differences.itertuples():  # every pair answered by every variant: Δ over shared pairs = the gaps' Δ
        assert row.delta_from == pytest.approx(gaps.loc[(row.from_model, row.track, row.metric), "delta"])
        assert row.delta_to == pytest.approx(gaps.loc[(row.to_model, row.track, row.metric), "delta"])


def test_ablation_trend_is_the_wls_slope_over_log2_size(offline_run):
    """Intimate Puni.: WLS of each Scale variant's Δ on log2(size), weights n / var(d), fitted here by statsmodels."""
    stage = json.loads((offline_run / "manifest.json").read_text(encoding="utf-8"))["stages"]["07_ablation"]
    models = next(c["models"] for c in stage["comparisons"] if c["axis"] == "Scale")
    size = {t["alias"]: t["size_b"] for t in stage["targets"]}
    evaluations = run_folders.load(offline_run, "evaluations_qwen").query("track == 'intimate'")
    wide = evaluations.pivot_table(index=["model", "pair_id"], columns="arm", values="punitive_count")
    d = (wide["female"] - wide["male"]).unstack("model")[models]
    assert (d.var(ddof=1) > 0).all(), "every variant's d has spread: the weights are n / var(d)"
    x = np.log2([size[m] for m in models])
    slope = sm.WLS(d.mean().to_numpy(), sm.add_constant(x), weights=d.count() / d.var(ddof=1)).fit().params[1]
    row = _csv(offline_run, "ablation_trend").query("track == 'intimate' and metric == 'puni'").iloc[0]
    assert row.n_models == len(models) and row.weighting == "1/SE²"
    assert row.slope == pytest.approx(slope, rel=1e-9) and row.ci_low <= row.slope <= row.ci_high
    ols = sm.OLS(d.mean().to_numpy(), sm.add_constant(x)).fit()  # the variants as the units: t on n_models − 2 df
    assert (row.slope_models, row.p_value) == pytest.approx((ols.params[1], ols.pvalues[1]), rel=1e-9)
    assert row.reading in ablation.READINGS


# ---------------------------------------------------------------- the report and a new notebook

def test_the_run_report_shows_every_registered_artifact_in_its_section(offline_run):
    entries = artifacts.read_index(offline_run)
    names = {e.name for e in entries}
    for folder in ("tables", "figures"):
        assert {p.stem for p in (offline_run / folder).iterdir()} <= names, f"an unregistered file in {folder}/"
    paths = report.build_report(offline_run)
    page, md = paths["html"].read_text(encoding="utf-8"), paths["md"].read_text(encoding="utf-8")
    assert 'id="simulated-banner"' in page
    assert page.count("data:image/png;base64,") >= len(list((offline_run / "figures").glob("*.png")))
    assert f"## {artifacts.OTHER}" not in md
    for entry in entries:
        section_at = md.index(f"## {entry.section}\n")
        assert section_at < md.index(f"### {entry.name}\n"), entry.name
    # The paper's results in its order, then how the run was made (03 did not run here: no benchmark section)
    order = [md.index(f"## {s}\n") for s in (*report.RESULT_SECTIONS, artifacts.RESPONSES)]
    assert order == sorted(order)
    assert "## Measured limits of the judges" in md and "not for absolute levels of the six metrics" in md
    assert "not for absolute levels of the six metrics" in _output_text(offline_run, "08_robustness")
    assert "No measured agreement with hand scores is stored for the judge sim/Gemini-3-Pro" in _output_text(
        offline_run, "05_evaluate")


TOY_NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": [
            "# 09_toy: mean Δ per metric (a collaborator's notebook)\n\n**Reads** under `run_dir`: `gaps.jsonl` (06).\n"
            "**Writes** under `run_dir`: the `toy_mean_delta` table and the `toy_bars` figure.\n\n"
            "**How to read the outputs:** Δ < 0: the male actor got more of the metric."]},
        {"cell_type": "code", "execution_count": None, "metadata": {"tags": ["parameters"]}, "outputs": [],
         "source": ['run_dir = "outputs/runs/offline"  # the run folder whose gaps.jsonl is read']},
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": [
            "import matplotlib.pyplot as plt\n",
            "from gama_utils.analysis import selections\n",
            "from gama_utils.core import run_folders\n",
            "from gama_utils.report import artifacts\n\n",
            "run = run_folders.run_dir(run_dir)\n",
            'out = artifacts.Outputs(run, "09_toy")\n',
            'gaps = selections.paper_comparison(run_folders.load(run, "gaps"))\n',
            'means = gaps.groupby("metric", as_index=False)["delta"].mean()\n',
            f'out.table(means, "toy_mean_delta", caption="Mean Δ per metric", section="{TOY}",\n',
            '          explanation="The mean Δ over models and tracks per metric.")\n',
            "fig, ax = plt.subplots()\n",
            "ax.bar(means.metric, means.delta)\n",
            f'out.figure(fig, "toy_bars", explanation="The same means as bars.", section="{TOY}")']}],
    "metadata": {"kernelspec": {"display_name": "Python (gama-bench)", "language": "python", "name": "gama-bench"}},
    "nbformat": 4, "nbformat_minor": 4,
}


def test_a_new_notebook_is_run_and_reported_without_editing_a_list(offline_run, tmp_path):
    folder = tmp_path / "notebooks"
    shutil.copytree(NOTEBOOKS, folder)
    (folder / "09_toy.ipynb").write_text(json.dumps(TOY_NOTEBOOK), encoding="utf-8")
    found = analysis_notebooks(folder)
    assert [nb.stem for nb in found][-1] == "09_toy" and len(found) == len(analysis_notebooks()) + 1
    run = tmp_path / "run"
    shutil.copytree(offline_run, run)
    runs.execute_notebooks([folder / "09_toy.ipynb"], run, lambda nb: {"run_dir": str(run)}, label="toy")
    expected = run_folders.load(run, "gaps").query("comparison == 'female-male'").groupby("metric")["delta"].mean()
    table = _csv(run, "toy_mean_delta").set_index("metric")["delta"]
    pd.testing.assert_series_equal(table.sort_index(), expected.sort_index(), check_names=False)
    md = report.build_report(run)["md"].read_text(encoding="utf-8")
    toy_at = md.index(f"## {TOY}\n")
    assert max(md.index(f"## {s}\n") for s in report.RESULT_SECTIONS) < toy_at < md.index(f"## {artifacts.RESPONSES}\n")
    assert toy_at < md.index("### toy_mean_delta\n") < md.index("### toy_bars\n")
    assert "*The mean Δ over models and tracks per metric.* (from 09_toy)" in md
    assert "| [09_toy](notebooks/09_toy.ipynb) |" in md


def test_the_variants_are_put_beside_the_papers_tables_7_and_8(offline_run):
    side = _csv(offline_run, "paper_side_by_side_qwen")
    printed = paper.qwen_results().set_index(["model", "track", "metric"])["delta"]
    gaps = run_folders.load(offline_run, "gaps_qwen").query("comparison == 'female-male'").set_index(
        ["model", "track", "metric"])["delta"]
    row = side[(side.Track == "Intimate Track") & (side.Model == "sim/Qwen3-0.6B")].iloc[0]
    assert row["Puni. Paper Δ"] == pytest.approx(printed[("Qwen3-0.6B", "intimate", "puni")])  # −0.01, Table 7
    assert row["Puni. Run Δ"] == pytest.approx(gaps[("sim/Qwen3-0.6B", "intimate", "puni")])
    assert len(side) == 2 * 7, "the paper's seven Qwen3 variants on both tracks"
