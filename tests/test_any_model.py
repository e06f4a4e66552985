"""04 → 08 and the report for models that are not the paper's: an inline spec, a model of one's own
registry file (GAMA_MODELS), imported answers and a variant family of one's own, on a local server."""

import hashlib
import json

import pandas as pd
import papermill
import pytest

from gama_utils.collect import respond
from gama_utils.core import run_folders
from gama_utils.core.prompts import evaluator_schema
from gama_utils.judge.judges import lexicon_reading
from gama_utils.paths import NOTEBOOKS
from gama_utils.report import run_report as report

pytestmark = pytest.mark.slow

HARSH = ("unacceptable", "controlling", "manipulative", "wrong")
KIND = ("understandable", "stressed", "communicate", "counselling")
N_PAIRS = 10
JUDGE_FORMATS: list = []  # response_format of every evaluator request the server saw


def _pick(text: str, words: tuple[str, ...], n: int) -> list[str]:
    return list(words[:n])


def framed_answer(body: dict) -> dict:
    """A target answer harsher for male actors, or an evaluator's JSON read off the answer's words."""
    prompt = body["messages"][0]["content"]
    if "AI response to annotate:" in prompt:
        JUDGE_FORMATS.append(body.get("response_format"))
        answer = prompt.split("AI response to annotate:", 1)[1].split("<<<", 1)[1].split(">>>", 1)[0]
        punitive = [w for w in HARSH if w in answer]
        therapeutic = [w for w in KIND if w in answer]
        scores = {"punitive_terms": punitive, "therapeutic_terms": therapeutic,
                  "empathizes_with_actor": len(therapeutic) > len(punitive),
                  "severity_rating": 1 + min(4, len(punitive)),
                  "blame_attribution": "full" if len(punitive) > 2 else "partial",
                  "instructional_or_accusatory": len(punitive) > 1}
        # any metric registered beyond the paper's six: the lexicon's reading of it
        others = {f: v for f, v in lexicon_reading(answer).items() if f not in scores}
        return {"content": json.dumps({**scores, **others})}
    spread = int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % 3
    male = prompt.startswith("I am a man.")
    punitive = _pick(prompt, HARSH, min(4, spread + (2 if male else 0)))
    therapeutic = _pick(prompt, KIND, min(4, spread + (0 if male else 2)))
    sentences = [f"What you did was {w}." for w in punitive] + [f"It is {w} to feel that way." for w in therapeutic]
    return {"content": " ".join(sentences) or "Thank you for sharing this."}


@pytest.fixture(scope="module")
def own_models_run(tmp_path_factory, _fake_openai_server):
    server = _fake_openai_server.reset()
    server.responder = framed_answer
    root = tmp_path_factory.mktemp("own")
    registry = root / "my_models.yaml"
    registry.write_text(
        "models:\n"
        "  my-model:\n"
        "    paper_name: My-Model\n    group: My lab's models\n    provider: my-lab\n    client: openai\n"
        f"    model: my-lab/my-model\n    base_url: {server.base_url}\n    key_required: false\n"
        "    decoding: {temperature: 0.3, max_tokens: 300}\n"
        "  my-judge:\n"
        "    provider: my-lab\n    client: openai\n    model: my-lab/judge\n"
        f"    base_url: {server.base_url}\n    key_required: false\n    structured_output: json_schema\n",
        encoding="utf-8")
    mp = pytest.MonkeyPatch()
    mp.setenv("GAMA_MODELS", str(registry))
    mp.setenv("GAMA_OUTPUTS", str(root / "outputs"))
    run = root / "run"
    inline = {"base_url": server.base_url, "model": "vendor/chat-7b"}

    def execute(name: str, **params: object) -> None:
        papermill.execute_notebook(str(NOTEBOOKS / f"{name}.ipynb"), str(run / "notebooks" / f"{name}.ipynb"),
                                   parameters={"run_dir": str(run), **params}, kernel_name="gama-bench",
                                   progress_bar=False)

    (run / "notebooks").mkdir(parents=True)
    try:
        execute("04_respond", target_models=["my-model", inline], limit=N_PAIRS, max_usd=1.0)
        pairs = respond.select_pairs(respond.load_benchmark(), limit=N_PAIRS)
        imported = root / "imported.csv"
        prompts = pairs.set_index("pair_id")
        pd.DataFrame([{"pair_id": p, "model": "imported-model", "arm": arm,
                       "answer": framed_answer({"messages": [{"content": prompts.at[p, f"prompt_{arm}"]}]})["content"]}
                      for p in pairs.pair_id for arm in ("male", "female")]).to_csv(imported, index=False)
        collected = run_folders.load(run, "responses")
        both = pd.concat([collected, respond.import_responses(str(imported))], ignore_index=True)
        run_folders.save(both, run, "responses")
        execute("05_evaluate", evaluator="my-judge", max_usd=1.0)
        execute("06_analyze", n_boot=200)
        toy = [{**inline, "model": f"toy/toy-{size}b", "family": "Toy", "size_b": size, "post_training": "instruct",
                "thinking": False} for size in (1, 3, 8)]
        execute("07_ablation", variants=toy, evaluator="my-judge", limit=N_PAIRS, n_boot=200, max_usd=1.0)
        execute("08_robustness", swap_evaluator="lexicon", third_judge=None, n_boot=200, human_n=6,
                simulated_annotators=False, max_usd=1.0)
        yield run, server
    finally:
        mp.undo()
        server.reset()


def _caption(run, name: str) -> str:
    return (run / "tables" / f"{name}.md").read_text(encoding="utf-8").splitlines()[0]


def test_tables_keep_the_paper_layout_with_the_run_models_grouped(own_models_run):
    run, _ = own_models_run
    table2 = pd.read_csv(run / "tables" / "table2_intimate.csv")
    assert list(table2["Group"]) == ["My lab's models", "Other models", "Other models"]
    assert list(table2["Model"]) == ["my-model", "imported-model", "openai-compatible:vendor/chat-7b"]
    assert {"Puni. Male", "Puni. Female", "Puni. Δ", "Full-Bl. Δ"} <= set(table2.columns)
    gaps = run_folders.load(run, "gaps")
    paper_gaps = gaps[gaps.comparison == "female-male"]
    puni = paper_gaps[(paper_gaps.metric == "puni")].set_index(["model", "track"])["delta"]
    assert (puni < 0).all(), "the planted answers are harsher for male actors: every Puni. Δ is negative"
    for name in ("table2_intimate", "table3_public", "table6_pvalues", "mixed_effects", "blind_vs_sighted",
                 "dimension_gaps", "severity_gaps"):
        assert not _caption(run, name).startswith(("SIMULATED", "PLUMBING")), name


def test_no_paper_comparison_is_made_and_the_notebook_says_so(own_models_run):
    run, _ = own_models_run
    assert not (run / "tables" / "paper_side_by_side.csv").exists()
    outputs = json.dumps(json.loads((run / "notebooks" / "06_analyze.ipynb").read_text(encoding="utf-8")))
    assert "none of this run's models is one of the paper's: there is nothing to put beside the paper" in outputs
    assert "this run's average over the paper's models" in outputs
    assert "none of this run's models is one of the paper's 10" in outputs


def test_figures_are_drawn_for_any_models(own_models_run):
    run, _ = own_models_run
    for name in ("fig7_transitions_intimate", "fig8_transitions_public", "forest_intimate", "forest_public",
                 "fig11_dimension_intimate", "fig13_severity", "fig9_qwen_ablation", "fig10_evaluator_agreement"):
        assert (run / "figures" / f"{name}.png").stat().st_size > 10_000, name


def test_a_variant_family_of_ones_own_is_compared_along_scale(own_models_run):
    run, _ = own_models_run
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["stages"]["07_ablation"]["comparisons"] == [
        {"axis": "Scale", "models": [f"openai-compatible:toy/toy-{s}b" for s in (1, 3, 8)]}]
    assert set(run_folders.load(run, "gaps_qwen").model) == {f"openai-compatible:toy/toy-{s}b" for s in (1, 3, 8)}


def test_the_evaluator_swap_takes_any_two_evaluators(own_models_run):
    run, _ = own_models_run
    agreement = pd.read_csv(run / "tables" / "evaluator_agreement.csv")
    assert agreement["comparison"].tolist()[0] == "my-judge vs lexicon"
    assert not (run / "tables" / "table4_human.csv").exists(), "no annotators: sheets only, no simulated Table 4"
    assert (run / "human" / "key.csv").exists()


def test_the_judge_got_the_schema_as_response_format(own_models_run):
    run, _ = own_models_run
    evaluations = run_folders.load(run, "evaluations")
    assert evaluations.valid.all() and set(evaluations.evaluator) == {"my-judge"}
    assert JUDGE_FORMATS and all(f["type"] == "json_schema" and f["json_schema"]["schema"] == evaluator_schema()
                                 for f in JUDGE_FORMATS)


def test_the_report_shows_the_run_without_a_simulated_banner(own_models_run):
    run, _ = own_models_run
    html = report.build_report(run)["html"].read_text(encoding="utf-8")
    assert 'id="simulated-banner"' not in html and 'id="plumbing-banner"' not in html
    assert ("My lab's models" in html or "My lab&#x27;s models" in html) and "imported-model" in html
