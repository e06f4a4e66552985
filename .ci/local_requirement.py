"""Print the local extra's llama-cpp-python requirement from pyproject.toml (one definition, for make local-wheel)."""

import re
from pathlib import Path

text = (Path(__file__).resolve().parent.parent / "pyproject.toml").read_text(encoding="utf-8")
try:
    import tomllib
except ImportError:  # Python 3.10: the requirement is one quoted string of the local extra
    print(re.search(r'"(llama-cpp-python[^"]*)"', text).group(1))
else:
    extra = tomllib.loads(text)["project"]["optional-dependencies"]["local"]
    print(next(r for r in extra if r.startswith("llama-cpp-python")))
