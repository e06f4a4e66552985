"""Guardrails: ruff and mypy find nothing, and library code logs instead of printing.

Ruff and mypy run as subprocesses of this environment's executables (the test extra installs them), with
the configuration in pyproject.toml; a failure shows their output. Two more tests feed each tool a file
with known problems, so that a configuration which silently checks nothing cannot pass.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gama_utils.paths import ROOT

BIN = Path(sys.executable).parent
PACKAGE = ROOT / "gama_utils"
ROOT_LOGGING = {"debug", "info", "warning", "warn", "error", "exception", "critical", "log"}


def _tool(name: str, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    executable = BIN / name
    if not executable.exists():
        pytest.fail(f"{name} is not installed beside {sys.executable}: pip install -e '.[test]' (make venv does)")
    return subprocess.run([str(executable), *args], cwd=cwd, capture_output=True, text=True, timeout=600)


def test_ruff_finds_no_problem():
    done = _tool("ruff", "check", "--output-format", "concise", "gama_utils", "tests", "benchmarks")
    assert done.returncode == 0, f"ruff check gama_utils tests benchmarks:\n{done.stdout}{done.stderr}"


def test_mypy_finds_no_problem():
    done = _tool("mypy")
    assert done.returncode == 0, f"mypy (gama_utils, configured in pyproject.toml):\n{done.stdout}{done.stderr}"


def test_ruff_applies_the_projects_rules(tmp_path):
    source = tmp_path / "sample.py"
    source.write_text(textwrap.dedent(f"""\
        import os
        import json
        from typing import Sequence


        def pairs(a: Sequence[int], b: Sequence[int], seen: list = []) -> list:
            return list(zip(a, b)) + [os.sep, json.dumps(seen), missing_name]


        SPACE = 1{" "}
        FITS = "{"x" * 111}"
        TOO_LONG = "{"x" * 108}"
        """), encoding="utf-8")
    lines = source.read_text().splitlines()
    assert [len(line) for line in lines if line.startswith(("FITS", "TOO_LONG"))] == [120, 121]
    done = _tool("ruff", "check", "--config", str(ROOT / "pyproject.toml"), "--output-format", "concise",
                 "--no-cache", str(source), cwd=tmp_path)
    found = sorted(line.split(": ")[1].split()[0] for line in done.stdout.splitlines()
                   if line.startswith("sample.py:"))
    assert done.returncode == 1
    # One rule of each selected family; zip() without strict= (B905) is allowed, and a line of 120 fits.
    assert found == ["B006", "E501", "F821", "I001", "UP035", "W291"], done.stdout


def test_mypy_applies_the_projects_settings(tmp_path):
    source = tmp_path / "sample.py"
    source.write_text(textwrap.dedent("""\
        from typing import Self

        import pandas as pd
        import yaml


        def first_word(text: str | None) -> str:
            return text.split()[0]


        def frame() -> pd.DataFrame:
            return pd.DataFrame(yaml.safe_load("a: [1]"))
        """), encoding="utf-8")
    done = _tool("mypy", "--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(tmp_path / "cache"),
                 str(source), cwd=tmp_path)
    errors = [line.split(": error: ") for line in done.stdout.splitlines() if ": error: " in line]
    assert done.returncode == 1
    # Python 3.10 has no typing.Self; an Optional is not a str; pandas and yaml (untyped, listed) are no error.
    assert [where for where, _ in errors] == ["sample.py:1", "sample.py:8"], done.stdout
    assert '"Self"' in errors[0][1] and '"None"' in errors[1][1]


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _command_line_nodes(tree: ast.Module) -> set[int]:
    """ids of every node inside a function named main or an `if __name__ == "__main__":` block."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        is_main = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "main"
        is_script = (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
                     and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__")
        if is_main or is_script:
            inside.update(id(child) for child in ast.walk(node))
    return inside


def print_and_logging_problems(paths: list[Path], root: Path = ROOT) -> list[str]:
    """print() or logging.basicConfig outside command lines, the root logger, loggers not named log/__name__."""
    problems = []
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        command_line = _command_line_nodes(tree)
        where = path.relative_to(root).as_posix()
        loggers = []
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func, line = node.func, f"{where}:{node.lineno}"
            if isinstance(func, ast.Name) and func.id == "print" and id(node) not in command_line:
                problems.append(f"{line}: print() outside main() (use log = logging.getLogger(__name__))")
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "logging":
                if func.attr == "basicConfig" and id(node) not in command_line:
                    problems.append(f"{line}: logging.basicConfig outside main() (the application configures "
                                    "logging, not the library)")
                elif func.attr in ROOT_LOGGING:
                    problems.append(f"{line}: logging.{func.attr}() logs to the root logger "
                                    "(use log = logging.getLogger(__name__))")
                elif func.attr == "getLogger":
                    loggers.append(node)
        named = [a for a in tree.body if isinstance(a, ast.Assign) and len(a.targets) == 1
                 and isinstance(a.targets[0], ast.Name) and a.targets[0].id == "log"
                 and any(a.value is call for call in loggers)
                 and [ast.unparse(arg) for arg in loggers[0].args] == ["__name__"]]
        if loggers and (len(loggers) != 1 or len(named) != 1):
            problems.append(f"{where}:{loggers[0].lineno}: {len(loggers)} getLogger call(s); a module that logs "
                            "has exactly one, `log = logging.getLogger(__name__)` at module level")
    return sorted(problems, key=lambda p: (p.split(":")[0], int(p.split(":")[1])))


def test_library_code_logs_and_prints_only_from_command_lines():
    problems = print_and_logging_problems(_modules())
    assert problems == [], "\n".join(problems)


def test_the_print_and_logging_check_finds_each_kind_of_problem(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(textwrap.dedent("""\
        import logging

        logger = logging.getLogger("gama")


        def work():
            print("progress")
            logging.info("done")
            logging.basicConfig()


        def main():
            logging.basicConfig()
            print("fine here")


        if __name__ == "__main__":
            print("and here")
        """), encoding="utf-8")
    found = print_and_logging_problems([bad], root=tmp_path)
    assert [p.split(": ", 1)[0] for p in found] == ["bad.py:3", "bad.py:7", "bad.py:8", "bad.py:9"], found
    assert "getLogger" in found[0] and "print()" in found[1] and "root logger" in found[2] and "basicConfig" in found[3]
    good = tmp_path / "good.py"
    good.write_text('import logging\n\nlog = logging.getLogger(__name__)\n\n\ndef work():\n    log.info("x")\n',
                    encoding="utf-8")
    assert print_and_logging_problems([good], root=tmp_path) == []


def module_imports(package: Path, deferred: bool = False, type_only: bool = False) -> dict[str, set[str]]:
    """module → the package's modules it imports when it is imported (module level, not under TYPE_CHECKING);
    with `deferred`, also those its functions import when they run; with `type_only`, also TYPE_CHECKING ones."""
    root = package.parent
    names = {".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__"): p
             for p in package.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test) and not type_only:
                continue
            nested = deferred or isinstance(node, (ast.If, ast.Try))
            for sub in ast.walk(node) if nested else [node]:
                if isinstance(sub, ast.Import):
                    found |= {a.name for a in sub.names if a.name in names}
                elif isinstance(sub, ast.ImportFrom):
                    base = sub.module or ""
                    if sub.level:
                        parent = here.rsplit(".", sub.level - 1)[0] if sub.level > 1 else here
                        base = f"{parent}.{sub.module}" if sub.module else parent
                    for alias in sub.names:
                        target = f"{base}.{alias.name}"
                        found.add(target if target in names else base)
        graph[name] = {m for m in found if m in names and m != name}
    return graph


def import_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle of the import graph as [a, b, ..., a], or [] when there is none."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(module: str) -> list[str]:
        state[module] = "open"
        path.append(module)
        for other in sorted(graph[module]):
            if state.get(other) == "open":
                return [*path[path.index(other):], other]
            if other not in state and (cycle := visit(other)):
                return cycle
        state[module] = "done"
        path.pop()
        return []

    for module in sorted(graph):
        if module not in state and (cycle := visit(module)):
            return cycle
    return []


def test_the_package_has_no_import_cycle():
    graph = module_imports(PACKAGE)
    assert {"gama_utils.llm.client", "gama_utils.analysis.gaps", "gama_utils.human.agreement"} <= set(graph)
    assert "gama_utils.core.metrics" in graph["gama_utils.core.rubric"]
    assert "gama_utils.llm.registry" in graph["gama_utils.llm.client"]
    cycle = import_cycle(graph)
    assert cycle == [], "import cycle: " + " → ".join(cycle)


def test_imports_inside_functions_keep_the_layers_too():
    """An import deferred into a function still makes a cycle of concerns (runs → respond → runs was one)."""
    graph = module_imports(PACKAGE, deferred=True)
    assert "gama_utils.collect.local_server" in graph["gama_utils.runs.orchestrate"]  # imported inside reproduce()
    cycle = import_cycle(graph)
    assert cycle == [], "import cycle through an import inside a function: " + " → ".join(cycle)


def test_the_llm_layer_imports_only_itself_and_paths():
    graph = module_imports(PACKAGE)
    layer = [m for m in graph if m == "gama_utils.llm" or m.startswith("gama_utils.llm.")]
    outside = {m: sorted(t for t in graph[m] if t not in layer and t != "gama_utils.paths") for m in layer}
    assert {"gama_utils.llm", "gama_utils.llm.client", "gama_utils.llm.structured"} <= set(layer)
    assert {m: found for m, found in outside.items() if found} == {}


STAGES = ("paths", "llm", "core", "bench", "collect", "judge", "analysis", "report", "human", "sim", "runs")
"""gama_utils' packages in pipeline order: each imports only from those before it (CONTRIBUTING.md says why)."""


def _stage(module: str) -> str:
    return module.split(".")[1] if module.count(".") else ""


def stage_problems(graph: dict[str, set[str]], stages: tuple[str, ...] = STAGES) -> list[str]:
    """Every import that runs back up the pipeline (or out of a package not in `stages`), as 'a → b'."""
    problems = []
    for module, targets in sorted(graph.items()):
        here = _stage(module)
        for target in sorted(targets):
            there = _stage(target)
            if not here or here == there:
                continue
            if here not in stages or there not in stages or stages.index(there) > stages.index(here):
                problems.append(f"{module} → {target}")
    return problems


def test_imports_run_down_the_pipeline_including_deferred_and_type_only_ones():
    graph = module_imports(PACKAGE, deferred=True, type_only=True)
    assert {_stage(m) for m in graph} - {""} == set(STAGES)
    assert "gama_utils.collect.respond" in graph["gama_utils.judge.evaluate"]  # a real downward import is seen
    assert stage_problems(graph) == []
    assert import_cycle(graph) == [], "import cycle: " + " → ".join(import_cycle(graph))


def test_the_stage_check_finds_an_import_up_the_pipeline():
    graph = {"gama_utils.bench.lint": {"gama_utils.analysis.gaps", "gama_utils.core.grid"},
             "gama_utils.core.grid": {"gama_utils.paths"}, "gama_utils.paths": set(),
             "gama_utils.analysis.gaps": {"gama_utils.core.grid"}, "gama_utils.extra.x": {"gama_utils.core.grid"}}
    assert stage_problems(graph) == ["gama_utils.bench.lint → gama_utils.analysis.gaps",
                                     "gama_utils.extra.x → gama_utils.core.grid"]


def test_the_top_of_the_package_shows_the_stages():
    entries = sorted(p.name for p in PACKAGE.iterdir() if p.name != "__pycache__")
    assert len(entries) <= 12, entries
    assert set(entries) == {"__init__.py", "paths.py"} | {s for s in STAGES if s != "paths"}


def test_each_package_names_its_public_modules():
    for init in sorted(PACKAGE.glob("*/__init__.py")):
        namespace: dict[str, object] = {}
        exec(compile(init.read_text(encoding="utf-8"), str(init), "exec"), namespace)
        names = namespace.get("__all__")
        assert names and (namespace.get("__doc__") or "").strip(), f"{init}: a docstring and __all__"
        modules = {p.stem for p in init.parent.glob("*.py")} - {"__init__", "__main__"}
        if init.parent.name in ("llm", "human"):  # faces that re-export names rather than list modules
            continue
        assert sorted(names) == sorted(modules), f"{init}: __all__ {sorted(names)}, modules {sorted(modules)}"


def test_the_cycle_check_finds_a_planted_cycle(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from . import b\n")
    (package / "b.py").write_text("from typing import TYPE_CHECKING\n\nfrom pkg.sub.c import x\n\n"
                                  "if TYPE_CHECKING:\n    from pkg import a\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "c.py").write_text("x = 1\n\n\ndef f():\n    from pkg import a\n")
    graph = module_imports(package)
    assert graph == {"pkg": set(), "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.sub.c"}, "pkg.sub": set(), "pkg.sub.c": set()}
    assert import_cycle(graph) == []
    (package / "sub" / "c.py").write_text("from ..a import f\n")
    assert import_cycle(module_imports(package)) == ["pkg.a", "pkg.b", "pkg.sub.c", "pkg.a"]
