"""Shared fixtures: a local OpenAI-compatible server (`fake_openai`) and throwaway output folders."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_openai import FakeOpenAI


def pytest_addoption(parser):
    parser.addoption("--local", action="store_true",
                     help="also run the real-LLM tests on a local llama.cpp server (make test-local)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--local"):
        return
    skip = pytest.mark.skip(reason="a real LLM on a local llama.cpp server: run with make test-local")
    for item in items:
        if "local" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def _runs_in_temporary_folders(tmp_path_factory):
    """Tests write their runs in pytest's temporary folders, outside outputs/: the explicit flag allows that
    (gama_utils.core.run_folders; tests/test_run_folders.py checks the refusal without it). Repository folders stay
    refused whatever the flag. The session's runs share one memo of pure readings (gama_utils.core.memo), as
    a user's runs do, in pytest's folder rather than outputs/cache. Under pytest-xdist every core already runs a
    test file, so a run's notebooks go one after the other (GAMA_NOTEBOOK_JOBS=1) unless a test asks for more."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GAMA_RUN_DIR_ANYWHERE", "1")
        session = tmp_path_factory.getbasetemp()  # under pytest-xdist, a worker's: the memo is the whole run's
        shared = session.parent if os.environ.get("PYTEST_XDIST_WORKER") else session
        mp.setenv("GAMA_MEMO", str(shared / "memo.sqlite"))
        if os.environ.get("PYTEST_XDIST_WORKER") and "GAMA_NOTEBOOK_JOBS" not in os.environ:
            mp.setenv("GAMA_NOTEBOOK_JOBS", "1")
        yield


FAKE_KEY_ENV = "FAKE_OPENAI_KEY"
FAKE_KEY = "key-fake-SENTINEL-7f3c9a2e41d84b6f"


@pytest.fixture(scope="session")
def _fake_openai_server():
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture
def fake_openai(_fake_openai_server, monkeypatch):
    """A started FakeOpenAI (reset for this test): .base_url, counters, .enqueue(...) / .configure(...) faults.

    The environment variable FAKE_OPENAI_KEY holds the key the server expects; `fake_openai.spec(...)`
    gives an inline ModelSpec for it.
    """
    server = _fake_openai_server.reset(api_key=FAKE_KEY)
    monkeypatch.setenv(FAKE_KEY_ENV, FAKE_KEY)

    def spec(**fields):
        from gama_utils import llm

        return llm.resolve_model({"base_url": server.base_url, "model": "fake-model", "api_key_env": FAKE_KEY_ENV,
                                  "alias": "fake", "timeout_s": 10.0, **fields})

    server.spec = spec
    yield server
    server.reset()


@pytest.fixture(scope="module")
def paper_metrics_only():
    """Only the paper's six metrics are registered while a module's tests run (whatever else a collaborator
    has declared): for tests whose data are the paper's six-field evaluator answers."""
    from gama_utils.core import metrics

    with metrics.only(metrics.PAPER_METRIC_KEYS):
        yield


@pytest.fixture
def outputs(tmp_path, monkeypatch):
    """A temporary outputs/ folder (GAMA_OUTPUTS is read by gama_utils.paths at import, so patch CACHE too)."""
    from gama_utils import paths

    monkeypatch.setattr(paths, "OUTPUTS", tmp_path / "outputs")
    monkeypatch.setattr(paths, "CACHE", tmp_path / "outputs" / "cache")
    monkeypatch.setattr(paths, "RUNS", tmp_path / "outputs" / "runs")
    return tmp_path / "outputs"
