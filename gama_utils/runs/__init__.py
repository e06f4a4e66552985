"""Running the pipeline: notebooks headless with papermill (orchestrate), profiles and `--set`, the
notebooks' parameter schemas and their generated cells, and what a run costs before and while it
sends (costs: the estimate for 04 and 05, the dollar cap); rebuild runs 01-03 and publishes the benchmark;
notebook_saves keeps JupyterLab from saving outputs into the repository's notebooks (git status stays clean).
"""

__all__ = [
    "orchestrate",
    "profiles",
    "parameters",
    "parameter_cells",
    "costs",
    "rebuild",
    "notebook_saves",
]
