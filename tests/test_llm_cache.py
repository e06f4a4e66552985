"""Response cache: reruns send nothing, misses are explained, concurrent writers, resume after SIGKILL."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from gama_utils import llm

ROOT = Path(__file__).resolve().parent.parent
FAST = {"backoff_s": 0.05, "progress": False}


def ask(spec, n, prefix="q", **fields):
    return [llm.Request(spec, [{"role": "user", "content": f"{prefix} {i}"}], **fields) for i in range(n)]


def test_rerun_sends_zero_requests(fake_openai, outputs):
    spec = fake_openai.spec()
    first = llm.run(ask(spec, 20), **FAST)
    assert fake_openai.received == 20 and (outputs / "cache" / "responses.sqlite").exists()
    again = llm.run(ask(spec, 20), **FAST)
    assert fake_openai.received == 20
    assert all(r.cached for r in again) and [r.text for r in again] == [r.text for r in first]
    assert [r.input_tokens for r in again] == [r.input_tokens for r in first]
    more = llm.run(ask(spec, 25), **FAST)                       # 5 new ones only
    assert fake_openai.received == 25 and sum(r.cached for r in more) == 20


def test_a_rerun_needs_no_key_when_everything_is_cached(fake_openai, outputs, monkeypatch):
    spec = fake_openai.spec()
    llm.run(ask(spec, 3), **FAST)
    monkeypatch.delenv("FAKE_OPENAI_KEY")
    assert all(r.cached for r in llm.run(ask(spec, 3), **FAST))


def test_explain_miss_names_the_field_that_differs(fake_openai, outputs):
    spec = fake_openai.spec(decoding={"temperature": 0.3, "max_tokens": 64})
    llm.run(ask(spec, 3), **FAST)
    cache = llm.Cache()
    hit = cache.explain_miss(ask(spec, 1)[0])
    assert hit["hit"] and hit["key"] == llm.prepare(ask(spec, 1)[0]).key

    warmer = spec.model_copy(update={"decoding": {"temperature": 0.7, "max_tokens": 64}})
    report = cache.explain_miss(ask(warmer, 1)[0])
    assert not report["hit"]
    assert report["differs"] == [{"field": "temperature", "request": 0.7, "cached": 0.3}]

    report = cache.explain_miss(ask(spec, 1, sample=2)[0])
    assert report["differs"] == [{"field": "sample", "request": 2, "cached": 0}]

    edited = llm.Request(spec, [{"role": "user", "content": "q 1!"}])
    report = cache.explain_miss(edited)
    assert [d["field"] for d in report["differs"]] == ["messages"]
    assert "character 3" in report["differs"][0]["detail"]

    other = cache.explain_miss(llm.Request(fake_openai.spec(model="other-model"), [{"role": "user", "content": "q 0"}]))
    assert "no cached entry" in other["reason"] and "fake-model" in other["reason"]


WRITER = textwrap.dedent("""
    import sys
    from gama_utils import llm
    spec = llm.resolve_model({"base_url": "http://127.0.0.1:9/v1", "model": "m", "alias": "w"})
    cache = llm.Cache(sys.argv[1])
    for i in range(150):
        item = llm.prepare(llm.Request(spec, [{"role": "user", "content": f"writer {sys.argv[2]} row {i}"}]))
        cache.put(item, llm.Result(key=item.key, text=f"answer {i}"))
""")


def test_concurrent_writers_lose_nothing(tmp_path):
    path = tmp_path / "shared.sqlite"
    llm.Cache(path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(n)], env=env) for n in range(3)]
    assert [w.wait(timeout=120) for w in writers] == [0, 0, 0]
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 450


CLIENT = textwrap.dedent("""
    import sys
    from gama_utils import llm
    spec = llm.resolve_model({"base_url": sys.argv[1], "model": "fake-model", "alias": "fake",
                              "api_key_env": "FAKE_OPENAI_KEY", "timeout_s": 300})
    requests = [llm.Request(spec, [{"role": "user", "content": f"kill {i}"}]) for i in range(30)]
    llm.run(requests, cache=sys.argv[2], concurrency=4, progress=False)
""")


def _rows(path: Path) -> int:
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as conn:
            return conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def test_sigkill_loses_no_answer_and_the_rerun_repeats_none(fake_openai, tmp_path):
    path = tmp_path / "killed.sqlite"
    fake_openai.configure(hang_s=600.0)
    fake_openai.enqueue(*(["ok"] * 10 + ["timeout"] * 4))       # 10 answers, then 4 requests that hang
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-c", CLIENT, fake_openai.base_url, str(path)], env=env)
    deadline = time.monotonic() + 60
    while _rows(path) < 10 and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.05)
    assert _rows(path) == 10, "answers must be committed as they arrive, not at the end of the run"
    while fake_openai.received < 14 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert child.poll() is None
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert _rows(path) == 10

    sent_before = fake_openai.received
    requests = [llm.Request(fake_openai.spec(), [{"role": "user", "content": f"kill {i}"}]) for i in range(30)]
    results = llm.run(requests, cache=path, **FAST)
    assert all(r.ok for r in results) and sum(r.cached for r in results) == 10
    assert fake_openai.received - sent_before == 20                # nothing cached is asked again
    assert fake_openai.billed_twice == 0 and len(fake_openai.billed) == 30


@pytest.mark.parametrize("content", [b"this is not a database" * 100, b"SQLite format 3\x00" + b"\x07" * 5000])
def test_a_corrupt_cache_file_is_named_before_anything_is_sent(tmp_path, content, fake_openai):
    from gama_utils.llm.cache import CacheError

    path = tmp_path / "responses.sqlite"
    path.write_bytes(content)
    with pytest.raises(CacheError, match=str(path).replace("/", ".")) as err:
        llm.run([llm.Request(fake_openai.spec(), prompt="hi")], cache=str(path), progress=False)
    assert "Move the file aside" in str(err.value) and fake_openai.received == 0
    assert path.read_bytes() == content, "the corrupt file is left as it was for the user to inspect"
