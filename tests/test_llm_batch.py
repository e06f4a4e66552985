"""Batch API round trip, resume of in-flight batches after a crash, vLLM batch output ingestion."""

from __future__ import annotations

import json

from gama_utils import llm


def ask(spec, n, prefix="b"):
    return [llm.Request(spec, [{"role": "user", "content": f"{prefix} {i}"}], tag=i) for i in range(n)]


def test_batch_round_trip_fills_the_cache(fake_openai, outputs):
    spec = fake_openai.spec()
    cache = llm.Cache()
    requests = ask(spec, 12) + ask(spec, 2)                     # two duplicates: one line each
    results = llm.batch.run_batch(requests, cache=cache, poll_s=0.05, progress=False)
    assert [r.text for r in results] == [f"Answer to: b {i}" for i in range(12)] + ["Answer to: b 0", "Answer to: b 1"]
    assert [r.tag for r in results] == list(range(12)) + [0, 1]
    assert len(fake_openai.batches) == 1 and fake_openai.received == 0
    batch = next(iter(fake_openai.batches.values()))
    assert batch["request_counts"] == {"total": 12, "completed": 12, "failed": 0}
    assert len(cache) == 12 and llm.batch.pending_batches(cache) == []
    online = llm.run(ask(spec, 12), cache=cache, progress=False)
    assert all(r.cached for r in online) and fake_openai.received == 0   # batch answers serve online runs


def test_a_killed_process_picks_up_its_in_flight_batch(fake_openai, outputs):
    spec = fake_openai.spec()
    cache = llm.Cache()
    ids = llm.batch.submit(ask(spec, 8), cache=cache)            # the process "dies" right after this
    assert len(ids) == 1
    pending = llm.batch.pending_batches(llm.Cache())             # a new process reads the ledger
    assert [p["batch_id"] for p in pending] == ids and pending[0]["n_requests"] == 8
    results = llm.batch.run_batch(ask(spec, 10), cache=llm.Cache(), poll_s=0.05, progress=False)
    assert all(r.ok for r in results)
    assert len(fake_openai.batches) == 2                        # the paid batch was reused; a new one for 2
    assert [b["request_counts"]["total"] for b in fake_openai.batches.values()] == [8, 2]
    assert llm.batch.pending_batches(cache) == []


def test_failed_lines_are_reported_and_not_cached(fake_openai, outputs):
    good, bad = fake_openai.spec(), fake_openai.spec(model="fail-in-batch", alias="bad")
    results = llm.batch.run_batch(ask(good, 2) + ask(bad, 2, "x"), cache=llm.Cache(), poll_s=0.05, progress=False)
    assert [r.ok for r in results] == [True, True, False, False]
    assert "HTTP 400" in results[2].error and "simulated failure" in results[2].error
    assert len(llm.Cache()) == 2


def test_vllm_batch_output_is_ingested_like_an_online_answer(fake_openai, outputs, tmp_path):
    spec = llm.resolve_model({"alias": "qwen3-8b", "base_url": fake_openai.base_url})
    requests = ask(spec, 3)
    cache = llm.Cache()
    written = llm.batch.write_jsonl(requests, tmp_path / "batch.jsonl", cache=cache)
    lines = [json.loads(line) for line in (tmp_path / "batch.jsonl").read_text().splitlines()]
    assert [line["url"] for line in lines] == ["/v1/chat/completions"] * 3
    assert lines[0]["body"]["model"] == "Qwen/Qwen3-8B" and lines[0]["body"]["temperature"] == 0.3
    assert [line["custom_id"] for line in lines] == [item.key for item in written]
    # What `vllm run-batch -i batch.jsonl -o out.jsonl` writes: one record per line, matched on custom_id.
    out = tmp_path / "out.jsonl"
    out.write_text("".join(json.dumps({
        "id": f"vllm-{n}", "custom_id": line["custom_id"],
        "response": {"status_code": 200, "request_id": f"vllm-batch-{n}",
                     "body": {"id": f"chatcmpl-{n}", "object": "chat.completion", "model": "Qwen/Qwen3-8B",
                              "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                  "role": "assistant", "content": f"<think>hmm {n}</think>vLLM answer {n}"}}],
                              "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}}},
        "error": None}) + "\n" for n, line in enumerate(lines)))
    report = llm.batch.ingest(out, requests, cache)
    assert report["stored"] == 3 and report["errors"] == {}
    results = llm.run(requests, cache=cache, progress=False)
    assert [(r.text, r.reasoning, r.cached) for r in results] == [(f"vLLM answer {n}", f"hmm {n}", True)
                                                                  for n in range(3)]
    assert fake_openai.received == 0
