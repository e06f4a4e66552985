"""JupyterLab saves the repository's notebooks without outputs, so stepping through one leaves `git status` clean.

`strip_on_save` is a Jupyter server pre-save hook (`make venv` registers it in the environment's
etc/jupyter/jupyter_server_config.d/gama-bench.json): a notebook saved under the repository's notebooks/
folder is written as nbstripout strips it for git (`NBSTRIPOUT_OPTIONS`, the Makefile's filter options),
so the file on disk stays byte for byte what git stores (in any checkout: the main one, a worktree, a
copy). Outputs stay in the open JupyterLab tab; tables and figures are in the run folder and its report.
Notebooks elsewhere (executed copies in a run folder, one's own) are saved as they are. The nbstripout
git filter (`make git-filter`) covers other editors; alone it would leave a run notebook listed as
modified by `git status` (git sees the file's size change before it runs the filter).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import nbformat
from nbstripout import strip_output

from gama_utils import paths

__all__ = ["EXTRA_KEYS", "NBSTRIPOUT_OPTIONS", "strip_on_save", "strips"]

log = logging.getLogger(__name__)

# nbstripout's command line adds these keys to every strip; its strip_output function does not.
NBSTRIPOUT_DEFAULT_KEYS = ["metadata.signature", "metadata.widgets", "cell.metadata.collapsed",
                           "cell.metadata.ExecuteTime", "cell.metadata.execution", "cell.metadata.heading_collapsed",
                           "cell.metadata.hidden", "cell.metadata.scrolled"]
EXTRA_KEYS = ["metadata.language_info"]  # NBSTRIPOUT in the Makefile passes the same (tests/test_notebook_git.py)
NBSTRIPOUT_OPTIONS = {"keep_output": False, "keep_count": False, "keep_id": True,
                      "extra_keys": NBSTRIPOUT_DEFAULT_KEYS + EXTRA_KEYS}


def strips(path: Path) -> bool:
    """Whether a notebook saved at `path` is one of a checkout's own: notebooks/*.ipynb beside gama_utils/."""
    folder = path.resolve().parent
    return path.suffix == ".ipynb" and folder.name == paths.NOTEBOOKS.name and (folder.parent / "gama_utils").is_dir()


def strip_on_save(model: dict[str, Any], path: str, contents_manager: Any, **_: Any) -> None:
    """Jupyter's pre_save_hook: strip the outputs of a repository notebook in `model` before it is written."""
    if model.get("type") != "notebook" or not isinstance(model.get("content"), dict):
        return
    if not strips(Path(getattr(contents_manager, "root_dir", ".")) / path):
        return
    stripped = strip_output(nbformat.from_dict(model["content"]), **NBSTRIPOUT_OPTIONS)
    model["content"] = stripped
    log.debug("saved %s without outputs", path)
