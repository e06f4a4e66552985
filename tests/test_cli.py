"""The `gama` command: every subcommand's help, check listing everything at once, models never showing a key,
profiles naming the variables, import, browse, lint; `python -m gama_utils.runs` is the same command."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pandas as pd
import pytest
import yaml

from gama_utils.collect import respond
from gama_utils.core import run_folders
from gama_utils.paths import CONFIGS, ROOT
from gama_utils.runs import cli, profiles

SUBCOMMANDS = ("reproduce", "profiles", "models", "check", "import", "import-inspect", "report", "browse", "strip",
               "lint", "publish")


def gama(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def profile_dir(tmp_path, monkeypatch):
    """A configs/ folder of one's own for profiles; the registry stays the project's plus GAMA_MODELS."""
    (tmp_path / "profiles").mkdir()
    monkeypatch.setattr(profiles, "CONFIGS", tmp_path)
    monkeypatch.setattr(cli.readiness, "CONFIGS", tmp_path)
    return tmp_path / "profiles"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_console_script_is_declared_and_python_m_is_the_same_command():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert scripts == {"gama": "gama_utils.runs.cli:main"}
    done = subprocess.run([sys.executable, "-m", "gama_utils.runs", "--help"], cwd=ROOT, capture_output=True,
                          text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("usage: gama [-h] COMMAND")
    assert all(name in done.stdout for name in SUBCOMMANDS)


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_every_subcommand_explains_itself(name, capsys):
    with pytest.raises(SystemExit) as caught:
        cli.main([name, "--help"])
    out = capsys.readouterr().out
    assert caught.value.code == 0
    assert out.startswith(f"usage: gama {name}")
    summary = out.split("\n\n")[1]  # the description's first paragraph: one sentence of its own
    assert len(summary.split()) >= 5 and summary.endswith(".")


def test_check_lists_everything_missing_at_once(profile_dir, tmp_path, monkeypatch, capsys):
    """Two unset key variables (one shared by two models), two servers that accept no connection, a --set typo and
    a kernel that does not exist: six problems, one run of check."""
    port = _closed_port()
    models = {
        "cli-a": {"client": "openai", "model": "a", "base_url": "http://127.0.0.1:1/v1", "api_key_env": "CLI_KEY_A"},
        "cli-b": {"client": "openai", "model": "b", "base_url": "http://127.0.0.1:1/v1", "api_key_env": "CLI_KEY_A"},
        "cli-c": {"client": "openai", "model": "c", "base_url": f"http://127.0.0.1:{port}/v1",
                  "api_key_env": "CLI_KEY_C", "key_required": False},
        "cli-judge": {"client": "openai", "model": "j", "base_url": "http://127.0.0.1:1/v1",
                      "api_key_env": "CLI_KEY_J", "roles": ["evaluator"]},
    }
    (tmp_path / "models.yaml").write_text(yaml.safe_dump({"models": models}), encoding="utf-8")
    monkeypatch.setenv("GAMA_MODELS", str(tmp_path / "models.yaml"))
    for var in ("CLI_KEY_A", "CLI_KEY_C", "CLI_KEY_J"):
        monkeypatch.delenv(var, raising=False)
    (profile_dir / "mine.yaml").write_text(yaml.safe_dump({
        "run": ["04_respond", "05_evaluate"], "parameters": {"backend": "api"},
        "notebooks": {"04_respond": {"target_models": ["cli-a", "cli-b", "cli-c"]},
                      "05_evaluate": {"evaluator": "cli-judge"}}}), encoding="utf-8")
    code, out, _ = gama(capsys, "check", "--profile", "mine", "--set", "max_usdd=1", "--kernel", "no-such-kernel",
                        "--timeout", "1")
    assert code == 1
    lines = [line[2:] for line in out.splitlines() if line.startswith("- ")]
    assert out.startswith(f"profile mine: {len(lines)} thing(s) missing")
    assert len(lines) == 6, out
    assert "--set: max_usdd: no notebook declares this parameter; did you mean 'max_usd'?" in lines
    assert "environment variable CLI_KEY_A is not set (read by cli-a, cli-b)" in lines
    assert "environment variable CLI_KEY_J is not set (read by cli-judge)" in lines
    assert not any("CLI_KEY_C" in line for line in lines)  # key_required: false
    assert any(line.startswith("cli-a, cli-b, cli-judge: base URL host 127.0.0.1:1 is unreachable") for line in lines)
    assert any(line.startswith(f"cli-c: base URL host 127.0.0.1:{port} is unreachable") for line in lines)
    assert any(line.startswith("Jupyter kernel 'no-such-kernel' is not installed") for line in lines)


def test_check_passes_a_ready_profile(profile_dir, fake_openai, tmp_path, monkeypatch, capsys):
    models = {"cli-ok": {"client": "openai", "model": "fake-model", "base_url": fake_openai.base_url,
                         "api_key_env": "FAKE_OPENAI_KEY", "roles": ["target", "evaluator"]}}
    (tmp_path / "models.yaml").write_text(yaml.safe_dump({"models": models}), encoding="utf-8")
    monkeypatch.setenv("GAMA_MODELS", str(tmp_path / "models.yaml"))
    (profile_dir / "ok.yaml").write_text(yaml.safe_dump({
        "run": ["04_respond", "05_evaluate", "06_analyze"], "parameters": {"backend": "api"},
        "notebooks": {"04_respond": {"target_models": ["cli-ok"]}, "05_evaluate": {"evaluator": "lexicon"}}}),
        encoding="utf-8")
    requests_before = fake_openai.received
    monkeypatch.setattr(cli.readiness, "kernel_problems", lambda kernel: [])
    code, out, _ = gama(capsys, "check", "--profile", "ok")
    assert (code, out.strip()) == (0, "profile ok: ready (nothing missing)")
    assert fake_openai.received == requests_before  # a TCP probe, no request


def test_check_of_an_unknown_profile_names_the_known_ones(capsys):
    code, _, err = gama(capsys, "check", "--profile", "papr")
    assert code == 2 and "unknown profile 'papr'; did you mean 'paper'?" in err


def test_models_says_whether_the_key_is_set_never_the_key(monkeypatch, capsys):
    secret = "key-cli-SENTINEL-0123456789abcdef"  # shaped like tests/conftest.py FAKE_KEY, not a real key
    monkeypatch.setenv("DEEPSEEK_API_KEY", secret)
    monkeypatch.delenv("MINIMAX_API_KEY", raising=False)
    code, out, err = gama(capsys, "models")
    assert code == 0 and secret not in out + err
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:]}
    registry = yaml.safe_load((CONFIGS / "models.yaml").read_text(encoding="utf-8"))["models"]
    assert set(rows) == set(registry) | {alias for alias in rows if alias.startswith("sim/")}
    assert rows["deepseek-v4-pro"][-2:] == ["DEEPSEEK_API_KEY", "set"]
    assert rows["minimax-m2.7"][-3:] == ["MINIMAX_API_KEY", "not", "set"]
    assert rows["gemini-3-pro"][3:6] == ["azure", "2.0", "12.0"]  # configs/models.yaml: $2 in, $12 out per M
    code, out, _ = gama(capsys, "models", "--role", "evaluator")
    assert "gemini-3-pro" in out and "gpt-5.2 " not in out  # GPT-5.2 is a target only


def test_profiles_name_the_variables_of_their_models(capsys):
    """paper: the api_key_env of every model of Table 5 and of its judges, read from configs/models.yaml."""
    code, out, _ = gama(capsys, "profiles")
    blocks = {block.split(":")[0]: block for block in out.split("\n") if block and not block.startswith(" ")}
    assert code == 0 and set(blocks) == {p.stem for p in (CONFIGS / "profiles").glob("*.yaml")}
    offline = out[out.index("offline:"):].split("\n")[:3]
    assert offline[2].strip() == "variables: none"
    paper = out[out.index("paper:"):].split("\n")[2]
    registry = yaml.safe_load((CONFIGS / "models.yaml").read_text(encoding="utf-8"))["models"]
    expected = {"AZURE_OPENAI_ENDPOINT"} | {registry[a]["api_key_env"] for a in (
        "gpt-5.4", "gpt-5.2", "gemini-2.5-pro", "gemini-3-pro", "doubao-seed-2.0-pro", "minimax-m2.7", "qwen3",
        "qwen3.5", "deepseek-v4-pro", "kimi-2.5")}
    shown = {v.strip() for v in paper.split("variables:")[1].split(",")}
    assert {v for v in shown if "(optional)" not in v} == expected


def test_import_brings_answers_into_a_run(tmp_path, capsys):
    pairs = respond.select_pairs(respond.load_benchmark(), limit=3)
    rows = [{"pair_id": p, "model": "mine", "arm": arm, "answer": f"answer {i}"}
            for i, (p, arm) in enumerate((p, a) for p in pairs.pair_id for a in ("male", "female"))]
    pd.DataFrame(rows).to_csv(tmp_path / "answers.csv", index=False)
    run = tmp_path / "run"
    code, out, _ = gama(capsys, "import", str(tmp_path / "answers.csv"), "--run", str(run))
    assert code == 0 and out.startswith("6 answers of 1 model(s) on 3 pairs")
    assert sorted(run_folders.load(run, "responses").answer) == sorted(r["answer"] for r in rows)
    pd.DataFrame(rows[:1] + [{**rows[0], "arm": "mal"}]).to_csv(tmp_path / "bad.csv", index=False)
    code, _, err = gama(capsys, "import", str(tmp_path / "bad.csv"), "--run", str(tmp_path / "bad"))
    assert code == 2 and "bad.csv" in err and "row 2" in err and "'mal'" in err


def test_browse_builds_the_page_a_run_lacks_and_keeps_one_it_has(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    code, out, _ = gama(capsys, "browse", str(run), "--print")
    assert (code, out.strip()) == (0, str(run / "browser.html"))
    assert "<html" in (run / "browser.html").read_text(encoding="utf-8").lower()
    (run / "browser.html").write_text("<html>kept</html>", encoding="utf-8")
    code, out, _ = gama(capsys, "browse", str(run), "--print")
    assert code == 0 and (run / "browser.html").read_text(encoding="utf-8") == "<html>kept</html>"


def test_lint_names_each_problem(tmp_path, capsys):
    good = json.loads((ROOT / "data" / "templates" / "career_sabotage.jsonl").read_text(encoding="utf-8")
                      .splitlines()[0])
    bad = {**good, "template_id": good["template_id"][:-2] + "99", "text": good["text"] + " She said so."}
    (tmp_path / "bank.jsonl").write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    code, out, _ = gama(capsys, "lint", str(tmp_path / "bank.jsonl"))
    lines = out.splitlines()
    assert code == 1 and lines[0] == "2 templates, 1 with problems"
    assert lines[1:] and all(line.startswith(bad["template_id"] + ": ") for line in lines[1:])
    assert any("she" in line.lower() for line in lines[1:])
    code, _, err = gama(capsys, "lint", str(tmp_path / "missing.jsonl"))
    assert code == 2 and "missing.jsonl" in err


def test_import_inspect_names_a_missing_extra_or_log(tmp_path, capsys):
    import importlib.util

    code, _, err = gama(capsys, "import-inspect", str(tmp_path / "missing.eval"), "--run", str(tmp_path / "run"))
    assert code == 2
    if importlib.util.find_spec("inspect_ai") is None:
        assert 'needs the inspect extra: pip install -e ".[inspect]"' in err
    else:
        assert "missing.eval: no such Inspect log" in err
    assert not (tmp_path / "run").exists()


def test_the_makefile_calls_gama():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "-m gama_utils.runs " not in makefile
    assert "$(BIN)/gama reproduce --profile $(PROFILE)" in makefile and "$(BIN)/gama strip" in makefile


def test_an_installed_package_finds_the_checkout_it_is_run_in(tmp_path):
    """pip install . puts the package in site-packages: GAMA_ROOT, else the working directory's checkout."""
    from gama_utils.paths import find_root

    checkout, site = tmp_path / "clone", tmp_path / "site-packages" / "gama_utils"
    (checkout / "configs").mkdir(parents=True)
    (checkout / "configs" / "models.yaml").write_text("models: {}\n", encoding="utf-8")
    (checkout / "notebooks").mkdir()
    site.mkdir(parents=True)
    assert find_root(checkout / "gama_utils", {}, tmp_path) == checkout  # editable: the package's own checkout
    assert find_root(site, {}, checkout / "notebooks") == checkout
    assert find_root(site, {"GAMA_ROOT": str(checkout)}, tmp_path) == checkout
    assert find_root(site, {}, tmp_path) == site.parent  # nothing found: missing files are named where looked for
