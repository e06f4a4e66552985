"""Print the local extra's llama-cpp-python requirement from pyproject.toml (one definition, for make local-wheel)."""

import tomllib
from pathlib import Path

extra = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())["project"]
print(next(r for r in extra["optional-dependencies"]["local"] if r.startswith("llama-cpp-python")))
