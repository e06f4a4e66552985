"""Integrity of the hand-scored reference answers (tests/data/hand_scored), independent of the lexicon."""

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import jsonschema
import pytest

from gama_utils.core import grid
from gama_utils.core.metrics import PAPER_METRIC_KEYS, metric
from gama_utils.core.prompts import evaluator_schema
from gama_utils.paths import BENCHMARK

HAND_SCORED = Path(__file__).resolve().parent / "data" / "hand_scored" / "answers.jsonl"
STYLES = {"harsh", "firm", "mixed", "gentle", "neutral", "refusal", "sides_with_actor"}
FIELDS = {"id", "pair_id", "arm", "dimension", "track", "style_of_answer", "answer", "scores", "rationale"}


def load_records(path: Path = HAND_SCORED) -> list[dict]:
    """The hand-scored records, one JSON object per line."""
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def unclaimed_terms(answer: str, terms: list[str]) -> list[str]:
    """Terms that cannot each be given their own whole-word occurrence in the answer (longest claimed first)."""
    taken: list[tuple[int, int]] = []
    missing = []
    for term in sorted(terms, key=len, reverse=True):
        starts = [m.start() for m in re.finditer(r"(?<!\w)" + re.escape(term) + r"(?!\w)", answer)]
        free = [s for s in starts if all(s + len(term) <= a or s >= b for a, b in taken)]
        if free:
            taken.append((free[0], free[0] + len(term)))
        else:
            missing.append(term)
    return missing


@pytest.fixture(scope="module")
def records() -> list[dict]:
    return load_records()


@pytest.fixture(scope="module")
def pairs() -> dict[str, dict]:
    with (BENCHMARK / "pairs.jsonl").open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return {row["pair_id"]: row for row in rows}


def test_enough_records_with_unique_ids_and_complete_fields(records):
    assert len(records) >= 72
    ids = [r["id"] for r in records]
    assert len(set(ids)) == len(ids)
    for r in records:
        assert set(r) == FIELDS, r["id"]
        assert re.fullmatch(r"HS-\d{3}", r["id"]), r["id"]
        assert r["arm"] in {"male", "female"}, r["id"]
        assert r["style_of_answer"] in STYLES, r["id"]
        assert r["answer"].strip() and r["rationale"].strip(), r["id"]


def test_every_record_answers_a_real_pair_with_its_dimension_and_track(records, pairs):
    for r in records:
        assert r["pair_id"] in pairs, r["id"]
        pair = pairs[r["pair_id"]]
        assert (r["dimension"], r["track"]) == (pair["dimension"], pair["track"]), r["id"]


def test_scores_follow_the_evaluator_schema(records):
    """The hand scores were made for the paper's six metrics: the schema's fields of those six, all required."""
    schema = evaluator_schema()
    paper_fields = {metric(k).field.name for k in PAPER_METRIC_KEYS}
    schema = {**schema, "required": [f for f in schema["required"] if f in paper_fields],
              "properties": {f: spec for f, spec in schema["properties"].items() if f in paper_fields}}
    for r in records:
        jsonschema.validate(r["scores"], schema)


def test_every_listed_term_has_its_own_occurrence_in_the_answer(records):
    problems = {r["id"]: missing for r in records
                if (missing := unclaimed_terms(r["answer"], r["scores"]["punitive_terms"]
                                               + r["scores"]["therapeutic_terms"]))}
    assert problems == {}


def test_coverage_of_tracks_dimensions_and_judgements(records, pairs):
    assert {r["track"] for r in records} == {"intimate", "public"}
    paper_dimensions = {slug for slug, d in grid.BY_SLUG.items() if d.paper_counts}  # scored for the paper's ten
    assert {r["dimension"] for r in records} == {p["dimension"] for p in pairs.values()} & paper_dimensions
    assert len({r["dimension"] for r in records}) == 10
    scores = [r["scores"] for r in records]
    assert sum(s["blame_attribution"] == "full" for s in scores) >= 10
    assert sum(not s["instructional_or_accusatory"] for s in scores) >= 10
    assert Counter(r["style_of_answer"] for r in records).keys() == STYLES


def test_term_check_rejects_over_listing_overlap_and_partial_words():
    answer = "That was wrong, and a serious breach of trust."
    assert unclaimed_terms(answer, ["wrong", "breach of trust"]) == []
    assert unclaimed_terms(answer, ["wrong", "wrong"]) == ["wrong"]
    assert unclaimed_terms(answer, ["serious breach of trust", "breach of trust"]) == ["breach of trust"]
    assert unclaimed_terms(answer, ["wron"]) == ["wron"]
    assert unclaimed_terms(answer, ["Wrong"]) == ["Wrong"]


def test_loading_the_reference_set_does_not_import_the_lexicon():
    code = ("import importlib.util, sys\n"
            f"spec = importlib.util.spec_from_file_location('hand_scored', {str(Path(__file__))!r})\n"
            "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)\n"
            "module.load_records()\n"
            "print('gama_utils.judge.lexicon' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
