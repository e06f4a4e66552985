"""The paper's models and their grouping, in the order of its tables, and its reported tables.

The tables live in data/paper/ as tidy CSV transcribed from the paper (see data/paper/README.md
for sources and conventions): rates in %, Δ = female − male as printed.
"""

from __future__ import annotations

import pandas as pd

from gama_utils.core.grid import TRACKS
from gama_utils.core.metrics import PAPER_METRIC_KEYS
from gama_utils.core.schema import require
from gama_utils.paths import PAPER

PROPRIETARY = ("GPT-5.4", "GPT-5.2", "Gemini-2.5-Pro", "Gemini-3-Pro", "Doubao-Seed-2.0-Pro")
OPEN_SOURCE = ("MiniMax-M2.7", "Qwen3", "Qwen3.5", "DeepSeek-V4-Pro", "Kimi-2.5")
MAIN_MODELS = PROPRIETARY + OPEN_SOURCE
QWEN_VARIANTS = ("Qwen3-0.6B", "Qwen3-1.7B", "Qwen3-4B", "Qwen3-4B-Base", "Qwen3-4B-Instruct-2507",
                 "Qwen3-4B-Thinking-2507", "Qwen3-8B")
EVALUATORS = ("Gemini-3-Pro", "GPT-5.4")

GAP_TABLES: dict[int, tuple[str, str]] = {  # table number -> (evaluator, track)
    2: ("Gemini-3-Pro", "intimate"), 3: ("Gemini-3-Pro", "public"),
    7: ("Gemini-3-Pro", "intimate"), 8: ("Gemini-3-Pro", "public"),
    10: ("GPT-5.4", "intimate"), 11: ("GPT-5.4", "public"),
}
MAIN_TABLES: dict[str, tuple[int, int]] = {"Gemini-3-Pro": (2, 3), "GPT-5.4": (10, 11)}
TABLES: tuple[int, ...] = (2, 3, 4, 6, 7, 8, 10, 11)
_TEXT_COLUMNS = {"delta_printed": str, "p_printed": str}


def model_group(model: str) -> str:
    """'proprietary', 'open-source' or 'qwen-variants' for a paper model name; 'other' otherwise."""
    if model in PROPRIETARY:
        return "proprietary"
    if model in OPEN_SOURCE:
        return "open-source"
    if model in QWEN_VARIANTS:
        return "qwen-variants"
    return "other"


def load_table(number: int) -> pd.DataFrame:
    """One of the paper's tables (2, 3, 4, 6, 7, 8, 10, 11) as the tidy frame stored in data/paper/."""
    if number not in TABLES:
        raise ValueError(f"the paper has no transcribed table {number!r}; available: {', '.join(map(str, TABLES))}")
    return pd.read_csv(PAPER / f"table{number}.csv", dtype=_TEXT_COLUMNS)


def main_results(evaluator: str = "Gemini-3-Pro") -> pd.DataFrame:
    """Both tracks of the main results scored by `evaluator`: Tables 2+3 (Gemini-3-Pro) or 10+11 (GPT-5.4)."""
    if evaluator not in MAIN_TABLES:
        raise ValueError(f"the paper reports main results only for evaluators {', '.join(MAIN_TABLES)}; "
                         f"got {evaluator!r}")
    return pd.concat([load_table(n) for n in MAIN_TABLES[evaluator]], ignore_index=True)


def qwen_results() -> pd.DataFrame:
    """Both tracks of the Qwen-variant ablation (Tables 7+8, evaluator Gemini-3-Pro)."""
    return pd.concat([load_table(7), load_table(8)], ignore_index=True)


def pvalues() -> pd.DataFrame:
    """Table 6: raw paired-Wilcoxon p-values per model × track × core metric ("<.001" kept as the bound 0.001)."""
    return load_table(6)


def human_validation() -> pd.DataFrame:
    """Table 4: Fleiss' kappa and evaluator-human agreement per validated metric."""
    return load_table(4)


def track_averages(df: pd.DataFrame) -> pd.DataFrame:
    """Across-model means of male, female and Δ per track × metric (the averages quoted in §4.2).

    Columns: track, metric, male, female, delta, n_models; rows in TRACKS × PAPER_METRIC_KEYS order.
    """
    require(df, ("model", "track", "metric", "male", "female", "delta"), "track_averages input")
    duplicated = df.duplicated(["model", "track", "metric"], keep=False)
    if duplicated.any():
        first = df.loc[duplicated, ["model", "track", "metric"]].iloc[0].to_dict()
        raise ValueError(f"track_averages: more than one row for cell {first} (mixed evaluators or tables?)")
    out = (df.groupby(["track", "metric"])
             .agg(male=("male", "mean"), female=("female", "mean"), delta=("delta", "mean"),
                  n_models=("model", "nunique"))
             .reset_index())
    rank = {cell: i for i, cell in enumerate((t, m) for t in TRACKS for m in PAPER_METRIC_KEYS)}
    position = [rank.get(cell, len(rank)) for cell in zip(out["track"], out["metric"])]
    return out.iloc[sorted(range(len(out)), key=position.__getitem__)].reset_index(drop=True)


def model_aliases(backend: str = "sim", models: tuple[str, ...] = MAIN_MODELS) -> list[str]:
    """Registry aliases of the paper's models: "sim/<name>" offline, the API alias with backend "api"."""
    if backend == "sim":
        return [f"sim/{m}" for m in models]
    if backend != "api":
        raise ValueError(f"unknown backend {backend!r}; expected 'sim' or 'api'")
    from gama_utils.llm import load_registry

    # "@provider" variants first, so the paper's own entry (plain alias) overwrites them
    entries = sorted(load_registry().items(), key=lambda item: "@" not in item[0])
    by_name = {spec.paper_name: alias for alias, spec in entries if not spec.simulated}
    missing = [m for m in models if m not in by_name]
    if missing:
        raise KeyError(f"no registry entry with paper_name {missing} in configs/models.yaml")
    return [by_name[m] for m in models]
