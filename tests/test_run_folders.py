"""Run folders: under outputs/ unless the explicit flag; never the repository's own folders, whatever the flag."""

import os

import pytest

from gama_utils import paths
from gama_utils.core import run_folders
from gama_utils.core.run_folders import RunFolderError, run_dir
from gama_utils.runs import orchestrate as runs
from gama_utils.runs.parameters import ParameterError


@pytest.fixture
def strict(monkeypatch, outputs):
    """No flag (the test suite sets GAMA_RUN_DIR_ANYWHERE for its temporary runs) and a temporary outputs/."""
    monkeypatch.delenv(run_folders.ANYWHERE_ENV, raising=False)
    return outputs


@pytest.mark.parametrize(("run", "message"), [
    (str(paths.ROOT), "is the repository root or a folder above it"),
    (str(paths.ROOT.parent), "is the repository root or a folder above it"),
    ("/", "is not a run"),
    (".", "is not a run"),
    ("..", "is not a run"),
    ("./", "is not a run"),
    ("data/gama_bench", "inside the repository's own data/ folder"),
    (str(paths.ROOT / "data" / "gama_bench"), "inside the repository's own data/ folder"),
    ("notebooks", "reads as the repository's or outputs' own notebooks/ folder"),
    ("notebooks/mine", "inside the repository's own notebooks/ folder"),
    ("gama_utils/x", "inside the repository's own gama_utils/ folder"),
    ("prompts/x", "inside the repository's own prompts/ folder"),
    ("configs/profiles", "inside the repository's own configs/ folder"),
    ("tests/x", "inside the repository's own tests/ folder"),
    ("benchmarks/x", "inside the repository's own benchmarks/ folder"),
    (".git/x", "inside the repository's own .git/ folder"),
    ("prompts/../data/gama_bench", "inside the repository's own data/ folder"),
    ("outputs", "is the outputs folder itself"),
    ("outputs/runs", "is the outputs folder itself"),
    ("outputs/cache/x", "inside the response cache"),
])
@pytest.mark.parametrize("anywhere", [False, True])
def test_repository_and_outputs_own_folders_are_never_a_run(strict, run, message, anywhere):
    with pytest.raises(RunFolderError, match=message.replace("(", r"\(").replace(")", r"\)")):
        run_dir(run, anywhere=anywhere)


def test_a_symlink_into_the_repository_is_refused(strict, tmp_path):
    link = tmp_path / "innocent"
    link.symlink_to(paths.ROOT / "notebooks")
    with pytest.raises(RunFolderError, match="notebooks/ folder"):
        run_dir(link, anywhere=True)


def test_names_and_paths_under_outputs_are_runs(strict):
    assert run_dir("offline") == strict / "runs" / "offline"
    assert run_dir("outputs/runs/tour") == strict / "runs" / "tour"
    assert run_dir(strict / "elsewhere" / "x") == strict / "elsewhere" / "x"


def test_a_folder_outside_outputs_needs_the_explicit_flag(strict, tmp_path, monkeypatch):
    outside = tmp_path / "my_runs" / "x"
    with pytest.raises(RunFolderError, match="outside the outputs folder .* --run-dir-anywhere .* "
                                             "GAMA_RUN_DIR_ANYWHERE"):
        run_dir(outside)
    assert run_dir(outside, anywhere=True) == outside
    monkeypatch.setenv(run_folders.ANYWHERE_ENV, "1")
    assert run_dir(outside) == outside
    with pytest.raises(RunFolderError, match="inside the repository outside outputs/"):
        run_dir(paths.ROOT / "my_run")  # inside the repository, the flag never helps


def test_save_and_the_notebooks_go_through_the_same_rules(strict, tmp_path):
    import pandas as pd

    from gama_utils.runs import parameters

    with pytest.raises(RunFolderError):
        run_folders.save(pd.DataFrame({"a": [1]}), "data/gama_bench", "responses")
    assert not (paths.ROOT / "data" / "gama_bench" / "responses.jsonl").exists()
    with pytest.raises(ParameterError, match="04_respond: .*inside the repository's own notebooks/ folder"):
        parameters.check("04_respond", {"run_dir": "notebooks/x"})
    with pytest.raises(ParameterError, match="06_analyze: .*outside the outputs folder"):
        parameters.check("06_analyze", {"run_dir": str(tmp_path / "x")})


@pytest.mark.parametrize("run", [str(paths.ROOT), "data/gama_bench", ".", "..", "notebooks"])
def test_reproduce_refuses_them_before_running_anything(strict, run):
    before = {p: p.stat().st_mtime_ns for p in (paths.ROOT / "notebooks").glob("*.ipynb")}
    assert runs.main(["reproduce", "--run", run, "--only", "04", "--run-dir-anywhere"]) == 2
    assert {p: p.stat().st_mtime_ns for p in (paths.ROOT / "notebooks").glob("*.ipynb")} == before
    assert not (paths.ROOT / "data" / "gama_bench" / "notebooks").exists()


def test_reproduce_outside_outputs_only_with_the_flag(strict, tmp_path, capsys):
    run = tmp_path / "elsewhere"
    assert runs.main(["reproduce", "--run", str(run), "--only", "06", "--no-report"]) == 2
    assert "--run-dir-anywhere" in capsys.readouterr().err and not run.exists()
    assert os.environ.get(run_folders.ANYWHERE_ENV) is None
