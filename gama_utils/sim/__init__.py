"""The offline simulated backend (a test double, always labelled SIMULATED): target models and judges
(targets), and the benchmark-construction stage's generator, reviewer and compiler (authoring).
"""

__all__ = [
    "targets",
    "authoring",
]
