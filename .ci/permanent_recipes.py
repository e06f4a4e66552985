"""Apply CONTRIBUTING's metric and dimension recipes in their permanent form to a copy of the repository.

    python .ci/permanent_recipes.py COPY        # COPY: a fresh clone or `git worktree` of this repository

The metric goes into gama_utils/core/metrics.py (declared and registered after the paper's six), the
dimension into data/grid.yaml with nine templates (tests/data/toy_dimension/) in data/templates/, both as
the recipes' blocks say; then the benchmark is rebuilt and published in the copy, as the dimension recipe
ends.
The suite run in COPY (`make test-recipes` does both) then shows which tests hard-code the paper's shape
instead of following the registries: only tests marked `paper_shape` may fail there, and they are skipped.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path


def recipe_block(copy: Path, name: str, dedent: bool = True) -> str:
    """The body of CONTRIBUTING.md's block marked `contributing-test: name` (dedented unless told not to)."""
    text = (copy / "CONTRIBUTING.md").read_text(encoding="utf-8")
    found = re.search(rf"<!-- contributing-test: {name} -->\n([ \t]*)```\w+\n(.*?)\n\1```", text, re.S)
    if not found:
        raise SystemExit(f"CONTRIBUTING.md has no block 'contributing-test: {name}'")
    return textwrap.dedent(found.group(2)) if dedent else found.group(2)


def add_metric(copy: Path) -> None:
    """The metric recipe's declaration, written into core/metrics.py and registered after the paper's six."""
    path = copy / "gama_utils" / "core" / "metrics.py"
    source = path.read_text(encoding="utf-8")
    block = recipe_block(copy, "metric")
    declaration = block[block.index("APOLOGY = "):].replace("APOLOGY = metrics.register(Metric(", "APOLOGY = Metric(")
    declaration = declaration.rstrip().removesuffix(")")
    anchor = "for _metric in PAPER_METRICS:\n    register(_metric)\n"
    if anchor not in source:
        raise SystemExit(f"{path}: the registration loop the recipe names is not there")
    path.write_text(source.replace(anchor, f"{anchor}\n{declaration}\nregister(APOLOGY)\n"), encoding="utf-8")


def add_dimension(copy: Path) -> None:
    """The dimension recipe: its entry under `dimensions:` in data/grid.yaml, its nine templates in data/templates/
    (tests/data/toy_dimension/, one per severity × style), then the benchmark rebuilt and published."""
    grid = copy / "data" / "grid.yaml"
    grid.write_text(grid.read_text(encoding="utf-8").rstrip("\n") + "\n" + recipe_block(copy, "dimension", dedent=False)
                    + "\n", encoding="utf-8")
    for bank in (copy / "tests" / "data" / "toy_dimension").glob("*.jsonl"):
        shutil.copyfile(bank, copy / "data" / "templates" / bank.name)
    env = {**os.environ, "PYTHONPATH": str(copy)}
    subprocess.run([sys.executable, "-m", "gama_utils.runs.rebuild", "--run", str(copy / "outputs" / "rebuild")],
                   cwd=copy, env=env, check=True)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__)
        return 2
    copy = Path(argv[0]).resolve()
    add_metric(copy)
    add_dimension(copy)
    print(f"{copy}: metric 'apology' in gama_utils/core/metrics.py, dimension 'lost_property' in data/grid.yaml "
          "and data/templates/, data/gama_bench rebuilt")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
