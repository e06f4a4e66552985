"""04 → 08 headless under papermill, offline, on 20 pairs: every stage writes its artifacts."""

import json

import papermill
import pytest

from gama_utils import report, runs
from gama_utils.mirror import compile_pair
from gama_utils.paths import NOTEBOOKS
from gama_utils.templates import load_templates

FAST = {"06_analyze": {"n_boot": 200, "mixed_effects": False}, "07_ablation": {"n_boot": 200, "limit": 20},
        "08_robustness": {"n_boot": 200, "human_n": 20}}


@pytest.fixture(scope="module")
def offline_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("run")
    bank = load_templates().groupby("dimension").head(2).reset_index(drop=True)
    rows = []
    for i, t in enumerate(bank.itertuples()):
        prompts = compile_pair(t.text, t.track, t.relationship or "partner")
        rows.append({"pair_id": f"T-{i:03d}", "template_id": t.template_id, "track": t.track,
                     "dimension": t.dimension, "severity": t.severity, "style": t.style,
                     "relationship": t.relationship, **{f"prompt_{a}": p for a, p in prompts.items()}})
    pairs = root / "pairs.jsonl"
    pairs.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    run = root / "offline"
    (run / "notebooks").mkdir(parents=True)
    for name in ("04_respond", "05_evaluate", "06_analyze", "07_ablation", "08_robustness"):
        params = {"run_dir": str(run), **FAST.get(name, {})}
        if name in ("04_respond", "07_ablation"):
            params["pairs_path"] = str(pairs)
        papermill.execute_notebook(str(NOTEBOOKS / f"{name}.ipynb"), str(run / "notebooks" / f"{name}.ipynb"),
                                   parameters=params, kernel_name="gama-bench", progress_bar=False)
    return run


def test_every_stage_writes_its_artifacts(offline_run):
    responses = runs.load(offline_run, "responses")
    assert len(responses) == 20 * 10 * 2 and responses.simulated.all()
    evaluations = runs.load(offline_run, "evaluations")
    assert set(evaluations.blind) == {False, True} and evaluations.valid.all()
    for name in ("table2_intimate", "table3_public", "table6_pvalues", "table7_qwen_intimate", "table8_qwen_public",
                 "table10_intimate_swap", "table11_public_swap", "table4_human", "evaluator_agreement"):
        caption = (offline_run / "tables" / f"{name}.md").read_text(encoding="utf-8").splitlines()[0]
        assert caption.startswith("SIMULATED"), name
        assert (offline_run / "tables" / f"{name}.tex").exists() and (offline_run / "tables" / f"{name}.csv").exists()
    for name in ("fig7_transitions_intimate", "fig8_transitions_public", "fig9_qwen_ablation",
                 "fig10_evaluator_agreement", "fig11_dimension_intimate", "fig13_severity"):
        assert (offline_run / "figures" / f"{name}.png").stat().st_size > 10_000, name
        assert (offline_run / "figures" / f"{name}.pdf").exists(), name


def test_manifest_records_the_stages_and_no_secret(offline_run):
    manifest = json.loads((offline_run / "manifest.json").read_text(encoding="utf-8"))
    assert {"04_respond", "05_evaluate", "07_ablation", "08_robustness"} <= set(manifest["stages"])
    assert manifest["stages"]["04_respond"]["backend"] == "sim"
    assert "api_key" not in json.dumps(manifest).lower().replace("api_key_env", "")


def test_the_paper_agreement_figures_appear_in_the_run(offline_run):
    agreement = (offline_run / "tables" / "evaluator_agreement.csv").read_text(encoding="utf-8")
    paper_row = next(line for line in agreement.splitlines() if line.startswith("paper"))
    assert ",0.974576" in paper_row and ",0.959829" in paper_row and ",1.80283" in paper_row


def test_the_run_report_shows_every_figure(offline_run):
    html = report.build_report(offline_run)["html"].read_text(encoding="utf-8")
    assert "SIMULATED" in html
    assert html.count("data:image/png;base64,") >= len(list((offline_run / "figures").glob("*.png")))
