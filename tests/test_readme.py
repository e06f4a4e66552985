"""The README is executable: every block a user is told to run, run as written against a local server.

Blocks marked `<!-- readme-test: NAME -->` run here with only these substitutions: the example
server URLs point at the test's OpenAI-compatible server, file names the README invents
(my_models.yaml, my_answers.csv) live in a temporary folder, and outputs/ is a temporary outputs
folder (GAMA_OUTPUTS). Every other runnable block must be listed in NOT_RUN with the reason.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pandas as pd
import pytest

from gama_utils.collect import respond
from gama_utils.core import run_folders
from gama_utils.paths import ROOT

pytestmark = pytest.mark.slow

MARKED = re.compile(r"<!-- readme-test: (?P<name>[\w-]+) -->\n(?P<indent>[ \t]*)```(?P<lang>\w+)\n(?P<body>.*?)\n"
                    r"(?P=indent)```", re.S)
FENCED = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>bash|python|sh)\n(?P<body>.*?)\n(?P=indent)```", re.S | re.M)
RUNNABLE = re.compile(r"\.venv/bin/|^\s*make |from gama_utils|python -m", re.M)
# Runnable blocks not run here, each for a reason.
NOT_RUN = {
    "make reproduce   # run all eight": "CI runs `make test`; `make reproduce` is run by tests/test_runs.py pieces "
                                        "and in the fresh-clone check",
    "make reproduce PROFILE=local": "make test-local runs the same profile (tests/test_local_llm.py)",
    "make reproduce PROFILE=paper": "needs the paper's API keys and spends money",
    ".venv/bin/pip install -e \".[local]\"": "make test-local installs the extra and serves the model",
    "make venv && .venv/bin/jupyter lab": "an interactive session",
    "vllm = {": "inline specs only (resolving them is covered by the from-code block and test_llm_registry)",
    ".venv/bin/python -m gama_utils.bench.templates": "covered by tests/test_templates.py",
}


def readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def blocks() -> dict[str, tuple[str, str]]:
    """name → (language, body) of every marked block, dedented."""
    found = {}
    for m in MARKED.finditer(readme()):
        body = textwrap.dedent("\n".join(line[len(m["indent"]):] if line.startswith(m["indent"]) else line
                                         for line in m["body"].split("\n")))
        found[m["name"]] = (m["lang"], body)
    return found


def test_every_runnable_block_is_run_or_excused():
    text = readme()
    marked = {m.start("indent") for m in MARKED.finditer(text)}
    unexplained = []
    for m in FENCED.finditer(text):
        body = m["body"]
        if m.start() in marked or not RUNNABLE.search(body):
            continue
        if not any(key in body for key in NOT_RUN):
            unexplained.append(body.splitlines()[0])
    assert unexplained == [], "README blocks neither run by this test nor excused in NOT_RUN"
    assert {"tour", "from-code", "add-model", "add-model-run", "own-answers", "own-answers-run", "own-answers-report",
            "gama-cli", "hf-dataset", "inspect"} <= set(blocks())


@pytest.fixture
def sandbox(tmp_path, _fake_openai_server):
    server = _fake_openai_server.reset()
    outputs = tmp_path / "outputs"
    outputs.mkdir()  # as in a clone, where outputs/ holds its README
    env = {**os.environ, "GAMA_OUTPUTS": str(outputs), "PYTHONPATH": str(ROOT), "HF_HOME": str(tmp_path / "hf"),
           "HF_HUB_OFFLINE": "1"}
    env.pop("GAMA_MODELS", None)
    swaps = {"http://localhost:8000/v1": server.base_url, "https://api.example.com/v1": server.base_url,
             "my_models.yaml": str(tmp_path / "my_models.yaml"), "my_answers.csv": str(tmp_path / "my_answers.csv")}

    def run(name: str) -> subprocess.CompletedProcess:
        lang, body = blocks()[name]
        for old, new in swaps.items():
            body = body.replace(old, new)
        if lang == "yaml":
            (tmp_path / "my_models.yaml").write_text(body, encoding="utf-8")
            return subprocess.CompletedProcess([], 0)
        if lang == "bash":
            body = re.sub(r"(?<=\s)outputs/", f"{outputs}/", body)
            command = ["bash", "-euo", "pipefail", "-c", body]
        else:
            command = [sys.executable, "-c", body]
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"README block {name!r} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done

    run.outputs, run.server, run.tmp = outputs, server, tmp_path
    yield run
    server.reset()


def test_the_tour_runs_as_written(sandbox):
    sandbox("tour")
    run = sandbox.outputs / "runs" / "tour"
    responses = run_folders.load(run, "responses")
    assert responses.pair_id.nunique() == 5 and responses.error.isna().all()
    assert set(responses.model) == {"openai-compatible:Qwen/Qwen3-8B"}
    assert (run / "tables" / "table2_intimate.csv").exists() and (run / "tables" / "table3_public.csv").exists()
    assert (run / "report.html").exists() and (run / "browser.html").exists()


def test_talking_to_models_from_code_runs_as_written(sandbox):
    done = sandbox("from-code")
    assert "Answer to: Hi" in done.stdout and "'answered': 1" in done.stdout
    assert "nearest cached entry differs in: messages" in done.stdout


def test_adding_a_model_runs_as_written(sandbox):
    sandbox("add-model")
    sandbox("add-model-run")
    responses = run_folders.load(sandbox.outputs / "runs" / "my-model", "responses")
    assert set(responses.model) == {"my-model"} and set(responses.group) == {"My lab"}
    assert responses.pair_id.nunique() == 4 and responses.error.isna().all()


def test_bringing_your_own_responses_runs_as_written(sandbox):
    pairs = respond.select_pairs(respond.load_benchmark(), limit=6)
    pd.DataFrame([{"pair_id": p, "model": "my-model", "arm": arm,
                   "answer": "That was wrong and controlling; you must apologise." if arm == "male"
                   else "It is understandable that you felt stressed; talk openly."}
                  for p in pairs.pair_id for arm in ("male", "female")]).to_csv(sandbox.tmp / "my_answers.csv",
                                                                                 index=False)
    sandbox("own-answers")
    sandbox("own-answers-run")
    run = sandbox.outputs / "runs" / "mine"
    assert len(run_folders.load(run, "evaluations")) == 6 * 2 * 2
    table = pd.read_csv(run / "tables" / "table2_intimate.csv")
    assert table["Model"].tolist() == ["my-model"] and table["Group"].tolist() == ["Other models"]
    assert (run / "tables" / "evaluator_agreement.csv").exists()
    sandbox("own-answers-report")
    assert "answers imported from my_answers.csv (12 rows" in (run / "report.html").read_text(encoding="utf-8")
    assert (run / "browser.html").exists()


def test_the_gama_command_runs_as_written(sandbox):
    done = sandbox("gama-cli")
    assert done.stdout.startswith("usage: gama [-h] COMMAND")
    assert "profile offline: ready (nothing missing)" in done.stdout
    run = sandbox.outputs / "runs" / "cli-tour"
    assert run_folders.load(run, "responses").pair_id.nunique() == 4
    assert (run / "tables" / "table2_intimate.csv").exists() and (run / "report.html").exists()


def test_loading_the_dataset_runs_as_written(sandbox):
    """1,298 pairs: 305 intimate, 993 public (data/gama_bench/README.md's composition table)."""
    pairs = pd.read_json(ROOT / "data" / "gama_bench" / "pairs.jsonl", lines=True, dtype=False)
    done = sandbox("hf-dataset")
    counts = pairs["track"].value_counts()
    first = pairs[pairs["track"] == "intimate"].iloc[0]["prompt_male"][:60]
    assert done.stdout.splitlines() == [f"{counts['intimate']} {counts['public']} Value('string')", first]


def test_gama_bench_inside_inspect_runs_as_written(sandbox):
    """Two pairs, both arms, through Inspect, imported, analysed by 06: the answers 04 gives the same model."""
    if not (ROOT / ".venv" / "bin" / "inspect").exists():
        pytest.skip('the inspect extra is not installed in .venv (.venv/bin/pip install -e ".[inspect]")')
    sandbox("inspect")
    run = sandbox.outputs / "runs" / "inspect-sim"
    responses = run_folders.load(run, "responses")
    collected = respond.collect_responses(respond.select_pairs(respond.load_benchmark(), limit=2), ["sim/GPT-5.4"],
                                          cache=False, progress=False)
    assert sorted(responses.answer) == sorted(collected.answer) and responses.simulated.all()
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))["stages"]
    assert manifest["import_inspect"]["samples"] == 4 and "06_analyze" in json.loads(
        (run / "timings.json").read_text())[0]["notebook"]
    assert pd.read_csv(run / "tables" / "table2_intimate.csv")["Model"].tolist() == ["sim/GPT-5.4"]


def test_the_package_table_names_every_package_and_module_and_only_those():
    """Every package of gama_utils has a row of the README's package table naming each of its modules (llm's and
    human's helpers aside), and every name there exists."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    table = text[text.index("| package | stage | modules and what they do |"):].split("\n\n", 1)[0]
    rows = {re.findall(r"`(\w+)`", row.split(" | ")[0])[0]: set(re.findall(r"`(\w+)`", row.split(" | ")[2]))
            for row in table.splitlines()[2:]}
    package = ROOT / "gama_utils"
    packages = {p.name for p in package.iterdir() if (p / "__init__.py").exists()} | {"paths"}
    assert sorted(rows) == sorted(packages), "packages missing from (or not in) the README's package table"
    for name, named in rows.items():
        folder = package / name
        modules = {p.stem for p in folder.glob("*.py")} - {"__init__", "__main__"} if folder.is_dir() else set()
        assert sorted(named - modules) == [], f"{name}: names in the table that are not its modules"
        if name not in ("llm", "human"):
            assert sorted(modules - named) == [], f"{name}: modules missing from the README's package table"


def test_the_lexicon_agreement_table_is_the_measured_one():
    """The README's per-metric agreement rows with their 95% intervals, rebuilt from data/lexicons/agreement.json."""
    import json

    from gama_utils.core.metrics import metric

    agreement = json.loads((ROOT / "data" / "lexicons" / "agreement.json").read_text(encoding="utf-8"))["agreement"]
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    def shown(block: dict, name: str, percent: bool = False) -> str:
        value, (low, high) = block[name], block["ci"][name]
        return (f"{value:.0%} [{low:.0%}, {high:.0%}]" if percent else f"{value:.2f} [{low:.2f}, {high:.2f}]")

    for key in ("puni", "ther", "sev", "emp_agg", "instr", "full_bl"):
        a, order = agreement[key], agreement["ordering"][key]
        if key in ("puni", "ther"):
            cell = (f"Pearson r {shown(a, 'pearson_r')}, Spearman {shown(a, 'spearman_r')}; {a['terms']['found']} of "
                    f"{a['terms']['hand_terms']} hand-marked phrases found")
        elif key == "sev":
            cell = (f"exact {shown(a, 'exact', True)}, within one point {shown(a, 'within_1', True)}, MAE "
                    f"{shown(a, 'mae')}")
        else:
            cell = f"accuracy {shown(a, 'accuracy', True)}, Cohen's κ {shown(a, 'kappa')}"
        row = (f"| {metric(key).label} | {cell} | {order['same']} ({order['judge_tied']} tied, "
               f"{order['reversed']} reversed) |")
        assert row in text, row
