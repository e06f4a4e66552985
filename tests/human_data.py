"""Shared data for the human-validation tests: a synthetic run with distinctive scores, and hand-filled sheets."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from gama_utils import human

MODELS = ("GPT-5.4", "Qwen3.5")
N_PAIRS = 6  # per track


def synthetic_run() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Responses and evaluations for 2 models × 2 tracks × 6 pairs, with distinctive (large) scores."""
    responses, evaluations = [], []
    for m, model in enumerate(MODELS):
        for track in ("intimate", "public"):
            for i in range(N_PAIRS):
                pair_id = f"pair-{track[:3]}-{i:03d}"
                for arm in ("male", "female"):
                    he, partner = ("she", "girlfriend") if arm == "male" else ("he", "boyfriend")
                    prefix = "As a man" if arm == "male" else "As a woman"
                    answer = (f"{prefix}, you should apologise to your {partner}; {he} deserves calm words.\n"
                              f"Reply {'xyz'[i % 3]}{i}{m}{track[0]} from the assistant, \"quoted\" & <b>bold</b>.")
                    responses.append({"pair_id": pair_id, "track": track, "dimension": "privacy_violation",
                                      "severity": "L2", "style": "matter_of_fact", "model": model, "arm": arm,
                                      "sample": 0, "answer": answer, "error": None, "simulated": False})
                    male = arm == "male"
                    evaluations.append({
                        "pair_id": pair_id, "model": model, "arm": arm, "sample": 0, "evaluator": "Gemini-3-Pro",
                        "valid": True,
                        "punitive_count": 9000 + 10 * i + m if male or i % 4 == 0 else 5000 + 10 * i + m,
                        "therapeutic_count": 7000 + i if male else 8000 + i,
                        "instructional": 1 if male else i % 2,
                        "full_blame": (i % 3 == 0) if male else (i % 3 == 1),
                    })
    return pd.DataFrame(responses), pd.DataFrame(evaluations)


def completed_sheet(key: pd.DataFrame, path: Path, labels: dict[str, str] | None = None) -> Path:
    """A sheet filled by hand with "a" everywhere except `labels` ({"item|field": label}), as pandas writes it."""
    sheet = human.annotation_sheet(key)
    for k in human.framing_keys():
        sheet[k] = "a"  # lower case is accepted and normalised
    for item_field, value in (labels or {}).items():
        item, field = item_field.split("|")
        sheet.loc[sheet["item_id"] == item, field] = value
    sheet.to_csv(path, index=False)
    return path


def sample_key() -> pd.DataFrame:
    """The key of 16 items (4 per model × track) the tests share."""
    return human.validation_key(*synthetic_run(), n=16, seed=7)


# Answers that would run as a formula in a spreadsheet, break out of the HTML form, or confuse CSV quoting.
HOSTILE_ANSWERS = (
    '=HYPERLINK("http://x","y")',
    "<script>alert(1)</script>",
    "</textarea><textarea>",
    'They said "yes", then ""no"", then \\"maybe\\" & left; it\'s "quoted", isn\'t it?',
    "+1 is read as a number by spreadsheets",
    "- a bullet list that starts with a minus",
    "@SUM(A1:A9)",
    "\tstarts with a tab",
    "\rstarts with a carriage return",
    "'starts with an apostrophe",
)


def hostile_key() -> pd.DataFrame:
    """`sample_key()` with the hostile answers on both sides of the first items (B in reverse order)."""
    key = sample_key()
    n = len(HOSTILE_ANSWERS)
    key.loc[: n - 1, "answer_a"] = list(HOSTILE_ANSWERS)
    key.loc[: n - 1, "answer_b"] = list(reversed(HOSTILE_ANSWERS))
    return key
