"""Simulated annotators for offline runs: sheets filled from the hidden evaluator scores plus seeded noise.

Their sheets, labels and tables all say SIMULATED: they exercise the pipeline and are not human judgement.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from gama_utils import paths
from gama_utils.human.agreement import evaluator_directions
from gama_utils.human.completed_sheets import COMPLETED_SUFFIX, AnnotationError, Problem, read_sheet
from gama_utils.human.csv_cells import write_csv
from gama_utils.human.scale import LABELS, framing_keys

SIMULATED_ANNOTATORS: tuple[str, ...] = ("simulated_annotator_1", "simulated_annotator_2",
                                         "simulated_annotator_3")


def _other_label(label: str, rng: np.random.Generator) -> str:
    return str(rng.choice([other for other in LABELS if other != label]))


def simulated_labels(sheet: pd.DataFrame, key: pd.DataFrame, annotator: int, item_noise: float = 0.15,
                     rater_noise: float = 0.15, seed: int = 0) -> pd.DataFrame:
    """A sheet filled by simulated annotator number `annotator` (SIMULATED, not human judgement).

    Each item × framing has a latent label: the evaluator direction, replaced with probability
    `item_noise` by another label (shared by all simulated annotators); each annotator copies the
    latent label and replaces it with probability `rater_noise`.
    """
    directions = evaluator_directions(key).set_index(["item_id", "framing"])["evaluator"]
    item_rng, rater_rng = np.random.default_rng([seed, 2]), np.random.default_rng([seed, 3, annotator])
    filled = sheet.copy()
    for k in framing_keys():
        column = []
        for item in sorted(key["item_id"]):  # fixed draw order, whatever the sheet's row order
            latent = directions[(item, k)]
            if item_rng.random() < item_noise:
                latent = _other_label(latent, item_rng)
            column.append(_other_label(latent, rater_rng) if rater_rng.random() < rater_noise else latent)
        filled[k] = filled["item_id"].map(dict(zip(sorted(key["item_id"]), column)))
    filled["simulated"] = True
    return filled


def simulate_annotation(sheet_files: Iterable[str | Path], key: pd.DataFrame, item_noise: float = 0.15,
                        rater_noise: float = 0.15, seed: int = 0) -> list[Path]:
    """Fill exported CSV sheets with simulated labels; write <name>[_simulated]_completed.csv beside them."""
    written = []
    for number, file in enumerate(sheet_files, start=1):
        file = paths.resolve(file)
        sheet = read_sheet(file)
        unknown = [Problem(file.name, "unknown item_id (not in the key)", row, item, "item_id")
                   for row, item in enumerate(sheet["item_id"], start=2) if item not in set(key["item_id"])]
        if unknown:
            raise AnnotationError(unknown)
        filled = simulated_labels(sheet, key, number, item_noise, rater_noise, seed)
        stem = file.stem if "simulated" in file.stem else f"{file.stem}_simulated"
        out = file.with_name(f"{stem}{COMPLETED_SUFFIX}.csv")
        write_csv(filled, out, encoding="utf-8-sig")
        written.append(out)
    return written
