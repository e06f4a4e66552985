"""Persistent response cache: one SQLite file (WAL), one row per answered request, no expiry.

A row is keyed on the sha256 of provider, server (host and path of the base URL), endpoint,
sample index and the exact API body (model, messages or prompt, decoding, extra fields); never on
the API key. Each answer is committed on arrival, so a process killed with SIGKILL loses nothing
it received, and several processes may write the same file at once (SQLite locking, busy
timeout); the `leases` table (see leases.py) keeps two of them from paying for one request.
Errors are not cached: a rerun retries them. `explain_miss` tells why a request missed. The
`learned_limits` table keeps the rate limits a run learned per provider, model and server.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable
from typing import Any

from gama_utils import paths
from gama_utils.llm.registry import ModelSpec
from gama_utils.llm.request import Prepared, Request, Result, canonical_json, prepare, server_id

DEFAULT_PATH = "responses.sqlite"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    sample INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    body TEXT NOT NULL,
    text TEXT,
    reasoning TEXT,
    finish_reason TEXT,
    input_tokens INTEGER,
    output_tokens INTEGER,
    latency_s REAL,
    meta TEXT,
    created_at REAL NOT NULL,
    server TEXT
);
CREATE INDEX IF NOT EXISTS responses_model ON responses (provider, model, created_at);
CREATE TABLE IF NOT EXISTS leases (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    expires REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS learned_limits (
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    server TEXT NOT NULL,
    rpm REAL,
    tpm REAL,
    source TEXT NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (provider, model, server)
);
CREATE TABLE IF NOT EXISTS batches (
    batch_id TEXT PRIMARY KEY,
    alias TEXT NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    input_file_id TEXT,
    output_file_id TEXT,
    error_file_id TEXT,
    status TEXT NOT NULL,
    n_requests INTEGER NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    ingested_at REAL
);
CREATE TABLE IF NOT EXISTS batch_items (
    batch_id TEXT NOT NULL,
    key TEXT NOT NULL,
    PRIMARY KEY (batch_id, key)
);
CREATE INDEX IF NOT EXISTS batch_items_key ON batch_items (key);
"""
_COLUMNS = "key, text, reasoning, finish_reason, input_tokens, output_tokens, latency_s, meta"
_INSERT = ("INSERT OR IGNORE INTO responses (key, provider, model, endpoint, sample, content_hash, body, text, "
           "reasoning, finish_reason, input_tokens, output_tokens, latency_s, meta, created_at, server) "
           "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
_ANSWER_FIELDS = ("messages", "prompt")


def content_hash(body: dict[str, Any]) -> str:
    """Hash of the prompt part of a body (messages or prompt), to find entries with the same prompt."""
    content = body.get("messages", body.get("prompt"))
    return hashlib.sha256(canonical_json(content).encode("utf-8")).hexdigest()[:32]


class CacheError(RuntimeError):
    """The cache file is not a readable SQLite database; the message names it."""


class Cache:
    """The response cache at `path` (default outputs/cache/responses.sqlite)."""

    def __init__(self, path: str | os.PathLike | None = None):
        self.path = paths.resolve(path) if path else paths.CACHE / DEFAULT_PATH
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        try:
            conn = self.connection()
            conn.executescript(_SCHEMA)
            if "server" not in {row[1] for row in conn.execute("PRAGMA table_info(responses)")}:
                conn.execute("ALTER TABLE responses ADD COLUMN server TEXT")  # a cache from before key version 2
            conn.execute("SELECT COUNT(*) FROM responses").fetchone()
        except sqlite3.DatabaseError as err:
            self.close()
            raise CacheError(f"the response cache {self.path} cannot be read ({err}). Nothing was sent. Move the "
                             "file aside (the answers in it are lost to this run; a run started afresh asks "
                             "everything again), or in code pass llm.Cache(<another file>).") from err

    def __repr__(self) -> str:
        return f"Cache({str(self.path)!r})"

    def connection(self) -> sqlite3.Connection:
        """This thread's connection (WAL, synchronous=NORMAL: a commit survives a killed process)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA busy_timeout = 60000")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            self._local.conn = conn
        return conn

    def close(self) -> None:
        """Close this thread's connection."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def __len__(self) -> int:
        return self.connection().execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    @staticmethod
    def _result(row: tuple) -> Result:
        key, text, reasoning, finish, n_in, n_out, latency, meta = row
        extra = json.loads(meta) if meta else {}
        model, fingerprint = extra.get("response_model"), extra.get("system_fingerprint")
        return Result(key=key, text=text, reasoning=reasoning, finish_reason=finish, input_tokens=n_in,
                      output_tokens=n_out, latency_s=latency, cached=True,
                      usage_estimated=bool(extra.get("usage_estimated")),
                      response_model=model if isinstance(model, str) else None,
                      system_fingerprint=fingerprint if isinstance(fingerprint, str) else None)

    def get(self, key: str) -> Result | None:
        """The cached Result for a key (cached=True), or None."""
        row = self.connection().execute(f"SELECT {_COLUMNS} FROM responses WHERE key = ?", (key,)).fetchone()
        return self._result(row) if row else None

    def get_many(self, keys: Iterable[str]) -> dict[str, Result]:
        """Cached Results for many keys at once."""
        keys = list(dict.fromkeys(keys))
        found: dict[str, Result] = {}
        conn = self.connection()
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            marks = ",".join("?" * len(chunk))
            for row in conn.execute(f"SELECT {_COLUMNS} FROM responses WHERE key IN ({marks})", chunk):
                found[row[0]] = self._result(row)
        return found

    def put(self, item: Prepared, result: Result, meta: dict[str, Any] | None = None) -> None:
        """Store an answer in its own transaction (an existing row for the key is kept)."""
        self.put_many([(item, result, meta)])

    def put_many(self, rows: Iterable[tuple[Prepared, Result, dict[str, Any] | None]]) -> int:
        """Store several answers in one transaction and drop their leases; returns how many were new."""
        now = time.time()
        values = [(item.key, item.spec.provider, item.spec.model, item.spec.endpoint, item.sample,
                   content_hash(item.body), item.body_json, r.text, r.reasoning, r.finish_reason, r.input_tokens,
                   r.output_tokens, r.latency_s, json.dumps(meta) if meta else None, now, item.server)
                  for item, r, meta in rows]
        if not values:
            return 0
        conn = self.connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            inserted = conn.executemany(_INSERT, values).rowcount
            conn.executemany("DELETE FROM leases WHERE key = ?", [(v[0],) for v in values])
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return inserted

    def answered_prompts(self, spec: ModelSpec, bodies: Iterable[tuple[dict[str, Any], int]]) -> list[bool]:
        """For each (body, sample): is there an answer from this model and server to the same prompt?

        Matched on the prompt (messages or prompt) and sample, not the whole body: for estimates, not lookups.
        """
        have = set(self.connection().execute(
            "SELECT content_hash, sample FROM responses WHERE provider = ? AND model = ? AND server = ?",
            (spec.provider, spec.model, server_id(spec))))
        return [(content_hash(body), sample) in have for body, sample in bodies]

    def learned_limit(self, spec: ModelSpec) -> dict[str, Any] | None:
        """The rate limit an earlier run learned for this provider, model and server (rpm, tpm, source)."""
        row = self.connection().execute(
            "SELECT rpm, tpm, source, updated_at FROM learned_limits WHERE provider = ? AND model = ? AND server = ?",
            (spec.provider, spec.model, server_id(spec))).fetchone()
        return dict(zip(("rpm", "tpm", "source", "updated_at"), row)) if row else None

    def save_learned_limit(self, spec: ModelSpec, rpm: float | None, tpm: float | None, source: str) -> None:
        """Keep a learned rate limit for the next run; rpm None forgets the saved one (a run went past it)."""
        if rpm is None:
            self.connection().execute("DELETE FROM learned_limits WHERE provider = ? AND model = ? AND server = ?",
                                      (spec.provider, spec.model, server_id(spec)))
            return
        self.connection().execute("INSERT OR REPLACE INTO learned_limits VALUES (?,?,?,?,?,?,?)",
                                  (spec.provider, spec.model, server_id(spec), rpm, tpm, source, time.time()))

    def explain_miss(self, request: Request | Prepared) -> dict[str, Any]:
        """The request's key, whether it is cached, and which fields differ from the nearest cached entry.

        'Nearest' is searched among entries with the same provider and model: first those with the same
        prompt (messages or prompt), else the 2,000 most recent; fewest differing fields wins, then the
        longest common start of the prompt, then the most recent.
        """
        item = request if isinstance(request, Prepared) else prepare(request)
        spec = item.spec
        report: dict[str, Any] = {"key": item.key, "hit": False, "provider": spec.provider, "model": spec.model,
                                  "alias": spec.alias}
        conn = self.connection()
        if conn.execute("SELECT 1 FROM responses WHERE key = ?", (item.key,)).fetchone():
            report["hit"] = True
            report["reason"] = "cached"
            return report
        wanted = content_hash(item.body)
        same_prompt = [key for key, digest in conn.execute(
            "SELECT key, content_hash FROM responses WHERE provider = ? AND model = ?", (spec.provider, spec.model))
            if digest == wanted][:2000]
        columns = "SELECT key, endpoint, sample, body, created_at, server FROM responses"
        if same_prompt:
            marks = ",".join("?" * len(same_prompt))
            rows = conn.execute(f"{columns} WHERE key IN ({marks})", same_prompt).fetchall()
        else:
            rows = conn.execute(f"{columns} WHERE provider = ? AND model = ? ORDER BY created_at DESC LIMIT 2000",
                                (spec.provider, spec.model)).fetchall()
        if not rows:
            others = [f"{p}/{m}" for p, m in conn.execute(
                "SELECT DISTINCT provider, model FROM responses ORDER BY provider, model LIMIT 50")]
            report["reason"] = (f"no cached entry for provider {spec.provider!r}, model {spec.model!r}; "
                                f"the cache holds: {', '.join(others) or 'nothing'}")
            report["differs"] = []
            return report
        mine = canonical_json(item.body.get("messages", item.body.get("prompt")))
        best: tuple[int, int, float, str, list[dict[str, Any]]] | None = None
        for key, endpoint, sample, body_json, created, server in rows:
            body = json.loads(body_json)
            diffs = _diff(item, endpoint, sample, body, server)
            shared = len(os.path.commonprefix([mine, canonical_json(body.get("messages", body.get("prompt")))]))
            rank = (len(diffs), -shared, -created)
            if best is None or rank < best[:3]:
                best = (*rank, key, diffs)
        assert best is not None
        report["nearest_key"] = best[3]
        report["differs"] = best[4]
        report["candidates"] = len(rows)
        fields = ", ".join(d["field"] for d in best[4]) or "nothing visible (key version changed?)"
        report["reason"] = f"nearest cached entry differs in: {fields}"
        if any(d["field"] == "server" and d["cached"] is None for d in best[4]):
            report["reason"] += " (it was cached before the server was part of the key: an older key version)"
        return report


def _diff(item: Prepared, endpoint: str, sample: int, body: dict[str, Any], server: str | None) -> list[dict[str, Any]]:
    diffs: list[dict[str, Any]] = []
    if server != item.server:
        diffs.append({"field": "server", "request": item.server, "cached": server})
    if endpoint != item.spec.endpoint:
        diffs.append({"field": "endpoint", "request": item.spec.endpoint, "cached": endpoint})
    if sample != item.sample:
        diffs.append({"field": "sample", "request": item.sample, "cached": sample})
    for name in sorted(set(body) | set(item.body)):
        mine, theirs = item.body.get(name, "<absent>"), body.get(name, "<absent>")
        if mine == theirs:
            continue
        entry: dict[str, Any] = {"field": name}
        if name in _ANSWER_FIELDS:
            entry["detail"] = _first_difference(mine, theirs)
        else:
            entry.update(request=mine, cached=theirs)
        diffs.append(entry)
    return diffs


def _first_difference(mine: Any, theirs: Any) -> str:
    if isinstance(mine, list) and isinstance(theirs, list):
        if len(mine) != len(theirs):
            return f"{len(mine)} messages in the request, {len(theirs)} cached"
        for i, (a, b) in enumerate(zip(mine, theirs)):
            if a != b:
                for part in sorted(set(a) | set(b)):
                    if a.get(part) != b.get(part):
                        return f"message {i} field {part!r}: " + _first_difference(a.get(part), b.get(part))
    if isinstance(mine, str) and isinstance(theirs, str):
        at = next((i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b), min(len(mine), len(theirs)))
        return (f"text differs at character {at}: request {mine[max(0, at - 20):at + 20]!r}, "
                f"cached {theirs[max(0, at - 20):at + 20]!r}")
    return f"request {mine!r}, cached {theirs!r}"
