"""The core every stage shares: the framing metrics and their rubric, the condition grid, credentials kept out of files,
the frames' column contracts, prompt files, escaping for each output format, word lists as trie patterns, run-folder
I/O, and the memo of pure text readings shared across kernels and runs.
"""

__all__ = [
    "metrics",
    "rubric",
    "grid",
    "schema",
    "prompts",
    "escaping",
    "patterns",
    "run_folders",
    "credentials",
    "memo",
]
