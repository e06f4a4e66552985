"""What a run shows: the paper's tables and their files, figures, the notebooks' outputs, the run report.

tables (the paper's layouts), table_files (CSV, Markdown, LaTeX), plots, artifacts (each output written,
shown and registered, and the index of them), run_report (the run read back, as report.md and report.html).
"""

__all__ = [
    "tables",
    "table_files",
    "plots",
    "artifacts",
    "run_report",
]
