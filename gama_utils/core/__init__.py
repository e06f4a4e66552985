"""The core every stage shares: the framing metrics and their rubric, the condition grid, credentials kept out of files,
the frames' column contracts, prompt files, escaping for each output format, and run-folder I/O.
"""

__all__ = [
    "metrics",
    "rubric",
    "grid",
    "schema",
    "prompts",
    "escaping",
    "run_folders",
    "credentials",
]
