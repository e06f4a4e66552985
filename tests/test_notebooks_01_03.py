"""01_generate → 02_review → 03_compile under papermill, offline, rebuild the shipped benchmark byte for byte."""

from __future__ import annotations

import json
import struct
import time

import pandas as pd
import pytest

from gama_utils import compile as build
from gama_utils.paths import BENCHMARK, NOTEBOOKS
from gama_utils.runs import DEFAULT_KERNEL
from gama_utils.schema import PAIRS

STAGES = ("01_generate", "02_review", "03_compile")


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


@pytest.mark.slow
def test_offline_01_to_03_rebuild_the_shipped_benchmark_byte_for_byte(tmp_path, monkeypatch):
    papermill = pytest.importorskip("papermill")
    monkeypatch.setenv("GAMA_OUTPUTS", str(tmp_path / "outputs"))
    run = tmp_path / "run"
    started = time.perf_counter()
    for stem in STAGES:
        papermill.execute_notebook(str(NOTEBOOKS / f"{stem}.ipynb"), str(tmp_path / f"{stem}.ipynb"),
                                   parameters={"run_dir": str(run)}, kernel_name=DEFAULT_KERNEL,
                                   cwd=str(NOTEBOOKS), progress_bar=False)
    print(f"01→03 offline: {time.perf_counter() - started:.1f} s")
    built = run / "benchmark"
    assert sorted(p.name for p in built.iterdir()) == sorted(build.BENCHMARK_FILES)
    assert sorted(p.name for p in BENCHMARK.iterdir()) == sorted(build.BENCHMARK_FILES)
    for name in (*build.DATA_FILES, build.MANIFEST):
        assert (built / name).read_bytes() == (BENCHMARK / name).read_bytes(), (
            f"{name} differs from data/gama_bench: rebuild it with 01→03 and publish=True")
    # Figures: same images, not compared byte for byte (rasterising depends on matplotlib/FreeType versions).
    for name in ("composition.png", "wordcloud.png"):
        assert _png_size(built / name) == _png_size(BENCHMARK / name)
    for name in ("composition.pdf", "wordcloud.pdf"):
        assert (built / name).read_bytes()[:5] == b"%PDF-"
    assert build.manifest_problems(BENCHMARK) == []

    for stage in ("candidates", "reviews", "posts", "pairs"):
        frame = pd.read_json(run / f"{stage}.jsonl", lines=True)
        assert frame["simulated"].all(), stage
    reviews = pd.read_json(run / "reviews.jsonl", lines=True)
    assert (reviews["generator"] != reviews["reviewer"]).all()
    pairs = pd.read_json(run / "pairs.jsonl", lines=True, dtype=False)
    assert list(pairs.columns) == [*PAIRS, "simulated"]
    assert (run / "screening_sheet.csv").exists()
    manifest = json.loads((run / "manifest.json").read_text())
    assert set(STAGES) <= set(manifest["stages"]) and manifest["stages"]["03_compile"]["pairs"] == len(pairs)
