"""Notebook parameters: one schema per notebook, its cell generated from it, and each class of bad value refused
with one clear error naming the parameter, all problems at once."""

import json

import pytest

from gama_utils.paths import NOTEBOOKS
from gama_utils.runs import parameter_cells, parameters
from gama_utils.runs.parameters import ParameterError


def _parameters_cell(notebook: str) -> str:
    cells = json.loads((NOTEBOOKS / f"{notebook}.ipynb").read_text(encoding="utf-8"))["cells"]
    cell = next(c for c in cells if "parameters" in c.get("metadata", {}).get("tags", []))
    return cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])


@pytest.mark.parametrize("notebook", list(parameters.SCHEMAS))
def test_each_parameters_cell_declares_exactly_the_schema_with_its_defaults_and_a_comment(notebook):
    source = _parameters_cell(notebook)
    namespace: dict = {}
    exec(source, {}, namespace)  # the cell is plain assignments
    fields = parameters.SCHEMAS[notebook].model_fields
    assert list(namespace) == list(fields)
    assert namespace == {name: field.get_default(call_default_factory=True) for name, field in fields.items()}
    assignments = [line for line in source.splitlines() if line and not line.startswith((" ", "#"))]
    assert len(assignments) == len(fields) and all("  # " in line for line in assignments)
    assert all(field.description for field in fields.values())
    assert parameters.validate(notebook, namespace) == parameters.SCHEMAS[notebook]()


def test_no_cell_differs_from_its_schema():
    assert parameter_cells.stale_cells() == []


@pytest.mark.parametrize("notebook", list(parameters.SCHEMAS))
def test_each_notebook_checks_its_parameters_on_its_first_line(notebook):
    cells = json.loads((NOTEBOOKS / f"{notebook}.ipynb").read_text(encoding="utf-8"))["cells"]
    index = next(i for i, c in enumerate(cells) if "parameters" in c.get("metadata", {}).get("tags", []))
    first = next(c for c in cells[index + 1:] if c["cell_type"] == "code")
    source = first["source"] if isinstance(first["source"], str) else "".join(first["source"])
    first = f'from gama_utils.runs import parameters; parameters.check("{notebook}", globals())'
    assert source.splitlines()[0] == first


@pytest.mark.parametrize(("values", "expected"), [
    ({"limit": -1}, "04_respond: limit = -1: Input should be greater than or equal to 1"),
    ({"limit": 0}, "04_respond: limit = 0: Input should be greater than or equal to 1"),
    ({"limit": "abc"}, "04_respond: limit = 'abc': Input should be a valid integer"),
    ({"limit": "5"}, "04_respond: limit = '5': Input should be a valid integer"),
    ({"limit": True}, "04_respond: limit = True: Input should be a valid integer"),
    ({"seed": 1.5}, "04_respond: seed = 1.5: Input should be a valid integer"),
    ({"seed": -3}, "04_respond: seed = -3: Input should be greater than or equal to 0"),
    ({"arms": "male"}, "04_respond: arms = 'male': Input should be a valid list"),
    ({"arms": ["male", "woman"]}, "04_respond: arms[1] = ['male', 'woman']: Input should be 'male', 'female' or "
                                  "'neutral'"),
    ({"arms": []}, "04_respond: arms = []: List should have at least 1 item after validation, not 0"),
    ({"max_usd": -1}, "04_respond: max_usd = -1: Input should be greater than or equal to 0"),
    ({"max_usd": "25"}, "04_respond: max_usd = '25': Input should be a valid number"),
    ({"backend": "openai"}, "04_respond: backend = 'openai': Input should be 'sim' or 'api'"),
    ({"samples_per_prompt": 0}, "04_respond: samples_per_prompt = 0: Input should be greater than or equal to 1"),
    ({"replace": "yes"}, "04_respond: replace = 'yes': Input should be a valid boolean"),
    ({"target_models": "sim/GPT-5.4"}, "04_respond: target_models = 'sim/GPT-5.4': Input should be a valid list"),
])
def test_a_wrong_type_or_range_is_one_clear_error(values, expected):
    assert parameters.problems("04_respond", values) == [expected]


@pytest.mark.parametrize(("notebook", "values", "expected"), [
    ("02_review", {"reviewers": ["sim/GPT-5.4"]}, "02_review: reviewers = ['sim/GPT-5.4']: List should have at least "
                                                  "2 items after validation, not 1"),
    ("03_compile", {"embedding_backend": "bert"},
     "03_compile: embedding_backend = 'bert': String should match pattern"),
    ("03_compile", {"dedup_threshold": 1.5}, "03_compile: dedup_threshold = 1.5: Input should be less than or equal "
                                             "to 1"),
    ("06_analyze", {"n_boot": -5}, "06_analyze: n_boot = -5: Input should be greater than or equal to 0"),
    ("07_ablation", {"base_urls": ["http://localhost:8000/v1"]}, "07_ablation: base_urls = ['http://localhost:8000/v1']"
                                                                 ": Input should be a valid dictionary"),
    ("08_robustness", {"annotators": "annotator_1"}, "08_robustness: annotators = 'annotator_1': Input should be a "
                                                     "valid list"),
    ("08_robustness", {"human_n": 2.5}, "08_robustness: human_n = 2.5: Input should be a valid integer"),
])
def test_every_notebook_checks_types_and_ranges(notebook, values, expected):
    found = parameters.problems(notebook, values)
    assert len(found) == 1 and found[0].startswith(expected)


def test_unknown_names_get_the_closest_known_one():
    assert parameters.problems("04_respond", {"max_usdd": 1}) == [
        "04_respond: max_usdd: unknown parameter; did you mean 'max_usd'?"]
    assert parameters.problems("04_respond", {"target_model": ["x"]}) == [
        "04_respond: target_model: unknown parameter; did you mean 'target_models'?"]
    assert parameters.problems("04_respond", {"zzz": 1}) == ["04_respond: zzz: unknown parameter"]
    with pytest.raises(KeyError, match="did you mean '04_respond'"):
        parameters.schema("04_respnd")


def test_all_problems_come_at_once_and_nothing_is_half_valid():
    with pytest.raises(ParameterError) as caught:
        parameters.validate("04_respond", {"limit": -1, "seed": 1.5, "max_usdd": 1, "arms": "male", "max_usd": -1})
    assert len(caught.value.problems) == 5
    assert str(caught.value).startswith("5 problem(s) with the parameters, nothing was run:")


def test_right_values_pass_including_every_shape_a_notebook_accepts():
    params = parameters.validate("04_respond", {
        "limit": 5, "seed": 3, "max_usd": 0, "arms": ["male", "female", "neutral"], "track": ["intimate"],
        "severity": "L1", "target_models": ["sim/GPT-5.4", {"base_url": "http://localhost:8000/v1",
                                                            "model": "Qwen/Qwen3-8B", "api_key_env": "VLLM_API_KEY"}]})
    assert params.limit == 5 and params.max_usd == 0.0 and params.target_models[1]["api_key_env"] == "VLLM_API_KEY"
    assert parameters.validate("06_analyze", {"n_boot": 0}).n_boot == 0  # 0 resamples: no CIs, allowed


def test_check_reads_the_notebook_namespace_and_refuses_before_anything_runs(tmp_path):
    namespace = {"run_dir": str(tmp_path / "run"), "limit": "abc", "seed": 1.5, "In": [], "get_ipython": print}
    with pytest.raises(ParameterError) as caught:
        parameters.check("04_respond", namespace)
    assert caught.value.problems == ["04_respond: limit = 'abc': Input should be a valid integer",
                                     "04_respond: seed = 1.5: Input should be a valid integer"]
    assert not (tmp_path / "run").exists()
    checked = parameters.check("06_analyze", {"run_dir": str(tmp_path / "run"), "n_boot": 10})
    assert checked.n_boot == 10 and checked.seed == 0


def test_check_refuses_a_stray_credential_papermill_injected(tmp_path):
    namespace = {"run_dir": str(tmp_path / "run"), "api_key": "whatever-value-1234"}
    with pytest.raises(ParameterError) as caught:
        parameters.check("06_analyze", namespace)
    assert caught.value.problems[0].startswith("06_analyze: api_key: the name says it holds a credential")
    assert "whatever-value-1234" not in str(caught.value)


def test_check_names_a_misspelt_parameter_papermill_injected(tmp_path):
    """papermill only warns about a name the notebook does not declare; the cell it injects (in the kernel's
    input history, `In`) is read and each undeclared name refused with the closest declared one."""
    own_cell = _parameters_cell("04_respond")
    injected = '# Parameters\nrun_dir = "outputs/runs/x"\nlimit = 1\nmax_usdd = 1\nsede = 3\n'
    namespace = {"run_dir": str(tmp_path / "run"), "limit": 1, "max_usdd": 1, "sede": 3,
                 "In": ["", own_cell, injected, "parameters.check('04_respond', globals())"]}
    with pytest.raises(ParameterError) as caught:
        parameters.check("04_respond", namespace)
    assert caught.value.problems == [
        "04_respond: max_usdd: this notebook has no such parameter; did you mean 'max_usd'?",
        "04_respond: sede: this notebook has no such parameter; did you mean 'seed'?"]
    # JupyterLab: variables of later cells in the namespace, no injected cell in the history: nothing to refuse
    namespace = {"run_dir": str(tmp_path / "run"), "limit": 1, "pairs": [], "fig": None,
                 "In": ["", own_cell, "pairs = []", "fig = None", "parameters.check('04_respond', globals())"]}
    assert parameters.check("04_respond", namespace).limit == 1


@pytest.mark.slow
def test_papermill_with_a_misspelt_parameter_stops_in_the_first_cell(tmp_path):
    import papermill
    from papermill.exceptions import PapermillExecutionError

    with pytest.raises(PapermillExecutionError) as caught:
        papermill.execute_notebook(str(NOTEBOOKS / "06_analyze.ipynb"), str(tmp_path / "06.ipynb"),
                                   kernel_name="gama-bench", cwd=str(NOTEBOOKS), progress_bar=False,
                                   parameters={"run_dir": str(tmp_path / "run"), "n_bot": 10})
    assert caught.value.ename == "ParameterError"
    assert "n_bot: this notebook has no such parameter; did you mean 'n_boot'?" in caught.value.evalue
    assert not (tmp_path / "run").exists()


def test_a_notebook_run_is_recorded_in_the_manifest_from_papermill_or_jupyterlab(tmp_path):
    """06_analyze records no stage of its own: its first line records the run, with how it ran and its parameters."""
    run = tmp_path / "run"
    interactive = {"run_dir": str(run), "n_boot": 10, "In": ["", "parameters.check('06_analyze', globals())"],
                   "get_ipython": print}
    parameters.check("06_analyze", interactive)
    entry = json.loads((run / "manifest.json").read_text(encoding="utf-8"))["notebook_runs"]["06_analyze"]
    assert entry["how"] == "interactive" and entry["parameters"]["n_boot"] == 10 and entry["at"].endswith("Z")
    injected = '# Parameters\nrun_dir = "x"\nn_boot = 20\n'
    papermill = {**interactive, "n_boot": 20, "In": ["", _parameters_cell("06_analyze"), injected]}
    parameters.check("06_analyze", papermill)
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["notebook_runs"]["06_analyze"]["how"] == "papermill"
    assert manifest["notebook_runs"]["06_analyze"]["parameters"]["n_boot"] == 20
    parameters.check("06_analyze", {"run_dir": str(tmp_path / "plain"), "n_boot": 10})  # outside a kernel
    assert not (tmp_path / "plain" / "manifest.json").exists()


def test_every_missing_key_variable_is_listed_up_front_per_variable(monkeypatch, tmp_path):
    """`make reproduce PROFILE=paper` used to stop at the first missing variable of the first notebook."""
    for name in ("AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", "DEEPSEEK_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ARK_API_KEY", "x-not-a-key")
    with pytest.raises(ParameterError) as caught:
        parameters.validate("04_respond", {"backend": "api", "run_dir": str(tmp_path / "run")}).preflight()
    problems = caught.value.problems
    azure = [p for p in problems if "AZURE_OPENAI_API_KEY" in p]
    assert len(azure) == 1 and azure[0].startswith("environment variable AZURE_OPENAI_API_KEY is not set (read by ")
    assert "gpt-5.4" in azure[0] and "kimi-2.5" in azure[0]
    assert any("AZURE_OPENAI_ENDPOINT is not set (read by" in p for p in problems)
    assert any("DEEPSEEK_API_KEY" in p for p in problems) and not any("ARK_API_KEY" in p for p in problems)
    parameters.validate("04_respond", {"run_dir": str(tmp_path / "run")}).preflight()  # sim models need no key


def test_papermill_reads_every_generated_parameter_with_its_type():
    """`papermill --help-notebook` showed "Unknown type" for every parameter: the cells now carry type comments."""
    import papermill

    for name in parameters.SCHEMAS:
        found = papermill.inspect_notebook(str(NOTEBOOKS / f"{name}.ipynb"))
        assert set(found) == set(parameters.schema(name).model_fields), name
        assert all(p["inferred_type_name"] not in ("None", "") for p in found.values()), name
    analyze = papermill.inspect_notebook(str(NOTEBOOKS / "06_analyze.ipynb"))
    assert analyze["n_boot"]["inferred_type_name"] == "int" and analyze["run_null_check"]["inferred_type_name"] == (
        "bool|None")
