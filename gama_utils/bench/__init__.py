"""Notebooks 01-03 (paper §3.2): the benchmark, from the condition grid to the published mirrored pairs.

templates (the authored bank) → lint, wording, gender_cues (checks) → generate → review → compilation
(mirror) → deduplication (embeddings) → screening → composition, bank_metadata, second_reader (a person's blind
reading of the bank against it), bank_audit, datasheet,
benchmark_figures → publication (with dataset_card: the Hugging Face card's front matter, licence and configs).
"""

__all__ = [
    "templates",
    "lint",
    "wording",
    "gender_cues",
    "mirror",
    "bank_metadata",
    "second_reader",
    "bank_audit",
    "generate",
    "review",
    "compilation",
    "deduplication",
    "embeddings",
    "screening",
    "composition",
    "datasheet",
    "dataset_card",
    "benchmark_figures",
    "publication",
]
