"""Variants of one model family compared along scale, post-training and reasoning mode (paper §4.3, Fig 9).

A variant's attributes come from its registry entry (or inline spec): family, size_b (billions of
parameters), post_training ("base" or "instruct"), thinking (on/off) and release. The comparisons
follow from them, so any family works, not only the paper's Qwen3:

- Scale: variants of one family, release, post-training and thinking setting, ordered by size.
- Post-training: base → instruct at one size (the instruct variant with thinking off, same release
  when there is one).
- Reasoning mode: thinking off → on at one size, same post-training (same release when there is one).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd

from gama_utils import llm

VARIANT_COLUMNS = ("model", "family", "size_b", "post_training", "thinking", "release")


@dataclass(frozen=True)
class Comparison:
    """One panel of Fig 9: the models compared, in order, along one axis ("Scale", "Post-training", ...)."""

    axis: str
    models: tuple[str, ...]
    label: str = ""

    @property
    def title(self) -> str:
        """The panel title: the axis, with a qualifier when the axis has several panels."""
        return f"{self.axis} ({self.label})" if self.label else self.axis


def variant_table(models: Iterable[str | dict | llm.ModelSpec]) -> pd.DataFrame:
    """One row per model with its variant attributes (columns VARIANT_COLUMNS; None where not given)."""
    rows = []
    for model in models:
        spec = llm.resolve_model(model)
        rows.append({"model": spec.alias, "family": spec.family or spec.paper_name or spec.alias,
                     "size_b": spec.size_b, "post_training": spec.post_training, "thinking": spec.thinking,
                     "release": spec.release})
    return pd.DataFrame(rows, columns=list(VARIANT_COLUMNS))


def _known(value: object) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _records(variants: pd.DataFrame) -> list[dict]:
    return [{k: (v if _known(v) else None) for k, v in row.items()} for row in variants.to_dict("records")]


def _pick(candidates: list[dict], release: object) -> dict | None:
    """The first candidate of the same release, else the first one."""
    same = [c for c in candidates if c["release"] == release]
    return (same or candidates or [None])[0]


def comparisons(variants: pd.DataFrame) -> list[Comparison]:
    """The scale, post-training and reasoning comparisons the variants allow (see the module docstring)."""
    rows = _records(variants)
    found: list[Comparison] = []
    scale: dict[tuple, list[dict]] = {}
    for row in rows:
        if row["size_b"] is not None:
            scale.setdefault((row["family"], row["release"], row["post_training"], row["thinking"]), []).append(row)
    qualifying = {key: group for key, group in scale.items() if len({r["size_b"] for r in group}) >= 2}
    for key, group in qualifying.items():
        ordered = sorted(group, key=lambda r: r["size_b"])
        label = _describe(key)
        found.append(Comparison("Scale", tuple(r["model"] for r in ordered), label))
    by_size: dict[tuple, list[dict]] = {}
    for row in rows:
        if row["size_b"] is not None:
            by_size.setdefault((row["family"], row["size_b"]), []).append(row)
    for (family, size), group in by_size.items():
        label = f"{family} {_size(size)}"
        for base in [r for r in group if r["post_training"] == "base"]:
            instruct = _pick([r for r in group if r["post_training"] == "instruct" and r["thinking"] is not True],
                             base["release"])
            if instruct is not None:
                found.append(Comparison("Post-training", (base["model"], instruct["model"]), label))
        for off in [r for r in group if r["post_training"] != "base" and r["thinking"] is False]:
            on = _pick([r for r in group if r["post_training"] == off["post_training"] and r["thinking"] is True],
                       off["release"])
            if on is not None:
                found.append(Comparison("Reasoning mode", (off["model"], on["model"]), label))
    order = {"Scale": 0, "Post-training": 1, "Reasoning mode": 2}
    panels = {axis: sum(c.axis == axis for c in found) for axis in order}
    found = [c if panels[c.axis] > 1 else Comparison(c.axis, c.models) for c in found]
    return sorted(found, key=lambda c: order[c.axis])


def _size(size: float) -> str:
    return f"{size:g}B"


def _describe(key: tuple) -> str:
    family, release, post_training, thinking = key
    parts = [str(p) for p in (family, release, post_training) if p is not None]
    if thinking is not None:
        parts.append("thinking on" if thinking else "thinking off")
    return ", ".join(parts)


def short_name(model: str, models: Iterable[str]) -> str:
    """A model's name without the prefix all compared models share (e.g. "Qwen3-" or "sim/Qwen3-")."""
    names = list(models)
    prefix = _common_prefix(names)
    rest = model[len(prefix):] if len(names) > 1 else model
    return rest or model


def _common_prefix(names: list[str]) -> str:
    if not names:
        return ""
    prefix = names[0]
    for name in names[1:]:
        while not name.startswith(prefix):
            prefix = prefix[:-1]
    cut = max(prefix.rfind("-"), prefix.rfind("/"))
    return prefix[:cut + 1] if cut >= 0 else ""
