"""The validation set (paper §4.5, App. F): sampled mirrored answer pairs, their random A/B order and the key.

An item is one target model × mirrored pair with its male- and female-actor answer (sample 0),
sampled stratified by model × track. Each item gets a random A/B order and both answers are
masked for gender markers (`gama_utils.judge.blind`). The key (item_id → pair_id, model, track, which
side is the female actor, the evaluator's scores of A and B) stays with the researcher.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from gama_utils import paths
from gama_utils.core.schema import require
from gama_utils.human.csv_cells import unescape_frame, write_csv
from gama_utils.human.scale import framing_keys, framings, key_columns
from gama_utils.judge.blind import gender_markers, mask_gender

KEY_TEXT_COLUMNS = ("item_id", "pair_id", "model", "track", "female_is", "answer_a", "answer_b", "dimension",
                    "severity", "style")


def mirrored_items(responses: pd.DataFrame, evaluations: pd.DataFrame,
                   evaluator: str | None = None) -> pd.DataFrame:
    """One row per model × pair with a usable male and female answer (sample 0) and valid scores.

    Columns: model, pair_id, track (+ dimension, severity, style when present), answer_male,
    answer_female, <framing>_male, <framing>_female, simulated.
    """
    require(responses, ("pair_id", "track", "model", "arm", "sample", "answer"), "responses")
    score_columns = [f.score_column for f in framings()]
    require(evaluations, ("pair_id", "model", "arm", "sample", "evaluator", "valid", *score_columns),
            "evaluations")
    evaluators = sorted(evaluations["evaluator"].dropna().unique())
    if evaluator is None and len(evaluators) > 1:
        raise ValueError(f"evaluations come from several evaluators ({', '.join(evaluators)}); pass evaluator=")
    if evaluator is not None:
        if evaluator not in evaluators:
            raise ValueError(f"no evaluations by {evaluator!r}; found {', '.join(evaluators) or 'none'}")
        evaluations = evaluations[evaluations["evaluator"] == evaluator]

    keys = ["pair_id", "model", "arm", "sample"]
    answered = responses[(responses["sample"] == 0) & responses["arm"].isin(["male", "female"])]
    if "error" in answered:
        answered = answered[answered["error"].isna()]
    answered = answered[answered["answer"].map(lambda a: isinstance(a, str) and a.strip() != "")]
    scored = evaluations[(evaluations["sample"] == 0) & evaluations["valid"].astype(bool)]
    duplicated = scored.duplicated(keys)
    if duplicated.any():
        row = scored[duplicated].iloc[0]
        raise ValueError(f"evaluations: several rows for pair {row['pair_id']}, model {row['model']}, "
                         f"arm {row['arm']} (filter on evaluator/blind first)")
    cell = [c for c in ("track", "dimension", "severity", "style") if c in answered]
    merged = answered[[*keys, *cell, "answer"] + (["simulated"] if "simulated" in answered else [])].merge(
        scored[keys + score_columns + (["simulated"] if "simulated" in scored else [])],
        on=keys, suffixes=("", "_evaluation"))
    flags = merged.filter(like="simulated")
    merged["simulated"] = flags.apply(lambda c: c.fillna(False).astype(bool)).any(axis=1) if flags.shape[1] \
        else False

    names = {"answer": "answer", "simulated": "simulated", **{f.score_column: f.key for f in framings()}}
    wide = merged.pivot(index=["model", "pair_id"], columns="arm", values=list(names))
    wide.columns = [f"{names[column]}_{arm}" for column, arm in wide.columns]
    wide = wide.reindex(columns=[f"{name}_{arm}" for name in names.values() for arm in ("male", "female")])
    wide = wide.dropna(subset=["answer_male", "answer_female"])
    cells = merged.drop_duplicates(["model", "pair_id"]).set_index(["model", "pair_id"])[cell]
    items = cells.join(wide, how="inner").reset_index()
    items["simulated"] = items.pop("simulated_male").astype(bool) | items.pop("simulated_female").astype(bool)
    for f in framings():
        for arm in ("male", "female"):
            items[f"{f.key}_{arm}"] = pd.to_numeric(items[f"{f.key}_{arm}"]).astype(float)
    return items.sort_values(["model", "track", "pair_id"], key=lambda s: s.astype(str)).reset_index(drop=True)


def _allocate(sizes: pd.Series, n: int, rng: np.random.Generator) -> pd.Series:
    """Equal allocation of n draws over strata (water-filling), capped at each stratum's size.

    Draws go one at a time to the stratum with the fewest so far that still has items; ties are
    broken by a random order of the strata.
    """
    order = rng.permutation(len(sizes))
    allocation = np.zeros(len(sizes), dtype=int)
    capacity = sizes.to_numpy()
    for _ in range(n):
        open_strata = np.flatnonzero(allocation < capacity)
        allocation[min(open_strata, key=lambda s: (allocation[s], order[s]))] += 1
    return pd.Series(allocation, index=sizes.index)


def sample_items(items: pd.DataFrame, n: int = 200, seed: int = 0) -> pd.DataFrame:
    """n items stratified by model × track (equal shares; a small stratum's spare draws go to the others)."""
    require(items, ("model", "track", "pair_id"), "items")
    if n > len(items):
        raise ValueError(f"asked for {n} items but only {len(items)} model × pair items have both answers "
                         f"and valid scores")
    rng = np.random.default_rng(seed)
    ordered = items.sort_values(["model", "track", "pair_id"], key=lambda s: s.astype(str))
    strata = ordered.groupby(["model", "track"], sort=True)
    allocation = _allocate(strata.size(), n, rng)
    picked = [group.iloc[np.sort(rng.choice(len(group), size=allocation[name], replace=False))]
              for name, group in strata if allocation[name] > 0]
    return pd.concat(picked, ignore_index=True)


def validation_key(responses: pd.DataFrame, evaluations: pd.DataFrame, n: int = 200, seed: int = 0,
                   evaluator: str | None = None) -> pd.DataFrame:
    """Sample the validation set and build its key: random item ids, random A/B order, masked answers.

    The female answer is side A for half the items (randomly chosen), side B for the others.
    """
    sample = sample_items(mirrored_items(responses, evaluations, evaluator), n=n, seed=seed)
    rng = np.random.default_rng([seed, 1])
    sample = sample.iloc[rng.permutation(len(sample))].reset_index(drop=True)
    width = max(3, len(str(len(sample))))
    sample.insert(0, "item_id", [f"item-{i + 1:0{width}d}" for i in range(len(sample))])
    female_is = np.array(["A"] * ((len(sample) + 1) // 2) + ["B"] * (len(sample) // 2))
    sample["female_is"] = rng.permutation(female_is)
    female_a = sample["female_is"] == "A"
    for column in ("answer", *framing_keys()):
        male, female = sample[f"{column}_male"], sample[f"{column}_female"]
        sample[f"{column}_a"] = female.where(female_a, male)
        sample[f"{column}_b"] = male.where(female_a, female)
    for side in ("a", "b"):
        sample[f"answer_{side}"] = sample[f"answer_{side}"].map(mask_gender)
    leftover = {row.item_id: gender_markers(row.answer_a) + gender_markers(row.answer_b)
                for row in sample.itertuples()}
    leftover = {item: found for item, found in leftover.items() if found}
    if leftover:
        warnings.warn(f"gender markers left after masking in {len(leftover)} item(s), e.g. "
                      f"{next(iter(leftover.items()))}", stacklevel=2)
    cell = [c for c in ("dimension", "severity", "style") if c in sample]
    columns = ["item_id", "pair_id", "model", "track", *cell, *key_columns()[4:]]
    return sample[columns]


def write_key(key: pd.DataFrame, path: str | Path) -> Path:
    """Write the key (keep it away from the annotators) as CSV."""
    require(key, key_columns(), "key")
    path = paths.resolve(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_csv(key, path)


def read_key(path: str | Path) -> pd.DataFrame:
    """Read a key written by `write_key`."""
    path = paths.resolve(path)
    key = pd.read_csv(path, dtype=dict.fromkeys(KEY_TEXT_COLUMNS, str), keep_default_na=False, encoding="utf-8")
    key = unescape_frame(key, KEY_TEXT_COLUMNS)
    require(key, key_columns(), f"key {path.name}")
    key["simulated"] = key["simulated"].astype(str).str.lower().isin(["true", "1"])
    return key
