"""What a run shows: the paper's tables and files, figures, the notebooks' outputs, the run report, the answer browser.

tables (the paper's layouts), table_files (CSV, Markdown, LaTeX), plots, artifacts (each output written,
shown and registered, and the index of them), headline (the report's first screen from the numbers: Holm
counts, summary sentences, provenance line, example pair), run_report (the run read back, as report.md and
report.html), browser (every pair, answer and score of a run in one offline page, browser.html).
"""

__all__ = [
    "tables",
    "table_files",
    "plots",
    "artifacts",
    "headline",
    "run_report",
    "browser",
]
