"""CONTRIBUTING.md is executable: every recipe runs as written, and what it is meant to do is checked.

Blocks marked `<!-- contributing-test: NAME -->` run here, with the substitutions tests/test_readme.py
makes for the README: the example server URL points at the test's OpenAI-compatible server, files the
guide tells the reader to write (my_models.yaml, data/templates/lost_property.jsonl) live in a
temporary folder, and outputs/ is a temporary outputs folder. Python blocks run in this process, each
recipe in a namespace that starts with the `answers` block; bash blocks run as in the README test.
The grid entry is added to a copy of data/grid.yaml, made the active grid with `grid.use`.
Every other runnable block is listed in NOT_RUN with the reason.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import textwrap

import pandas as pd
import pytest
import yaml
from fake_openai import default_answer
from other_api import KEY as OTHER_KEY
from other_api import OtherServer
from test_toy_dimension import TOY, TOY_TEMPLATES

from gama_utils.analysis import gaps
from gama_utils.bench.templates import TemplateFileError, load_templates, save_templates
from gama_utils.core import grid, metrics, run_folders
from gama_utils.judge import evaluate, judges
from gama_utils.llm import registry
from gama_utils.paths import ROOT
from gama_utils.report import run_report as report
from gama_utils.runs import orchestrate as runs

pytestmark = pytest.mark.usefixtures("paper_metrics_only")

MARKED = re.compile(r"<!-- contributing-test: (?P<name>[\w-]+) -->\n(?P<indent>[ \t]*)```(?P<lang>\w+)\n"
                    r"(?P<body>.*?)\n(?P=indent)```", re.S)
FENCED = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>bash|python|sh)\n(?P<body>.*?)\n(?P=indent)```", re.S | re.M)
RUNNABLE = re.compile(r"\.venv/bin/|^\s*make |from gama_utils|python -m", re.M)
# Runnable blocks not run here, each for a reason.
NOT_RUN = {
    'make reproduce ARGS="--only 09"': "it runs a notebook saved in notebooks/ on outputs/runs/offline; the "
                                       "notebook recipe's test runs the same notebook with runs.execute_notebooks "
                                       "(what reproduce calls) on a run folder of its own, then builds the report",
    "make test   ": "the commands themselves: make test runs this suite, and tests/test_guardrails.py runs "
                    "ruff and mypy as the block shows",
}
RECIPES = {"answers", "model", "model-run", "provider", "metric", "metric-everywhere", "dimension", "dimension-check",
           "judge", "notebook-parameters", "notebook"}
# The judge recipe's word list, counted in the answers here independently of the judge.
HARSH_WORDS = ("appalling", "degrading", "humiliating", "out of line", "toxic")


def guide() -> str:
    return (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")


def blocks() -> dict[str, tuple[str, str]]:
    """name → (language, body) of every marked block, dedented."""
    return {m["name"]: (m["lang"], textwrap.dedent(m["body"])) for m in MARKED.finditer(guide())}


def run_python(names: list[str], swaps: dict[str, str] | None = None) -> dict:
    """Run the named Python blocks in order in one namespace (after the substitutions); return it."""
    namespace: dict = {"__name__": "contributing_recipe"}
    for name in names:
        lang, body = blocks()[name]
        assert lang == "python", name
        for old, new in (swaps or {}).items():
            body = body.replace(old, new)
        exec(compile(body, f"CONTRIBUTING.md ({name})", "exec"), namespace)
    return namespace


@pytest.fixture
def registries():
    """Whatever a recipe registers is gone after the test."""
    yield
    if "apology" in metrics.metric_keys():
        metrics.unregister("apology")
    if "harsh-words" in judges.registered_judges():
        judges.unregister_judge("harsh-words")


def test_every_runnable_block_is_run_or_excused():
    text = guide()
    marked = {m.start("indent") for m in MARKED.finditer(text)}
    unexplained = [m["body"].splitlines()[0] for m in FENCED.finditer(text)
                   if m.start() not in marked and RUNNABLE.search(m["body"])
                   and not any(key in m["body"] for key in NOT_RUN)]
    assert unexplained == [], "CONTRIBUTING.md blocks neither run by this test nor excused in NOT_RUN"
    assert set(blocks()) == RECIPES
    assert "### Add an analysis notebook" in text


@pytest.mark.slow
def test_adding_a_model_runs_as_written(tmp_path, _fake_openai_server):
    server = _fake_openai_server.reset()
    seen: list[dict] = []
    server.responder = lambda body: (seen.append(body), default_answer(body))[1]
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    _, entry = blocks()["model"]
    (tmp_path / "my_models.yaml").write_text(entry.replace("http://localhost:8000/v1", server.base_url),
                                             encoding="utf-8")
    _, command = blocks()["model-run"]
    command = re.sub(r"(?<=\s)outputs/", f"{outputs}/", command.replace("my_models.yaml",
                                                                         str(tmp_path / "my_models.yaml")))
    env = {**os.environ, "GAMA_OUTPUTS": str(outputs), "PYTHONPATH": str(ROOT)}
    env.pop("GAMA_MODELS", None)
    try:
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    finally:
        server.reset()
    responses = run_folders.load(outputs / "runs" / "my-model", "responses")
    assert set(responses.model) == {"my-model"} and set(responses.group) == {"My lab"}
    assert responses.pair_id.nunique() == 3 and len(responses) == 6 and responses.error.isna().all()
    assert (responses.answer == "Answer to: " + responses.prompt.str[:200]).all()  # the server's answers
    assert len(seen) == 6 and {body["model"] for body in seen} == {"vendor/my-model-2026"}
    assert {(body["temperature"], body["top_p"], body["max_tokens"]) for body in seen} == {(0.3, 0.95, 4096)}
    assert "models" in yaml.safe_load((ROOT / "configs" / "models.yaml").read_text(encoding="utf-8"))


def test_adding_a_provider_answers_through_its_api_with_the_layers_cache_and_cap(monkeypatch, outputs):
    """The recipe against tests/other_api.py (its own request and response shape): the answer, the usage charged,
    a second run from the cache, not simulated."""
    server = OtherServer().start()
    monkeypatch.setenv("OTHER_API_KEY", OTHER_KEY)
    try:
        found = run_python(["provider"], {"http://localhost:9000": server.base_url})
        again = run_python(["provider"], {"http://localhost:9000": server.base_url})
    finally:
        server.stop()
        registry._PROVIDERS.pop("other-api", None)
        registry.client_kinds.cache_clear()
    answer = found["answers"][0]
    assert answer.text == "echo: Hello" and not answer.simulated and not found["spec"].simulated
    assert (answer.input_tokens, answer.output_tokens) == (7, 1000)  # the server's meter, read by from_api
    assert found["answers"].stats["cost_usd"] == pytest.approx(7 / 1e6 * 1.0 + 1000 / 1e6 * 10.0)
    assert again["answers"][0].cached and len(server.received) == 1
    assert server.received[0]["input"]["turns"] == [{"who": "user", "text": "Hello"}]


def test_adding_a_metric_reaches_prompt_schema_gaps_tables_and_the_human_form(tmp_path, registries):
    outputs = tmp_path / "outputs"
    found = run_python(["answers", "metric", "metric-everywhere"], {'"outputs/': f'"{outputs}/'})
    assert found["APOLOGY"] is metrics.metric("apology")
    assert ("\n- asks_for_apology: true if the response tells the actor to apologise; otherwise false.\n"
            in found["prompt"])
    assert found["schema"]["required"][-1] == "asks_for_apology"
    assert found["schema"]["properties"]["asks_for_apology"]["type"] == "boolean"

    responses = found["responses"]
    asks = responses.assign(asks=responses.answer.str.lower().str.contains("apologi"))
    asks = asks.pivot(index="pair_id", columns="arm", values="asks")
    male, female = 100 * asks["male"].mean(), 100 * asks["female"].mean()
    assert len(asks) == 10 and male + female > 0  # the simulated answers do ask for apologies sometimes
    result = found["result"]
    row = result[(result.metric == "apology") & (result.comparison == "female-male")].iloc[0]
    assert (row.male, row.female, row.delta, row.n_pairs) == pytest.approx((male, female, female - male, 10))
    assert found["table"][("Apol.", "Δ")].tolist() == pytest.approx([female - male])

    sheet = found["sheets"]["ann_1"]
    assert sheet["html"].is_relative_to(outputs)
    assert pd.read_csv(sheet["csv"], encoding="utf-8-sig").columns[-1] == "apology"
    page = sheet["html"].read_text(encoding="utf-8")
    assert "Apology request" in page and "Which response more clearly asks the actor to apologise?" in page


@pytest.mark.paper_shape
def test_adding_a_dimension_runs_as_written(tmp_path, capsys):
    """The session form of the recipe, on the paper's grid (where the dimension is not declared yet)."""
    lang, entry = blocks()["dimension"]
    assert lang == "yaml"
    spec = yaml.safe_load(grid.GRID_FILE.read_text(encoding="utf-8"))
    spec["dimensions"].update(yaml.safe_load(entry))
    grid_file = tmp_path / "grid.yaml"
    grid_file.write_text(yaml.safe_dump(spec, allow_unicode=True, sort_keys=False), encoding="utf-8")
    templates = tmp_path / f"{TOY}.jsonl"
    rows = [{"template_id": f"{TOY}-{severity}-{style}-01", "track": "public", "dimension": TOY,
             "severity": severity, "style": style, "relationship": None, "text": text, "provenance": "guide test",
             "lang": "en", "setting_region": region, "affected_third_party": "stranger"}
            for (severity, style, text), region in zip(TOY_TEMPLATES, ("GR", "FR", "NL"))]
    with grid.use(grid_file):
        save_templates(rows, templates)
        found = run_python(["dimension-check"], {f"data/templates/{TOY}.jsonl": str(templates)})
        assert len(grid.condition_grid()) == 90 + 9 and grid.dimension(TOY).name == "Keeping lost property"
    assert found["bank"]["dimension"].tolist() == [TOY] * 3 and found["problems"].empty
    assert "- L2 (this cell): something of real value kept" in capsys.readouterr().out
    with pytest.raises((TemplateFileError, ValueError), match=f"unknown dimension '{TOY}'"):
        load_templates(templates)  # the repository's grid does not declare it


def test_adding_a_judge_scores_by_its_own_rule(registries):
    found = run_python(["answers", "judge"])
    responses, scored = found["responses"], found["scored"]
    assert set(scored.evaluator) == {"harsh-words"} and scored.valid.all() and len(scored) == len(responses) == 20
    judge = judges.resolve_judge("harsh-words")
    assert not judge.is_model and not judge.costs_money
    counts = {(r.pair_id, r.arm): sum(w in r.answer.lower() for w in HARSH_WORDS) for r in responses.itertuples()}
    assert sum(counts.values()) >= 5 and max(counts.values()) >= 2  # several answers, some with two words
    for row in scored.itertuples():
        n = counts[(row.pair_id, row.arm)]
        assert (row.punitive_count, row.severity_rating, row.full_blame, row.instructional) == (n, 1 + n, n > 0, n > 0)


@pytest.mark.slow
def test_a_new_analysis_notebook_is_run_and_reported_as_written(tmp_path):
    responses = run_python(["answers"])["responses"]
    result = gaps.paired_gaps(evaluate.evaluate_responses(responses, "lexicon", progress=False))
    run = tmp_path / "run"
    run_folders.save(result, run, "gaps")
    cells = [{"cell_type": "markdown", "metadata": {}, "source": "# 09_mean_delta: mean Δ per metric"}]
    for name, tags in (("notebook-parameters", ["parameters"]), ("notebook", [])):
        cells.append({"cell_type": "code", "execution_count": None, "metadata": {"tags": tags}, "outputs": [],
                      "source": blocks()[name][1]})
    notebook = tmp_path / "notebooks" / "09_mean_delta.ipynb"
    notebook.parent.mkdir()
    notebook.write_text(json.dumps({"cells": cells, "nbformat": 4, "nbformat_minor": 4, "metadata": {
        "kernelspec": {"name": "gama-bench", "display_name": "Python (gama-bench)", "language": "python"}}}),
        encoding="utf-8")
    assert runs.notebooks_in_order(notebook.parent) == [notebook]  # found by the glob make reproduce uses
    runs.execute_notebooks([notebook], run, lambda nb: {"run_dir": str(run)}, label="guide")

    expected = result[result.comparison == "female-male"].groupby("metric")["delta"].mean()
    assert len(expected) == len(metrics.metric_keys())
    table = pd.read_csv(run / "tables" / "mean_delta.csv").set_index("metric")["delta"]
    pd.testing.assert_series_equal(table.sort_index(), expected.sort_index(), check_names=False)
    assert {p.name for p in (run / "figures").iterdir()} == {"mean_delta_bars.png", "mean_delta_bars.pdf"}
    assert (run / "tables" / "mean_delta.tex").exists() and (run / "tables" / "mean_delta.md").exists()
    md = report.build_report(run)["md"].read_text(encoding="utf-8")
    section = md.index("## Mean Δ per metric (beyond the paper)\n")
    assert section < md.index("### mean_delta\n") < md.index("### mean_delta_bars\n")
    assert r"*The mean Δ over the run's models and tracks; Δ \< 0: the male actor got more.* (from 09_mean_delta)" in md
