"""The shipped benchmark has the paper's exact composition (its Fig 2), spread evenly over styles."""

import pandas as pd
import pytest

from gama_utils.bench.deduplication import deduplicate, deduplicate_across_bank
from gama_utils.bench.templates import load_templates
from gama_utils.core import grid
from gama_utils.paths import BENCHMARK


@pytest.mark.paper_shape
def test_shipped_benchmark_has_the_papers_exact_composition():
    pairs = pd.read_json(BENCHMARK / "pairs.jsonl", lines=True)
    assert len(pairs) == 1298 and pairs.pair_id.is_unique and pairs.template_id.is_unique
    counts = pairs.groupby(["dimension", "severity"]).size().to_dict()
    expected = {(d, s): n for d, by_severity in grid.COMPOSITION.items() for s, n in by_severity.items()}
    assert counts == expected
    assert pairs.groupby("track").size().to_dict() == {"intimate": 305, "public": 993}


def test_styles_are_spread_as_evenly_as_the_counts_allow():
    pairs = pd.read_json(BENCHMARK / "pairs.jsonl", lines=True)
    per_style = pairs.groupby(["dimension", "severity", "style"]).size().unstack("style")
    assert per_style.notna().all().all(), "every cell has every style"
    assert ((per_style.max(axis=1) - per_style.min(axis=1)) <= 1).all()


def test_near_duplicate_removal_at_the_compile_threshold_keeps_every_template():
    bank = load_templates()
    cells = bank.dimension + "/" + bank.severity + "/" + bank["style"]
    kept, removals = deduplicate(bank.assign(usable=True, cell_id=cells))
    assert len(removals) == 0 and len(kept) == len(bank)


def test_cross_bank_premise_removal_at_the_build_threshold_keeps_every_template():
    bank = load_templates()
    cells = bank.dimension + "/" + bank.severity + "/" + bank["style"]
    kept, removals = deduplicate_across_bank(bank.assign(usable=True, cell_id=cells))
    assert len(removals) == 0 and len(kept) == len(bank)
