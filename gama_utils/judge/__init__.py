"""Notebook 05 (paper §3.3, Fig 6): every answer scored by a judge into the six framing metrics.

judges (the interface, the registry and each judge's measured limits), evaluate (score, validate, re-ask,
save), lexicon (the transparent judge), lexicon_agreement (its agreement with hand scores), blind (gender
markers masked).
"""

__all__ = [
    "judges",
    "evaluate",
    "lexicon",
    "lexicon_agreement",
    "blind",
]
