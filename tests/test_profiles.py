"""Profiles and --set: every value checked against the notebooks' schemas before anything runs; errors name the
profile file and the key, all at once."""

import pytest

from gama_utils.paths import CONFIGS
from gama_utils.runs import orchestrate as runs
from gama_utils.runs import profiles
from gama_utils.runs.parameters import ParameterError


@pytest.fixture
def profile_dir(tmp_path, monkeypatch):
    """A configs/ folder of one's own, so test profiles never touch configs/profiles/."""
    (tmp_path / "profiles").mkdir()
    monkeypatch.setattr(profiles, "CONFIGS", tmp_path)
    return tmp_path / "profiles"


def _plan(name, only=None, overrides=None):
    return profiles.plan(name, runs.notebooks_in_order(), only, overrides)


@pytest.mark.parametrize("name", sorted(p.stem for p in (CONFIGS / "profiles").glob("*.yaml")),
                         ids=lambda name: f"profile_{name}")  # an id "local" would read as the local marker
def test_every_shipped_profile_is_valid(name):
    profile, notebooks, problems = _plan(name)
    assert problems == [] and notebooks


@pytest.mark.parametrize(("text", "expected"), [
    ("parametres: {backend: sim}\n", "mine.yaml: parametres: unknown key; did you mean 'parameters'?"),
    ("notebooks: {04_respnd: {limit: 1}}\n", "mine.yaml: notebooks.04_respnd: no such notebook; did you mean "
                                             "'04_respond'?"),
    ("notebooks: {04_respond: {limit: -1}}\n", "mine.yaml: notebooks.04_respond: limit = -1: Input should be "
                                               "greater than or equal to 1"),
    ("notebooks: {04_respond: {limt: 5}}\n", "mine.yaml: notebooks.04_respond: limt: unknown parameter; did you "
                                             "mean 'limit'?"),
    ("parameters: {max_usdd: 5}\n", "mine.yaml: parameters: max_usdd: no notebook declares this parameter; did you "
                                    "mean 'max_usd'?"),
    ("parameters: {seed: 1.5}\n", "mine.yaml: parameters: seed = 1.5: Input should be a valid integer"),
    ("parameters: {backend: openai}\n", "mine.yaml: parameters: backend = 'openai': Input should be 'sim' or 'api'"),
    ("run: [04_respond, 09_extra]\n", "mine.yaml: run: 09_extra: no such notebook"),
    ("parameters: [backend, sim]\n", "mine.yaml: parameters: Input should be a valid dictionary"),
    ("- just\n- a list\n", "mine.yaml: a profile is a mapping of keys"),
    ("parameters: {backend: sim\n", "mine.yaml: not valid YAML"),
])
def test_a_bad_profile_names_the_file_and_the_key(profile_dir, text, expected):
    (profile_dir / "mine.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(ParameterError) as caught:
        _, _, problems = _plan("mine")
        raise ParameterError(problems)
    assert len(caught.value.problems) == 1 and expected in caught.value.problems[0]


def test_a_profile_that_is_not_utf8_is_named(profile_dir):
    (profile_dir / "mine.yaml").write_bytes("description: caf\xe9\n".encode("latin-1"))
    with pytest.raises(ParameterError, match=r"mine.yaml: not UTF-8 text \(byte 16\)"):
        profiles.load_profile("mine")


def test_set_values_are_checked_and_must_reach_a_notebook_of_the_run():
    _, _, problems = _plan("offline", only=["06"], overrides={
        "max_usdd": 1, "limit": 5, "n_boot": -1, "run_dir": "x", "seed": 2})
    assert problems == [
        "--set: max_usdd: no notebook declares this parameter; did you mean 'max_usd'?",
        "--set: limit: no notebook of this run declares it (declared by 04_respond, 07_ablation, 08_robustness)",
        "--set: n_boot = -1: Input should be greater than or equal to 0",
        "--set: run_dir: the run folder is chosen with --run (or the profile's default_run)",
    ]


def test_only_names_are_checked():
    _, notebooks, problems = _plan("offline", only=["04", "05_evaluate", "4_respond", "10"])
    assert [nb.stem for nb in notebooks] == ["04_respond", "05_evaluate"]
    assert problems == ["--only: 4_respond: no such notebook; did you mean '04_respond'?; notebooks: 01_generate, "
                        "02_review, 03_compile, 04_respond, 05_evaluate, 06_analyze, 07_ablation, 08_robustness",
                        "--only: 10: no such notebook; notebooks: 01_generate, 02_review, 03_compile, 04_respond, "
                        "05_evaluate, 06_analyze, 07_ablation, 08_robustness"]


def test_reproduce_lists_every_problem_and_runs_nothing(profile_dir, outputs, capsys):
    (profile_dir / "mine.yaml").write_text("parametres: {}\nnotebooks: {04_respond: {seed: 1.5}}\n", encoding="utf-8")
    code = runs.main(["reproduce", "--profile", "mine", "--run", "typos", "--set", "limit=abc", "--set",
                      "max_usdd=1", "--set", "arms=male"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error: 5 problem(s) with the parameters, nothing was run:")
    for expected in ("parametres: unknown key", "notebooks.04_respond: seed = 1.5", "--set: limit = 'abc'",
                     "--set: max_usdd: no notebook declares this parameter; did you mean 'max_usd'?",
                     "--set: arms = 'male': Input should be a valid list"):
        assert expected in err
    assert not (outputs / "runs" / "typos").exists()


@pytest.mark.parametrize(("argument", "expected"), [
    ("api_key", "--set takes key=value (a YAML value); api_key has no '=value'"),
    ("=3", "--set takes key=value; the key is empty"),
    ("arms=[male", "--set arms: the value is not valid YAML"),
])
def test_a_malformed_set_is_named_without_its_value(argument, expected, capsys):
    with pytest.raises(SystemExit) as caught:
        runs.main(["reproduce", "--set", argument])
    assert caught.value.code == 2 and expected in capsys.readouterr().err
