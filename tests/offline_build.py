"""01 → 03 in this process, offline: a template bank built into a benchmark folder the way the notebooks do."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from test_generate import GENERATORS

from gama_utils.bench import compilation, datasheet, deduplication, generate, publication, review, screening


def build_offline(bank: Path, out: Path) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Path]]:
    """Build `bank` into `out` with the simulated generators and reviewers; (pairs, dropped templates, files)."""
    candidates, problems = generate.generate_candidates(GENERATORS, None, bank, cache=False, progress=False)
    reviews = review.review_candidates(candidates, GENERATORS, bank, cache=False, progress=False)
    posts = compilation.compile_posts(candidates, reviews, templates=bank, cache=False, progress=False)
    kept, removals = deduplication.deduplicate(posts)
    kept, cross = deduplication.deduplicate_across_bank(kept)
    screened, exclusions = screening.apply_screening(kept, None)
    pairs = compilation.mirror_pairs(screened)
    drops = publication.dropped_templates(candidates, problems, reviews, posts, removals, cross, exclusions)
    summary = datasheet.construction_summary(candidates, reviews, posts, removals, exclusions,
                                             embedding_backend="tfidf", threshold=None, screening_sheet=None,
                                             cross_bank_removals=cross, drops=drops)
    files = publication.write_benchmark(pairs, out, summary, datasheet.measures(pairs, screened))
    return pairs, drops, files
