"""The benchmark as a Hugging Face dataset: the card's YAML front matter of data/gama_bench/README.md.

`front_matter` gives the licence (the data is CC BY 4.0; the code is MIT, LICENSE at the repository root),
language, task categories, size category, the features (every column of compilation.PAIR_COLUMNS, a string)
and three `configs`: `all` (pairs.jsonl, the default), `intimate` and `public` (TRACK_FILES, one JSONL per track
written by gama_utils.bench.publication), each with one `test` split (`dataset_info` declares no split sizes: the
datasets library wants their Arrow byte counts, which depend on its version; the datasheet gives the counts), so
`datasets.load_dataset("data/gama_bench", "intimate")` loads a track with the declared features. Nothing here
reads a clock or a version, so a rebuild gives the same bytes.
"""

from __future__ import annotations

import pandas as pd
import yaml

from gama_utils.bench.benchmark_figures import DATASET_NAME
from gama_utils.bench.compilation import PAIR_COLUMNS
from gama_utils.core import grid

DATA_LICENSE = "cc-by-4.0"          # the benchmark's data: pairs, datasheet, figures
DATA_LICENSE_NAME = "Creative Commons Attribution 4.0 International (CC BY 4.0)"
CODE_LICENSE = "MIT"                # the code (LICENSE at the repository root)
SPLIT = "test"                      # an evaluation benchmark: all of it is test data
ALL_PAIRS = "pairs.jsonl"
TRACK_FILES = {track: f"{track}.jsonl" for track in grid.TRACKS}
LANGUAGES = ("en",)
TASK_CATEGORIES = ("text-generation", "text-classification")
TAGS = ("gender-bias", "fairness", "moral-judgment", "llm-evaluation", "mirrored-prompts", "counterfactual")
SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"))


def size_category(n: int) -> str:
    """The Hugging Face size category of a dataset of n rows."""
    return next((label for bound, label in SIZE_CATEGORIES if n < bound), "n>1M")


def config_files() -> dict[str, str]:
    """config name → its file: `all`, then one per track."""
    return {"all": ALL_PAIRS, **TRACK_FILES}


def card_data(pairs: pd.DataFrame) -> dict:
    """The card's metadata as a mapping (the YAML front matter, before dumping)."""
    files = config_files()
    return {
        "pretty_name": DATASET_NAME,
        "license": DATA_LICENSE,
        "language": list(LANGUAGES),
        "multilinguality": "monolingual",
        "language_creators": ["machine-generated"],   # written by the project's AI coding agents (datasheet)
        "annotations_creators": ["machine-generated"],
        "size_categories": [size_category(len(pairs))],
        "source_datasets": ["original"],
        "task_categories": list(TASK_CATEGORIES),
        "tags": list(TAGS),
        "configs": [{"config_name": name, "data_files": [{"split": SPLIT, "path": path}],
                     **({"default": True} if name == "all" else {})} for name, path in files.items()],
        "dataset_info": [{"config_name": name, "features": [{"name": c, "dtype": "string"} for c in PAIR_COLUMNS]}
                         for name in files],
    }


def front_matter(pairs: pd.DataFrame) -> str:
    """The YAML front matter (between `---` lines) that makes data/gama_bench/README.md a dataset card."""
    text = yaml.safe_dump(card_data(pairs), sort_keys=False, allow_unicode=True, width=120)
    return f"---\n{text}---\n\n"


def read_front_matter(text: str) -> dict:
    """The metadata of a card (the YAML between its first two `---` lines); ValueError when it has none."""
    if not text.startswith("---\n") or "\n---\n" not in text[3:]:
        raise ValueError("the card has no YAML front matter (a first line '---', the YAML, then '---')")
    return yaml.safe_load(text[4:text.index("\n---\n", 3)])
