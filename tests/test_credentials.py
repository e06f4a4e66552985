"""Credentials: parameters whose name or value looks like one are refused without showing the value, and a key's
value written into a run's file stops the run naming the file."""

import json

import pytest
from test_runs import toy_notebook

from gama_utils.core import credentials, run_folders
from gama_utils.runs import orchestrate as runs
from gama_utils.runs.parameters import ParameterError, problems

# The shape of an OpenAI project key (made up), assembled here so that no key-shaped string is tracked.
KEY = "-".join(("sk", "proj", "Zx81LqPw0aTnVb3mRk6YcHd2"))


@pytest.mark.parametrize("values", [
    {"api_key": "anything"},
    {"openai_api_key": "anything"},
    {"apiKey": "anything"},
    {"token": "anything"},
    {"password": "hunter2"},
    {"target_models": [{"base_url": "http://localhost:8000/v1", "model": "m", "api_key": "anything"}]},
    {"target_models": [{"model": "m", "extra": {"headers": {"Authorization": "anything"}}}]},
])
def test_a_parameter_named_like_a_credential_is_refused(values):
    found = credentials.parameter_problems(values, "04_respond")
    assert len(found) == 1 and "the name says it holds a credential" in found[0]
    assert "anything" not in found[0] and "hunter2" not in found[0]


@pytest.mark.parametrize(("value", "reason"), [
    (KEY, "a known key prefix"),
    ("sk-ant-api03-Qw9" + "x" * 30, "a known key prefix"),
    ("AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "a known key prefix"),
    ("Bearer abcdefgh12345678", "Bearer"),
    ("http://user:s3cretpass@localhost:8000/v1", "URL that carries credentials"),
    ("https://api.example.com/v1?api_key=abc", "URL that carries credentials"),
    ("openai-compatible:http://me:pw@host:8000/v1#Qwen/Qwen3-8B", "URL that carries credentials"),
    ("a8Fk3Lm9Qz2Xw7Vb1Nc4Rt6Yp0Hs5Jd", "long random token"),
    ("0f3a9c2e7b1d4f6a8c0e2b4d6f8a1c3e", "long random token"),  # 32 hex digits, an Azure key's shape
])
def test_a_value_that_looks_like_a_credential_is_refused_without_showing_it(value, reason):
    found = problems("04_respond", {"target_models": [value]})
    assert len(found) == 1 and found[0].startswith("04_respond: target_models[0]: ") and reason in found[0]
    assert value not in found[0]


@pytest.mark.parametrize("values", [
    {"target_models": [{"base_url": "http://localhost:8000/v1", "model": "Qwen/Qwen3-235B-A22B-Thinking-2507",
                        "api_key_env": "DASHSCOPE_API_KEY", "key_required": False,
                        "decoding": {"max_tokens": 4096}}]},
    {"target_models": ["openai-compatible:http://localhost:8000/v1#Qwen/Qwen3-8B&api_key_env=VLLM_API_KEY"]},
    {"target_models": ["deepseek-r1-distill-qwen-32b-instruct-v2", "sim/GPT-5.4"]},
    {"pairs_path": "/tmp/pytest-of-someone/pytest-12/test_runs_things0/outputs/pairs.jsonl"},
    {"max_tokens": 1000},
])
def test_ordinary_values_and_the_documented_safe_names_pass(values):
    assert problems("04_respond", values) == []


def test_an_env_name_field_must_hold_a_name_never_the_key():
    found = problems("04_respond", {"target_models": [{"model": "m", "api_key_env": "abc def"}]})
    assert found == ["04_respond: target_models[0].api_key_env: holds something that is not an environment "
                     "variable's name (give the variable's name, never the key)"]
    found = problems("04_respond", {"target_models": [{"model": "m", "api_key_env": KEY}]})
    assert len(found) == 1 and KEY not in found[0]


def _run_with_model(run, monkeypatch, key_env="MY_KEY_ENV", key=KEY):
    monkeypatch.setenv(key_env, key)
    run_folders.update_manifest(run, "04_respond", models=[{"base_url": "http://localhost:8000/v1", "model": "m",
                                                     "api_key_env": key_env, "alias": "mine"}])


def test_a_key_value_written_into_a_run_file_stops_the_run_naming_the_file(tmp_path, monkeypatch):
    run = tmp_path / "run"
    _run_with_model(run, monkeypatch)
    credentials.check_run_files(run)  # nothing leaked yet
    (run / "tables").mkdir()
    leaked = run / "tables" / "summary.csv"
    leaked.write_text(f"model,note\nmine,{KEY}\n", encoding="utf-8")
    with pytest.raises(credentials.SecretInFileError) as caught:
        credentials.check_run_files(run)
    assert str(caught.value).startswith(f"{leaked}: holds the value of an API key") and KEY not in str(caught.value)
    with pytest.raises(credentials.SecretInFileError):  # every stage's manifest update checks the files
        run_folders.update_manifest(run, "05_evaluate", evaluator="lexicon")


def test_the_scan_finds_a_key_behind_json_escapes_and_across_read_blocks(tmp_path, monkeypatch):
    key = "abc/def+ghi/jkl=mnop1234567890"
    run = tmp_path / "run"
    _run_with_model(run, monkeypatch, key=key)
    # JSON writers that escape "/" (pandas' to_json does) hide the key's raw form; the scan still finds it
    escaped = key.replace("/", "\\/")
    (run / "responses.jsonl").write_text(f'{{"answer": "the key is {escaped}"}}\n', encoding="utf-8")
    assert key not in (run / "responses.jsonl").read_text(encoding="utf-8")
    assert credentials.files_holding(run, [key]) == [run / "responses.jsonl"]
    big = run / "big.bin"
    big.write_bytes(b"x" * ((1 << 20) - 5) + key.encode() + b"y" * 100)  # straddles the 1 MiB block boundary
    assert big in credentials.files_holding(run, [key])


def test_short_placeholder_values_are_not_keys_to_look_for(tmp_path, monkeypatch):
    run = tmp_path / "run"
    _run_with_model(run, monkeypatch, key="EMPTY")  # vLLM's conventional placeholder
    (run / "notes.txt").write_text("EMPTY answers are counted", encoding="utf-8")
    credentials.check_run_files(run)
    assert json.loads((run / "manifest.json").read_text())["models"]["mine"]["api_key_env"] == "MY_KEY_ENV"


def test_reproduce_refuses_a_credential_parameter_before_any_notebook(tmp_path):
    run = tmp_path / "run"
    with pytest.raises(ParameterError) as caught:
        runs.reproduce("offline", str(run), overrides={"api_key": KEY, "pairs_path": KEY, "limit": 1}, report=False)
    assert caught.value.problems == [
        "--set: api_key: the name says it holds a credential; keys come from environment variables only: name the "
        "variable in api_key_env",
        "--set: pairs_path: it looks like an API key (a known key prefix); keys come from environment variables only: "
        "name the variable in api_key_env"]
    assert KEY not in str(caught.value) and not run.exists()


def test_reproduce_stops_at_the_notebook_that_wrote_a_key_and_names_the_file(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LEAKY_KEY", KEY)
    folder = tmp_path / "notebooks"
    folder.mkdir()
    leaky = ("import json, os\nfrom pathlib import Path\n"
             "Path(run_dir, 'manifest.json').write_text(json.dumps({'models': {'m': {'api_key_env': 'LEAKY_KEY'}}}))\n"
             "Path(run_dir, 'debug.log').write_text('headers: ' + os.environ['LEAKY_KEY'])")
    for name, code in (("01_leaky", leaky), ("02_after", "from pathlib import Path\nPath(run_dir, 'ran').touch()")):
        toy_notebook(folder, name, code)
    monkeypatch.setattr(runs, "notebooks_in_order", lambda: sorted(folder.glob("[0-9][0-9]_*.ipynb")))
    run = tmp_path / "run"
    assert runs.main(["reproduce", "--run", str(run), "--no-report"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {run / 'debug.log'}: holds the value of an API key") and KEY not in err
    assert not (run / "ran").exists()
