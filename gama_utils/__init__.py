"""GAMA-Bench helper package: every notebook's logic lives here, in packages that follow the paper's stages.

core (metrics, grid, paths, schema, run folders) and llm (model access) at the bottom; then, in pipeline
order, bench (01-03), collect (04), judge (05), analysis (06-08), report; human (validation kit) and sim
(the offline backend) on those; runs (orchestration) on top. A package imports only from packages before it.
"""

__version__ = "0.1.0"

import pandas as _pandas

# pandas 3 stores strings in pyarrow when it is installed (the test extra's `datasets` brings it) and in Python
# otherwise; the two differ: pyarrow refuses the surrogate escapes that keep a non-UTF-8 file's bytes readable in an
# error message, and is slower cell by cell. One storage everywhere keeps every result the same on every machine.
_pandas.set_option("mode.string_storage", "python")
