"""Notebooks stay clean in git when stepped through: JupyterLab saves them stripped, and git's filter stores them so.

In a throwaway checkout (never this one's git config): the Makefile's own `git-filter` recipe; a notebook
executed for real by a kernel and 06_analyze after Run All, each saved through Jupyter's contents manager
with the pre-save hook `make venv` registers (gama_utils.runs.notebook_saves), as JupyterLab saves them.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from gama_utils.runs import notebook_saves

ROOT = Path(__file__).resolve().parents[1]
MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")
pytestmark = pytest.mark.skipif(shutil.which("git") is None or shutil.which("make") is None,
                                reason="git and make are needed to check the notebook git filter")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def filter_arguments() -> list[str]:
    """The nbstripout arguments the Makefile's git filter uses."""
    found = re.search(r"^NBSTRIPOUT := (.+)$", MAKEFILE, re.M)
    assert found, "Makefile defines NBSTRIPOUT"
    return found.group(1).split()


def _stripped(text: str) -> str:
    return subprocess.run([sys.executable, *filter_arguments(), "-t"], input=text, capture_output=True, text=True,
                          check=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A checkout holding 06_analyze and a one-cell notebook, committed with the Makefile's git filter set up."""
    repo = tmp_path / "checkout"
    (repo / "notebooks").mkdir(parents=True)
    (repo / "gama_utils").mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "test@example.invalid")
    git(repo, "config", "user.name", "test")
    for name in (".gitattributes", ".gitignore"):
        shutil.copy(ROOT / name, repo / name)
    shutil.copy(ROOT / "notebooks" / "06_analyze.ipynb", repo / "notebooks" / "06_analyze.ipynb")
    tiny = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")])
    tiny.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    (repo / "notebooks" / "tiny.ipynb").write_text(_stripped(nbformat.writes(tiny)), encoding="utf-8")
    subprocess.run(["make", "-s", "-C", str(repo), "-f", str(ROOT / "Makefile"), "git-filter",
                    f"NB_PYTHON={sys.executable}"], check=True, capture_output=True, text=True)
    assert "nbstripout" in git(repo, "config", "filter.nbstripout.clean")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "notebooks")
    assert git(repo, "status", "--porcelain") == ""
    return repo


def jupyter_save(repo: Path, path: str, notebook: dict) -> None:
    """Save as JupyterLab does: Jupyter's file contents manager with the hook make venv registers."""
    from jupyter_server.services.contents.filemanager import FileContentsManager
    from traitlets.config import Config

    hook = json.loads(re.search(r"'(\{\"FileContentsManager.*\})'", MAKEFILE).group(1))  # what make venv writes
    manager = FileContentsManager(root_dir=str(repo), config=Config(hook))
    manager.save({"type": "notebook", "format": "json", "content": notebook}, path)


def run_all_outputs(notebook: dict) -> dict:
    """06_analyze as Run All leaves it in JupyterLab: counts, timings, text and figure outputs, full language_info."""
    for count, cell in enumerate((c for c in notebook["cells"] if c["cell_type"] == "code"), start=1):
        cell["execution_count"] = count
        cell["metadata"]["execution"] = {"iopub.status.busy": "2026-01-01T00:00:00.000Z"}
        cell["outputs"] = [{"name": "stdout", "output_type": "stream", "text": "evaluator sim/Gemini-3-Pro\n"},
                           {"data": {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"}, "metadata": {},
                            "output_type": "display_data"}]
    notebook["metadata"]["language_info"] = {
        "codemirror_mode": {"name": "ipython", "version": 3}, "file_extension": ".py", "mimetype": "text/x-python",
        "name": "python", "nbconvert_exporter": "python", "pygments_lexer": "ipython3", "version": "3.11.7"}
    return notebook


def test_every_committed_notebook_is_what_the_filter_stores():
    """Else a fresh checkout with the filter would show every notebook modified."""
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        text = path.read_text(encoding="utf-8")
        assert _stripped(text) == text, f"{path.name}: run `python {' '.join(filter_arguments())} -t`"


def test_the_save_hook_strips_as_the_makefile_filter_does():
    options = notebook_saves.NBSTRIPOUT_OPTIONS
    assert filter_arguments() == ["-m", "nbstripout", "--keep-id", "--extra-keys", *notebook_saves.EXTRA_KEYS]
    assert options["keep_id"] and not options["keep_output"] and not options["keep_count"]


def test_a_notebook_executed_by_a_kernel_and_saved_leaves_git_status_clean(repo: Path):
    from nbclient import NotebookClient

    path = repo / "notebooks" / "tiny.ipynb"
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, kernel_name="python3", timeout=120).execute()
    assert notebook.cells[0].outputs[0]["text"] == "42\n"
    jupyter_save(repo, "notebooks/tiny.ipynb", notebook)
    assert git(repo, "status", "--porcelain") == ""


def test_jupyterlab_run_all_of_06_saved_leaves_git_status_clean(repo: Path):
    notebook = run_all_outputs(json.loads((repo / "notebooks" / "06_analyze.ipynb").read_text(encoding="utf-8")))
    jupyter_save(repo, "notebooks/06_analyze.ipynb", notebook)
    assert git(repo, "status", "--porcelain") == ""
    (repo / "elsewhere").mkdir()
    jupyter_save(repo, "elsewhere/mine.ipynb", notebook)  # not a repository notebook: saved as it is
    assert '"output_type": "display_data"' in (repo / "elsewhere" / "mine.ipynb").read_text(encoding="utf-8")


def test_the_git_filter_keeps_outputs_out_of_what_git_stores(repo: Path):
    """An editor without the hook writes the outputs into the file: git diff stays empty, git add stages nothing."""
    path = repo / "notebooks" / "06_analyze.ipynb"
    notebook = run_all_outputs(json.loads(path.read_text(encoding="utf-8")))
    path.write_text(json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    assert git(repo, "diff") == ""
    git(repo, "add", "-A")
    assert git(repo, "diff", "--cached") == "" and git(repo, "status", "--porcelain") == ""
    stored = json.loads(git(repo, "show", "HEAD:notebooks/06_analyze.ipynb"))
    assert all(not c.get("outputs") for c in stored["cells"])
