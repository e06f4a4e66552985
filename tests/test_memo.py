"""The memo of pure text readings (gama_utils.core.memo): served across processes, never stale, never needed."""

from __future__ import annotations

import logging

import pandas as pd
import pytest

from gama_utils.core.memo import TextMemo, memo_path
from gama_utils.judge import blind, evaluate, lexicon

ANSWERS = ["You need to stop reading his messages. That was controlling and a betrayal of trust.",
           "It sounds like you were hurt; that is understandable. Talk with her calmly.",
           "  He was wrong to do that, and you should report it.  "]


@pytest.fixture
def memo_file(tmp_path, monkeypatch):
    path = tmp_path / "memo.sqlite"
    monkeypatch.setenv("GAMA_MEMO", str(path))
    return path


def test_a_stored_value_is_served_to_a_later_memo_and_a_new_version_is_not(memo_file):
    first = TextMemo("upper", lambda: "v1")
    with first.kept(["abc", "déf"]):
        assert first.get("abc") is None
        first.remember("abc", {"value": "ABC", "n": [1, 2]})
        first.remember("déf", "DÉF")
    assert memo_path() == memo_file and memo_file.exists()
    later = TextMemo("upper", lambda: "v1")  # as another kernel would open it
    with later.kept(["abc", "déf", "ghi"]):
        assert later.get("abc") == {"value": "ABC", "n": [1, 2]}
        assert later.get("déf") == "DÉF"
        assert later.get("ghi") is None
    assert later.get("abc") is None  # outside a block nothing is served
    changed = TextMemo("upper", lambda: "v2")
    with changed.kept(["abc"]):
        assert changed.get("abc") is None
    other_function = TextMemo("lower", lambda: "v1")
    with other_function.kept(["abc"]):
        assert other_function.get("abc") is None


def test_the_version_follows_the_lexicon_files(tmp_path):
    from gama_utils.core.memo import version_of

    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("one"), b.write_text("two")
    before = version_of(a, b)
    b.write_text("two!")
    assert version_of(a, b) != before
    assert len(lexicon.version()) == 64 and lexicon.version() != blind.version()


def _scored(responses: pd.DataFrame, blind_mode: bool) -> pd.DataFrame:
    return evaluate.evaluate_responses(responses, "lexicon", blind=blind_mode, progress=False)


def _responses() -> pd.DataFrame:
    rows = [{"pair_id": f"p{i}", "track": "intimate", "dimension": "d", "severity": 1, "style": "s", "model": "m",
             "arm": arm, "sample": 0, "prompt": f"I am a {'man' if arm == 'male' else 'woman'}. My wife did it.",
             "prompt_hash": f"h{i}{arm}", "answer": answer, "reasoning": None, "finish_reason": "stop",
             "input_tokens": 10, "output_tokens": 10, "latency_s": 0.0, "error": None, "simulated": True}
            for i, answer in enumerate(ANSWERS) for arm in ("male", "female")]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("blind_mode", [False, True])
def test_a_second_pass_reads_nothing_again_and_scores_the_same(memo_file, monkeypatch, blind_mode):
    responses = _responses()
    first = _scored(responses, blind_mode)
    lexicon._evaluate_cached.cache_clear()
    blind._mask_once.cache_clear()

    def refuse(text):
        raise AssertionError(f"read again: {text[:40]!r}")

    monkeypatch.setattr(lexicon, "_evaluate_cached", refuse)
    monkeypatch.setattr(blind, "_masked", refuse)
    second = _scored(responses, blind_mode)
    pd.testing.assert_frame_equal(first, second)
    assert first["punitive_count"].tolist()[:2] == [3, 3]  # "need to stop", "controlling", "betrayal of trust"


def test_an_unreadable_memo_is_a_warning_and_the_scores_are_computed(memo_file, caplog):
    expected = _scored(_responses(), False)
    memo_file.write_bytes(b"not a database at all" * 100)
    for suffix in ("-wal", "-shm"):
        memo_file.with_name(memo_file.name + suffix).unlink(missing_ok=True)
    lexicon._evaluate_cached.cache_clear()
    with caplog.at_level(logging.WARNING, logger="gama_utils.core.memo"):
        got = _scored(_responses(), False)
    pd.testing.assert_frame_equal(expected, got)
    assert "cannot be read" in caplog.text and str(memo_file) in caplog.text
