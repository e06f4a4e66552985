"""Large jobs through the OpenAI Batch API (half price) or vLLM's offline batch runner.

One call does the whole cycle::

    results = llm.batch.run_batch(requests, cache=cache)   # cached → in-flight batches → new batches

Steps, usable alone:

- ``write_jsonl(requests, path, cache=None)``: one line per distinct uncached request,
  ``{"custom_id": <cache key>, "method": "POST", "url": "/v1/chat/completions", "body": {...}}``.
  The same file is accepted by ``vllm run-batch -i batch.jsonl -o out.jsonl --model <model>``
  (``python -m vllm.entrypoints.openai.run_batch`` in older vLLM).
- ``submit(requests, cache=...)``: writes the JSONL, uploads it, creates the batch and records the
  batch id (and the keys it covers) in the cache database in the same instant, so a killed process
  finds its in-flight, already paid batches instead of orphaning them.
- ``pending_batches(cache)``: the recorded batches not yet ingested.
- ``resume_pending(requests, cache=...)``: waits for the recorded batches that cover these requests,
  downloads their output and ingests it.
- ``ingest(output_jsonl, requests, cache)``: stores the answers of an output file (OpenAI Batch API
  or vLLM run-batch format, matched on custom_id) in the cache, like online answers.

Answers land in the same cache rows an online ``llm.run`` would use (same key), so mixing online
and batch runs never pays twice. Requests a batch failed to answer stay uncached: the next
``run_batch`` (or ``llm.run``) sends them again.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from gama_utils import paths
from gama_utils.llm.cache import Cache
from gama_utils.llm.errors import ConfigError
from gama_utils.llm.redaction import Redactor
from gama_utils.llm.registry import ModelSpec, check_ready, resolve_model
from gama_utils.llm.request import Prepared, Request, Result, charged_usage, prepare, read_completion

MAX_LINES = 50_000
TERMINAL = {"completed", "failed", "expired", "cancelled"}
_URLS = {"chat": "/v1/chat/completions", "completions": "/v1/completions"}


def _url(spec: ModelSpec) -> str:
    url = _URLS[spec.endpoint]
    return url[3:] if spec.client == "azure" else url


def _prepared(requests: Iterable[Request], registry: dict[str, ModelSpec] | None = None) -> dict[str, Prepared]:
    memo: dict[str, ModelSpec] = {}
    items: dict[str, Prepared] = {}
    for i, request in enumerate(requests):
        model = request.model
        token = model.alias if isinstance(model, ModelSpec) else json.dumps(model, sort_keys=True, default=str)
        spec = model if isinstance(model, ModelSpec) else memo.setdefault(token, resolve_model(model, registry))
        if spec.client not in ("openai", "azure"):
            raise ConfigError(f"request {i}: model {spec.alias} (client {spec.client!r}) cannot go through a batch")
        item = prepare(request, spec)
        items.setdefault(item.key, item).indices.append(i)
    return items


def _line(item: Prepared) -> str:
    return json.dumps({"custom_id": item.key, "method": "POST", "url": _url(item.spec), "body": item.body},
                      ensure_ascii=False)


def write_jsonl(requests: Iterable[Request], path: str | os.PathLike, *, cache: Cache | None = None,
                registry: dict[str, ModelSpec] | None = None) -> list[Prepared]:
    """Write the batch input file (distinct requests not in `cache`); returns the requests written."""
    items = _prepared(requests, registry)
    if cache is not None:
        for key in cache.get_many(items):
            items.pop(key)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text("".join(_line(item) + "\n" for item in items.values()), encoding="utf-8")
    tmp.replace(path)
    return list(items.values())


def _client(spec: ModelSpec) -> Any:
    import openai

    key = spec.api_key() or "EMPTY"
    if spec.client == "azure":
        return openai.AzureOpenAI(azure_endpoint=spec.resolved_base_url(), api_key=key,
                                  api_version=spec.resolved_api_version(), max_retries=5)
    return openai.OpenAI(base_url=spec.resolved_base_url(), api_key=key, max_retries=5)


def pending_batches(cache: Cache) -> list[dict[str, Any]]:
    """Recorded batches whose output has not been ingested yet."""
    cursor = cache.connection().execute("SELECT * FROM batches WHERE ingested_at IS NULL ORDER BY created_at")
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def _record(cache: Cache, batch_id: str, spec: ModelSpec, input_file_id: str, status: str,
            keys: list[str]) -> None:
    conn = cache.connection()
    now = time.time()
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("INSERT OR REPLACE INTO batches (batch_id, alias, provider, model, endpoint, input_file_id, "
                     "status, n_requests, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                     (batch_id, spec.alias, spec.provider, spec.model, spec.endpoint, input_file_id, status,
                      len(keys), now, now))
        conn.executemany("INSERT OR IGNORE INTO batch_items (batch_id, key) VALUES (?, ?)",
                         [(batch_id, key) for key in keys])
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _update(cache: Cache, batch_id: str, **fields: Any) -> None:
    fields["updated_at"] = time.time()
    columns = ", ".join(f"{name} = ?" for name in fields)
    cache.connection().execute(f"UPDATE batches SET {columns} WHERE batch_id = ?", (*fields.values(), batch_id))


def submit(requests: Iterable[Request], *, cache: Cache, workdir: str | os.PathLike | None = None,
           max_lines: int = MAX_LINES, registry: dict[str, ModelSpec] | None = None,
           skip_keys: Iterable[str] = ()) -> list[str]:
    """Upload and create batches for the uncached requests (one per model, ≤ max_lines each); return ids.

    Each batch id is recorded in the cache database as soon as the API returns it.
    """
    items = _prepared(requests, registry)
    for key in list(cache.get_many(items)) + list(skip_keys):
        items.pop(key, None)
    if not items:
        return []
    by_spec: dict[str, list[Prepared]] = {}
    for item in items.values():
        by_spec.setdefault(item.spec.alias, []).append(item)
    check_ready([group[0].spec for group in by_spec.values()], registry=registry)
    folder = paths.resolve(workdir) if workdir else cache.path.parent / "batches"
    ids: list[str] = []
    for group in by_spec.values():
        spec = group[0].spec
        client = _client(spec)
        for start in range(0, len(group), max_lines):
            chunk = group[start:start + max_lines]
            path = folder / f"{spec.provider}_{chunk[0].key[:16]}_{len(chunk)}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(_line(item) + "\n" for item in chunk), encoding="utf-8")
            with path.open("rb") as handle:
                uploaded = client.files.create(file=handle, purpose="batch")
            batch = client.batches.create(input_file_id=uploaded.id, endpoint=_url(spec),
                                          completion_window="24h")
            _record(cache, batch.id, spec, uploaded.id, batch.status, [item.key for item in chunk])
            ids.append(batch.id)
    return ids


def ingest(output_jsonl: str | os.PathLike, requests: Iterable[Request] | dict[str, Prepared], cache: Cache,
           *, batch_id: str | None = None) -> dict[str, Any]:
    """Store the answers of a batch output file in the cache; returns counts and per-request errors."""
    items = requests if isinstance(requests, dict) else _prepared(requests)
    rows: list[tuple[Prepared, Result, dict[str, Any]]] = []
    errors: dict[str, str] = {}
    unknown = 0
    for line in Path(output_jsonl).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        key = record.get("custom_id")
        item = items.get(key)
        if item is None:
            unknown += 1
            continue
        response = record.get("response") or {}
        body = response.get("body")
        if isinstance(body, str):
            body = json.loads(body)
        if record.get("error") or response.get("status_code") != 200 or not isinstance(body, dict):
            detail = record.get("error") or (body.get("error") if isinstance(body, dict) else body)
            errors[key] = f"HTTP {response.get('status_code')}: {json.dumps(detail)[:300]}"
            continue
        try:
            parsed = read_completion(body, item.spec.endpoint)
        except (KeyError, IndexError, TypeError, AttributeError):
            errors[key] = "answer without choices"
            continue
        result = Redactor([item.spec.api_key()]).result(Result(key=key, **parsed))
        result.input_tokens, result.output_tokens, result.usage_estimated = charged_usage(item, result)
        meta = {"via": "batch", "batch_id": batch_id, "id": body.get("id"), "response_model": result.response_model,
                "alias": item.spec.alias, "system_fingerprint": result.system_fingerprint,
                "usage_estimated": result.usage_estimated}
        rows.append((item, result, meta))
    stored = cache.put_many(rows)
    return {"answers": len(rows), "stored": stored, "errors": errors, "unknown": unknown}


def _download(client: Any, file_id: str, path: Path) -> Path:
    content = client.files.content(file_id)
    data = content.read() if hasattr(content, "read") else content.content
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _collect(cache: Cache, row: dict[str, Any], spec: ModelSpec, items: dict[str, Prepared], folder: Path,
             poll_s: float, deadline: float | None, bar: tqdm) -> dict[str, Any]:
    client = _client(spec)
    batch_id = row["batch_id"]
    while True:
        batch = client.batches.retrieve(batch_id)
        _update(cache, batch_id, status=batch.status, output_file_id=batch.output_file_id,
                error_file_id=batch.error_file_id)
        counts = batch.request_counts
        bar.set_postfix_str(f"{batch_id}: {batch.status} {getattr(counts, 'completed', 0)}/"
                            f"{getattr(counts, 'total', 0)}", refresh=True)
        if batch.status in TERMINAL:
            break
        if deadline is not None and time.time() > deadline:
            return {"batch_id": batch_id, "status": batch.status, "answers": 0, "errors": {}, "waiting": True}
        time.sleep(poll_s)
    report: dict[str, Any] = {"batch_id": batch_id, "status": batch.status, "answers": 0, "stored": 0,
                              "errors": {}}
    for name in ("output_file_id", "error_file_id"):
        file_id = getattr(batch, name)
        if file_id:
            part = ingest(_download(client, file_id, folder / f"{batch_id}_{name[:-8]}.jsonl"), items, cache,
                          batch_id=batch_id)
            report["answers"] += part["answers"]
            report["stored"] += part["stored"]
            report["errors"].update(part["errors"])
    if batch.status != "completed":
        answered = cache.get_many(items)
        for (key,) in cache.connection().execute("SELECT key FROM batch_items WHERE batch_id = ?", (batch_id,)):
            if key in items and key not in answered:
                report["errors"].setdefault(key, f"batch {batch_id} ended {batch.status} without this answer")
    _update(cache, batch_id, ingested_at=time.time())
    bar.update(report["answers"])
    return report


def resume_pending(requests: Iterable[Request] | dict[str, Prepared], *, cache: Cache, poll_s: float = 30.0,
                   timeout_s: float | None = None, workdir: str | os.PathLike | None = None,
                   progress: bool = True, registry: dict[str, ModelSpec] | None = None) -> list[dict[str, Any]]:
    """Wait for the recorded, not yet ingested batches covering these requests, and ingest them."""
    items = requests if isinstance(requests, dict) else _prepared(requests, registry)
    folder = paths.resolve(workdir) if workdir else cache.path.parent / "batches"
    deadline = time.time() + timeout_s if timeout_s is not None else None
    conn = cache.connection()
    rows = [row for row in pending_batches(cache)
            if any(key in items for (key,) in conn.execute("SELECT key FROM batch_items WHERE batch_id = ?",
                                                            (row["batch_id"],)))]
    if not rows:
        return []
    specs = {(item.spec.provider, item.spec.model): item.spec for item in items.values()}
    reports = []
    with tqdm(total=sum(row["n_requests"] for row in rows), desc="batch", unit="req", disable=not progress) as bar:
        for row in rows:
            spec = specs.get((row["provider"], row["model"]))
            if spec is None:
                continue
            reports.append(_collect(cache, row, spec, items, folder, poll_s, deadline, bar))
    return reports


def run_batch(requests: Iterable[Request], *, cache: Cache | str | None = None, poll_s: float = 30.0,
              timeout_s: float | None = None, workdir: str | os.PathLike | None = None, progress: bool = True,
              max_lines: int = MAX_LINES, registry: dict[str, ModelSpec] | None = None) -> list[Result]:
    """Answer the requests through batches: cached first, then in-flight batches, then new ones.

    Returns one Result per request (cached=True for every answer, since all come from the cache);
    requests still waiting at `timeout_s`, or that a batch failed, carry an error.
    """
    requests = list(requests)
    cache = cache if isinstance(cache, Cache) else Cache(cache)
    items = _prepared(requests, registry)
    resume_pending(items, cache=cache, poll_s=poll_s, timeout_s=timeout_s, workdir=workdir, progress=progress)
    in_flight = {key for row in pending_batches(cache)
                 for (key,) in cache.connection().execute("SELECT key FROM batch_items WHERE batch_id = ?",
                                                          (row["batch_id"],))}
    submit(requests, cache=cache, workdir=workdir, max_lines=max_lines, registry=registry, skip_keys=in_flight)
    reports = resume_pending(items, cache=cache, poll_s=poll_s, timeout_s=timeout_s, workdir=workdir,
                             progress=progress)
    errors = {key: message for report in reports for key, message in report["errors"].items()}
    found = cache.get_many(items)
    results: list[Result | None] = [None] * len(requests)
    for key, item in items.items():
        for i in item.indices:
            hit = found.get(key)
            if hit is not None:
                hit = dataclasses.replace(hit, tag=requests[i].tag, alias=item.spec.alias)
            else:
                hit = Result(key=key, error=errors.get(key, "no answer yet (batch still running or failed)"),
                             alias=item.spec.alias, tag=requests[i].tag)
            results[i] = hit
    return [r for r in results if r is not None]
