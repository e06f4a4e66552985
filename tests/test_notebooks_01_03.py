"""01_generate → 02_review → 03_compile under papermill, offline, rebuild the shipped benchmark byte for byte."""

from __future__ import annotations

import json
import struct
import time

import pandas as pd
import papermill
import pytest

from gama_utils.bench import publication
from gama_utils.bench.compilation import PAIR_COLUMNS
from gama_utils.core import run_folders
from gama_utils.paths import BENCHMARK, NOTEBOOKS
from gama_utils.runs import rebuild
from gama_utils.runs.orchestrate import DEFAULT_KERNEL

STAGES = publication.STAGES


def _png_size(path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", header[16:24])


@pytest.mark.parametrize("stem", STAGES)
def test_notebook_is_thin_and_parameterised(stem):
    nb = json.loads((NOTEBOOKS / f"{stem}.ipynb").read_text())
    assert nb["metadata"]["kernelspec"]["name"] == DEFAULT_KERNEL
    assert nb["cells"][0]["cell_type"] == "markdown" and "§3.2" in "".join(nb["cells"][0]["source"])
    params = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(params) == 1
    source = "".join(params[0]["source"])
    assert 'run_dir = "outputs/runs/offline"' in source and "key" not in source.lower()
    code = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert "def " not in code


@pytest.mark.parametrize("stem", STAGES)
def test_notebook_opens_with_what_it_reads_writes_and_how_to_read_it_and_documents_every_parameter(stem):
    nb = json.loads((NOTEBOOKS / f"{stem}.ipynb").read_text())
    opening = "".join(nb["cells"][0]["source"])
    for heading in ("**Reads", "**Writes", "**How to read the outputs:**"):
        assert heading in opening, (stem, heading)
    parameters = papermill.inspect_notebook(str(NOTEBOOKS / f"{stem}.ipynb"))
    undocumented = [name for name, p in parameters.items() if len(p["help"].strip()) < 15]
    assert parameters and undocumented == []


@pytest.mark.slow
def test_offline_rebuild_reproduces_the_shipped_benchmark_byte_for_byte(tmp_path, monkeypatch):
    monkeypatch.setenv("GAMA_OUTPUTS", str(tmp_path / "outputs"))
    run, target = tmp_path / "run", tmp_path / "published"
    started = time.perf_counter()
    written = rebuild.rebuild(run=run, target=target)
    print(f"01→03 offline and publish: {time.perf_counter() - started:.1f} s")
    assert [p.name for p in written] == list(publication.BENCHMARK_FILES)
    built = run / "benchmark"
    for folder in (built, target, BENCHMARK):
        assert sorted(p.name for p in folder.iterdir()) == sorted(publication.BENCHMARK_FILES), folder
    for name in (*publication.DATA_FILES, publication.MANIFEST):
        assert (target / name).read_bytes() == (BENCHMARK / name).read_bytes(), (
            f"{name} differs from data/gama_bench: rebuild it with `python -m gama_utils.runs.rebuild`")
    # Figures: same images, not compared byte for byte (rasterising depends on matplotlib/FreeType versions).
    for name in ("composition.png", "wordcloud.png"):
        assert _png_size(target / name) == _png_size(BENCHMARK / name)
    for name in ("composition.pdf", "wordcloud.pdf"):
        assert (target / name).read_bytes()[:5] == b"%PDF-"
    assert publication.manifest_problems(BENCHMARK) == []

    for stage in ("candidates", "reviews", "posts", "pairs"):
        frame = pd.read_json(run / f"{stage}.jsonl", lines=True)
        assert frame["simulated"].all(), stage
    reviews = pd.read_json(run / "reviews.jsonl", lines=True)
    assert (reviews["generator"] != reviews["reviewer"]).all()
    pairs = pd.read_json(run / "pairs.jsonl", lines=True, dtype=False)
    assert list(pairs.columns) == [*PAIR_COLUMNS, "simulated"]
    assert (run / "screening_sheet.csv").exists() and run_folders.load(run, "dropped_templates").empty
    manifest = json.loads((run / "manifest.json").read_text())
    assert set(STAGES) <= set(manifest["stages"]) and manifest["stages"]["03_compile"]["pairs"] == len(pairs)
    assert manifest["stages"]["publish"]["published"] == list(publication.BENCHMARK_FILES)
    notebooks = sorted(p.name for p in (run / "notebooks").iterdir())
    assert notebooks == [f"{stem}.ipynb" for stem in STAGES]
    assert [row["notebook"] for row in json.loads((run / "timings.json").read_text())] == list(STAGES)
