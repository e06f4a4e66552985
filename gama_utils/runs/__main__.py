"""`python -m gama_utils.runs`: the `gama` command (gama_utils.runs.cli)."""

import sys

from gama_utils.runs.cli import main

sys.exit(main())
