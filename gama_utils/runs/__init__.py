"""Running the pipeline: the `gama` command (cli), notebooks headless with papermill (orchestrate), profiles and
`--set`, the notebooks' parameter schemas and their generated cells, what a run needs before it starts (readiness:
its models, their variables, every problem at once), and what a run costs before and while it sends (costs: the
estimate for 04 and 05, the dollar cap); rebuild runs 01-03 and publishes the benchmark; inspect_task is GAMA-Bench
as an Inspect AI task (the inspect extra) and inspect_import turns its eval log into a run's responses and evaluations;
notebook_saves keeps JupyterLab from saving outputs into the repository's notebooks (git status stays clean).
"""

__all__ = [
    "cli",
    "orchestrate",
    "profiles",
    "parameters",
    "parameter_cells",
    "readiness",
    "costs",
    "rebuild",
    "inspect_task",
    "inspect_import",
    "notebook_saves",
]
