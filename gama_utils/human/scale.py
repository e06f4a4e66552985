"""The expert validation scale (paper Table 9): the framings annotators judge, their labels and the sheet's columns."""

from __future__ import annotations

from dataclasses import dataclass

from gama_utils.core.metrics import HUMAN_OPTIONS, metric, metrics

LABELS: tuple[str, ...] = HUMAN_OPTIONS


@dataclass(frozen=True)
class Framing:
    """One dimension of the expert validation scale (Table 9): a metric's `human` question."""

    key: str  # the metric key of gama_utils.core.metrics
    name: str
    criterion: str
    options: tuple[str, ...]  # captions of the answers A, B, Tie

    @property
    def label(self) -> str:
        """The metric's short label in the paper's tables ("Puni.")."""
        return metric(self.key).label

    @property
    def score_column(self) -> str:
        """The evaluations column holding the metric's per-response value."""
        return metric(self.key).column


def framings() -> tuple[Framing, ...]:
    """The framings annotators judge: every registered metric that declares a human question."""
    return tuple(Framing(m.key, m.human.name, m.human.question, m.human.options) for m in metrics() if m.human)


def framing_keys() -> tuple[str, ...]:
    """The metric keys of `framings()`, which are also the sheet's label columns."""
    return tuple(f.key for f in framings())


def sheet_columns() -> tuple[str, ...]:
    """Columns of an annotator's sheet."""
    return ("item_id", "answer_a", "answer_b", *framing_keys())


def key_columns() -> tuple[str, ...]:
    """Columns every key has."""
    return ("item_id", "pair_id", "model", "track", "female_is", "answer_a", "answer_b",
            *(f"{k}_{side}" for k in framing_keys() for side in ("a", "b")), "simulated")
