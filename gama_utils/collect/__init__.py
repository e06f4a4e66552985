"""Notebook 04 (paper §3.3, §4.1): answers from the target models, or answers brought from a file.

respond (select pairs, collect, save, imported answers), records (reading CSV/JSONL people bring),
local_server (a real LLM on this machine). What a run costs is gama_utils.runs.costs (it prices 04 and 05).
"""

__all__ = [
    "respond",
    "records",
    "local_server",
]
