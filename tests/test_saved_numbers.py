"""Saved run frames read back bit for bit (issue 16.1): p = 1e-14 stays 1e-14, 0.1 + 0.2 stays 0.30000000000000004."""

from __future__ import annotations

import json
import struct

import numpy as np
import pandas as pd

from gama_utils.analysis import gaps
from gama_utils.core import run_folders
from tests.test_gaps import evaluation_rows


def bits(x: float) -> bytes:
    return struct.pack("<d", x)


def test_small_and_inexact_floats_round_trip_bit_for_bit(tmp_path):
    # 0.1 + 0.2 = 0.30000000000000004 needs 17 significant digits; 5e-324 is the smallest subnormal double.
    values = [1e-14, 0.1 + 0.2, 1.6e-14, 2.2250738585072014e-308, 5e-324, 1 / 3, -7.123456789012345e-120, 1e300]
    frame = pd.DataFrame({"p_value": values, "model": [f"m{i}" for i in range(len(values))]})
    run_folders.save(frame, tmp_path, "gaps")
    back = run_folders.load(tmp_path, "gaps")
    assert [bits(v) for v in back["p_value"]] == [bits(v) for v in values]
    assert back["p_value"].dtype == np.float64
    # pandas' own writer (the one replaced) keeps 15 significant digits: 0.1 + 0.2 comes back as 0.3.
    assert json.loads(frame.head(2).to_json(orient="records"))[1]["p_value"] == 0.3


def test_missing_values_numpy_scalars_and_lists_survive(tmp_path):
    frame = pd.DataFrame({"x": [np.float64(2.5), np.nan], "n": np.array([3, 4], dtype=np.int64),
                          "flag": [np.bool_(True), np.bool_(False)], "terms": [["a", "b"], []],
                          "note": [None, "warning"], "nested": [[1.0, np.nan], [np.float32(0.5)]]})
    path = run_folders.save(frame, tmp_path, "frame")
    first = json.loads(path.read_text(encoding="utf-8").splitlines()[1])
    assert first["x"] is None and first["note"] == "warning"
    back = run_folders.load(tmp_path, "frame")
    assert back["x"].iloc[0] == 2.5 and np.isnan(back["x"].iloc[1])
    assert back["n"].tolist() == [3, 4] and back["flag"].tolist() == [True, False]
    assert back["terms"].tolist() == [["a", "b"], []] and back["note"].tolist() == [None, "warning"]
    assert back["nested"].tolist() == [[1.0, None], [0.5]]


def test_gaps_frame_round_trips_exactly(tmp_path):
    # A gaps frame with tiny p-values (every pair differs by +1..+3: p far below 1e-14) saved and reloaded
    # keeps every p_value, p_holm and CI bound bit for bit.
    male = {"punitive_count": [1] * 120}
    female = {"punitive_count": [1 + (i % 3) + 1 for i in range(120)]}
    evaluations = pd.concat([evaluation_rows("M", "male", male), evaluation_rows("M", "female", female)],
                            ignore_index=True)
    result = gaps.paired_gaps(evaluations, n_boot=200)
    assert result.loc[result.metric == "puni", "p_value"].iloc[0] < 1e-14
    run_folders.save(result, tmp_path, "gaps")
    back = run_folders.load(tmp_path, "gaps")
    for column in ("p_value", "p_holm", "p_zsplit", "p_holm_zsplit", "ci_low", "ci_high", "delta", "effect_size_ties"):
        assert [bits(v) for v in back[column]] == [bits(v) for v in result[column]], column
    assert back["method"].tolist() == result["method"].tolist()
