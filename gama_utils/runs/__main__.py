"""`python -m gama_utils.runs`: the orchestrator's command line."""

import sys

from gama_utils.runs.orchestrate import main

sys.exit(main())
