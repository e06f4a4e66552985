"""Near-duplicate removal (paper §3.2): within each condition cell, then across the whole bank.

Within a cell, posts are compared by embedding cosine similarity (TF-IDF by default, threshold
0.60) and removed greedily in template_id order. Across the bank, the "premise" embedding (what
a story is about) links every pair of posts at or above embeddings.CROSS_BANK_THRESHOLD, from any
two cells; in each linked group the posts are kept in template_id order unless they are linked to
one already kept, so the same premise retold under two dimensions survives once.

removals (both steps): cell_id, removed_id, duplicate_of (the kept post it repeats), similarity
"""

from __future__ import annotations

import pandas as pd

from gama_utils.bench import embeddings

REMOVAL_COLUMNS = ["cell_id", "removed_id", "duplicate_of", "similarity"]


def deduplicate(posts: pd.DataFrame, backend: str | embeddings.Backend = embeddings.DEFAULT_BACKEND,
                threshold: float | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Drop near-duplicates within each condition cell (greedy in template_id order); returns (kept, removals).

    threshold None takes the backend's default (TF-IDF: cosine 0.60).
    """
    embedder = embeddings.backend(backend)
    threshold = embeddings.default_threshold(embedder) if threshold is None else float(threshold)
    usable = posts[posts["usable"]].sort_values("template_id", kind="stable")
    found = []
    for cell_id, group in usable.groupby("cell_id", sort=True):
        cell = embeddings.near_duplicates(list(group["template_id"]), list(group["text"]), threshold, embedder)
        found.append(cell.assign(cell_id=cell_id))
    removals = pd.concat(found, ignore_index=True) if found else pd.DataFrame()
    removals = removals.reindex(columns=REMOVAL_COLUMNS)
    kept = usable[~usable["template_id"].isin(removals["removed_id"])].reset_index(drop=True)
    return kept, removals


def deduplicate_across_bank(posts: pd.DataFrame, threshold: float = embeddings.CROSS_BANK_THRESHOLD,
                            backend: str | embeddings.Backend = "premise") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Drop posts whose premise repeats a kept post of any cell (cosine ≥ threshold); returns (kept, removals)."""
    ordered = posts.sort_values("template_id", kind="stable").reset_index(drop=True)
    ids, texts = list(ordered["template_id"]), list(ordered["text"])
    groups = embeddings.near_duplicate_groups(ids, texts, threshold, backend)
    rows = []
    if len(groups):
        linked = embeddings.similar_pairs(ids, texts, threshold, backend)
        links: dict[str, dict[str, float]] = {}
        for a, b, similarity in linked.itertuples(index=False):
            links.setdefault(a, {})[b] = links.setdefault(b, {})[a] = float(similarity)
        cells = dict(zip(ordered["template_id"], ordered["cell_id"]))
        for _, members in groups.groupby("group", sort=True):
            kept_ids: list[str] = []
            for template_id in sorted(members["template_id"]):
                near = {k: links[template_id][k] for k in kept_ids if k in links[template_id]}
                if near:
                    closest = max(sorted(near), key=lambda k: near[k])
                    rows.append({"cell_id": cells[template_id], "removed_id": template_id, "duplicate_of": closest,
                                 "similarity": near[closest]})
                else:
                    kept_ids.append(template_id)
    removals = pd.DataFrame(rows, columns=REMOVAL_COLUMNS).sort_values("removed_id", kind="stable")
    kept = ordered[~ordered["template_id"].isin(removals["removed_id"])].reset_index(drop=True)
    return kept, removals.reset_index(drop=True)


def premise_similarity(posts: pd.DataFrame, backend: str | embeddings.Backend = "premise") -> dict:
    """The distribution of cross-bank premise cosine over every pair of posts (embeddings.similarity_summary).

    Fewer than two posts give an empty distribution (n_pairs 0, max None).
    """
    ids, texts = list(posts["template_id"]), list(posts["text"])
    if len(ids) < 2:
        return {"backend": embeddings.backend(backend).name, "n_texts": len(ids), "n_pairs": 0, "percentiles": {},
                "max": None, "pairs_at_or_above": {}, "top_pairs": []}
    return embeddings.similarity_summary(ids, texts, backend)
