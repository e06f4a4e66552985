"""Run folders: atomic save/load, the manifest, profile parameters, and reproduce on a tiny notebook folder."""

import json
import stat
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from gama_utils.core import run_folders
from gama_utils.runs import orchestrate as runs
from gama_utils.runs import profiles


def toy_notebook(folder: Path, name: str, code: str) -> Path:
    """folder/name.ipynb: a parameters cell (run_dir, backend) and one cell of `code`, on the project's kernel."""
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('run_dir = "x"\nbackend = "sim"')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(code)]
    nb.metadata["kernelspec"] = {"name": "gama-bench", "display_name": "Python (gama-bench)", "language": "python"}
    nbformat.write(nb, folder / f"{name}.ipynb")
    return folder / f"{name}.ipynb"


def test_save_and_load_round_trip_lists_and_missing_values(tmp_path):
    frame = pd.DataFrame({"model": ["a", "b"], "terms": [["x", "y"], []], "error": [None, "HTTP 500"],
                          "valid": [True, False]})
    path = run_folders.save(frame, tmp_path, "evaluations")
    assert stat.S_IMODE(path.stat().st_mode) == 0o644 and not list(tmp_path.glob(".*.tmp"))
    back = run_folders.load(tmp_path, "evaluations")
    assert back.terms.tolist() == [["x", "y"], []] and back.error.tolist() == [None, "HTTP 500"]
    assert run_folders.load(tmp_path, "evaluations", model="b").valid.tolist() == [False]
    with pytest.raises(ValueError, match="no rows with model == 'c'"):
        run_folders.load(tmp_path, "evaluations", model="c")
    with pytest.raises(FileNotFoundError, match="run the notebook that writes 'gaps'"):
        run_folders.load(tmp_path, "gaps")


def test_manifest_keeps_every_stage(tmp_path):
    run_folders.update_manifest(tmp_path, "04_respond", backend="sim", n_pairs=3)
    run_folders.update_manifest(tmp_path, "05_evaluate", evaluator="lexicon")
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["stages"]["04_respond"]["n_pairs"] == 3
    assert manifest["stages"]["05_evaluate"]["evaluator"] == "lexicon"
    assert manifest["packages"]["pandas"] == pd.__version__


def test_profile_parameters_reach_only_the_notebooks_that_declare_them(tmp_path):
    profile = profiles.Profile(parameters={"backend": "sim", "max_usd": 5}, notebooks={"04_respond": {"limit": 3}})
    nb04 = profiles.notebook_parameters(profile, runs.NOTEBOOKS / "04_respond.ipynb", tmp_path)
    nb06 = profiles.notebook_parameters(profile, runs.NOTEBOOKS / "06_analyze.ipynb", tmp_path, {"limit": 9, "seed": 4})
    assert nb04 == {"backend": "sim", "max_usd": 5, "limit": 3, "run_dir": str(tmp_path)}
    assert nb06 == {"seed": 4, "run_dir": str(tmp_path)}  # --set reaches only the notebooks that declare it
    nb04_set = profiles.notebook_parameters(profile, runs.NOTEBOOKS / "04_respond.ipynb", tmp_path, {"limit": 9})
    assert nb04_set["limit"] == 9  # --set wins over the profile
    assert runs._parse_override("max_usd=400") == ("max_usd", 400)
    assert runs._parse_override("arms=[male, female, neutral]") == ("arms", ["male", "female", "neutral"])
    with pytest.raises(FileNotFoundError, match="did you mean 'offline'.*known profiles: .*offline"):
        profiles.load_profile("ofline")


def test_reproduce_runs_the_notebooks_in_order_and_merges_timings(tmp_path, monkeypatch):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    for name in ("01_first", "02_second"):
        toy_notebook(folder, name, f"from pathlib import Path\nPath(run_dir, '{name}.done').write_text('ok')")
    monkeypatch.setattr(runs, "NOTEBOOKS", folder)
    monkeypatch.setattr(runs, "notebooks_in_order", lambda: sorted(folder.glob("[0-9][0-9]_*.ipynb")))
    run = tmp_path / "run"
    done = runs.reproduce("offline", str(run), report=False)
    assert [row["notebook"] for row in done] == ["01_first", "02_second"]
    assert (run / "01_first.done").exists() and (run / "notebooks" / "02_second.ipynb").exists()
    runs.reproduce("offline", str(run), only=["02"], report=False)
    timings = json.loads((run / "timings.json").read_text())
    assert [row["notebook"] for row in timings] == ["01_first", "02_second"]


def test_report_and_runs_import_without_a_cycle():
    """report needs only the run folder helpers; runs calls the report (issue 18: no runs <-> report cycle)."""
    import subprocess
    import sys

    code = ("import sys, gama_utils.report.run_report; "
            "assert 'gama_utils.runs.orchestrate' not in sys.modules, 'report imports runs'; "
            "import gama_utils.runs.orchestrate")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def _plan(overrides: dict | None = None) -> dict[str, set[str]]:
    settings, notebooks, problems = profiles.plan("offline", runs.notebooks_in_order(), None, overrides or {})
    assert not problems
    return runs.dependencies(notebooks, lambda nb: profiles.notebook_parameters(settings, nb, Path("/tmp/run"),
                                                                              overrides or {}))


def test_each_notebook_waits_only_for_the_notebooks_whose_files_it_reads():
    assert _plan() == {"01_generate": set(), "02_review": {"01_generate"}, "03_compile": {"02_review"},
                       "04_respond": set(), "05_evaluate": {"04_respond"}, "06_analyze": {"05_evaluate"},
                       "07_ablation": set(), "08_robustness": {"05_evaluate"}}


def test_a_publishing_compile_or_a_benchmark_file_given_makes_the_later_notebooks_wait():
    published = _plan({"publish": True})
    assert all("03_compile" in published[stem] for stem in ("04_respond", "05_evaluate", "07_ablation"))
    given = _plan({"pairs_path": "outputs/runs/offline/benchmark/pairs.jsonl"})
    assert given["04_respond"] == {"01_generate", "02_review", "03_compile"}
    assert given["07_ablation"] == {f"0{i}_{n}" for i, n in enumerate(
        ["generate", "review", "compile", "respond", "evaluate", "analyze"], start=1)}


def test_a_notebook_without_a_schema_waits_for_every_earlier_one_and_a_failure_stops_the_rest(tmp_path):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    later = "from pathlib import Path\nPath(run_dir, 'later.done').write_text('ok')"
    notebooks = [toy_notebook(folder, "01_fails", "raise RuntimeError('planted')"),
                 toy_notebook(folder, "02_later", later)]
    assert runs.dependencies(notebooks, lambda nb: {}) == {"01_fails": set(), "02_later": {"01_fails"}}
    run = tmp_path / "run"
    with pytest.raises(Exception, match="planted"):
        runs.execute_notebooks(notebooks, run, lambda nb: {"run_dir": str(run)}, label="toy", jobs=2)
    assert not (run / "later.done").exists()


def test_two_processes_updating_one_manifest_lose_no_stage(tmp_path):
    import subprocess
    import sys

    code = ("import sys; from gama_utils.core import run_folders\n"
            "for i in range(40): run_folders.update_manifest(sys.argv[1], f'{sys.argv[2]}-{i}', n=i)")
    workers = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path), name]) for name in ("a", "b")]
    assert [w.wait(timeout=120) for w in workers] == [0, 0]
    stages = json.loads((tmp_path / "manifest.json").read_text())["stages"]
    assert sorted(stages) == sorted(f"{name}-{i}" for name in ("a", "b") for i in range(40))
