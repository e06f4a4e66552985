"""data/gama_bench as a Hugging Face dataset: the card's front matter is the build's, declares what the files hold,
and `datasets.load_dataset` reads both tracks with the declared features; the licence and CITATION.cff agree."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml

from gama_utils.bench import dataset_card, publication
from gama_utils.bench.compilation import PAIR_COLUMNS
from gama_utils.paths import BENCHMARK, ROOT


@pytest.fixture(scope="module")
def pairs() -> pd.DataFrame:
    return pd.read_json(BENCHMARK / "pairs.jsonl", lines=True, dtype=False)


@pytest.fixture(scope="module")
def card() -> dict:
    return dataset_card.read_front_matter((BENCHMARK / "README.md").read_text(encoding="utf-8"))


def test_the_shipped_card_is_the_one_the_build_writes(pairs):
    text = (BENCHMARK / "README.md").read_text(encoding="utf-8")
    assert text.startswith(dataset_card.front_matter(pairs))
    assert text[len(dataset_card.front_matter(pairs)):].startswith("# GAMA-Bench (project edition): datasheet")


def test_the_card_declares_licence_language_tasks_and_size(card, pairs):
    assert card["license"] == "cc-by-4.0" and card["language"] == ["en"]
    assert {"text-generation", "text-classification"} == set(card["task_categories"])
    expected = "n<1K" if len(pairs) < 1_000 else "1K<n<10K" if len(pairs) < 10_000 else "10K<n<100K"
    assert card["size_categories"] == [expected]
    assert [dataset_card.size_category(n) for n in (999, 1_000, 9_999, 10_000)] == [
        "n<1K", "1K<n<10K", "1K<n<10K", "10K<n<100K"]


def test_each_config_points_at_a_file_holding_exactly_its_rows(card, pairs):
    """all: every pair; intimate and public: the pairs of that track, in pairs.jsonl's order, the same bytes per row."""
    configs = {c["config_name"]: c for c in card["configs"]}
    assert set(configs) == {"all", "intimate", "public"} and configs["all"].get("default") is True
    info = {i["config_name"]: i for i in card["dataset_info"]}
    lines = (BENCHMARK / "pairs.jsonl").read_text(encoding="utf-8").splitlines()
    for name, config in configs.items():
        [files] = config["data_files"]
        assert files["split"] == "test"
        rows = (BENCHMARK / files["path"]).read_text(encoding="utf-8").splitlines()
        expected = lines if name == "all" else [line for line in lines if json.loads(line)["track"] == name]
        assert rows == expected, name
        assert info[name] == {"config_name": name, "features": [{"name": c, "dtype": "string"} for c in PAIR_COLUMNS]}


def test_the_manifest_covers_the_track_files():
    listed = {line.split()[1] for line in (BENCHMARK / publication.MANIFEST).read_text().splitlines()}
    assert set(dataset_card.TRACK_FILES.values()) <= listed
    assert publication.manifest_problems(BENCHMARK) == []


def test_load_dataset_reads_both_tracks_with_the_declared_features(pairs, tmp_path, monkeypatch):
    """The public track's relationship column is empty everywhere: read as string (not null) only because the card
    declares it."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    datasets = pytest.importorskip("datasets")
    for track in ("intimate", "public"):
        loaded = datasets.load_dataset(str(BENCHMARK), track, split="test", cache_dir=str(tmp_path / "cache"))
        expected = pairs[pairs["track"] == track]
        assert loaded.num_rows == len(expected)
        assert list(loaded.features) == list(PAIR_COLUMNS)
        assert all(feature == datasets.Value("string") for feature in loaded.features.values())
        assert loaded["pair_id"] == expected["pair_id"].tolist()
        assert loaded["prompt_female"] == expected["prompt_female"].tolist()
        assert set(loaded["track"]) == {track}
    public = datasets.load_dataset(str(BENCHMARK), "public", split="test", cache_dir=str(tmp_path / "cache"))
    assert set(public["relationship"]) == {None}
    everything = datasets.load_dataset(str(BENCHMARK), split="test", cache_dir=str(tmp_path / "cache"))
    assert everything.num_rows == len(pairs)


def test_the_citation_file_cites_the_paper_and_this_repository_under_the_stated_licences(card):
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert citation["cff-version"] == "1.2.0" and citation["type"] == "software"
    assert citation["license"] == "MIT" and "MIT License" in (ROOT / "LICENSE").read_text(encoding="utf-8")
    paper = citation["preferred-citation"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert paper["title"] in readme  # the README names the paper by the same title
    assert [a["family-names"] for a in paper["authors"]] == ["Si", "Wang", "Li", "Yu", "Pan", "Zhu"]
    [data] = [r for r in citation["references"] if r["type"] == "dataset"]
    assert data["license"].lower() == card["license"]
    assert "CC BY 4.0" in (ROOT / "LICENSE-DATA").read_text(encoding="utf-8")
