"""A memo on disk for pure functions of one text (the lexicon's reading, the blind masking).

The same answers are read in 05, again in 08 (each judge, in another kernel) and again by every
later run of the same benchmark; a reading depends only on the text and on the function's own
version (its source and data files), so it is computed once and kept. One SQLite file,
outputs/cache/memo.sqlite (GAMA_MEMO names another), one row per function, version and text
(keyed by the text's BLAKE2b digest); several processes may read and write it at once. A memo
is only a shortcut: deleting the file changes no result.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gama_utils import paths

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS memo (
    function TEXT NOT NULL,
    version TEXT NOT NULL,
    digest BLOB NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (function, version, digest)
) WITHOUT ROWID;
"""


def memo_path() -> Path:
    """The memo file: $GAMA_MEMO, else outputs/cache/memo.sqlite."""
    named = os.environ.get("GAMA_MEMO")
    return Path(named) if named else paths.CACHE / "memo.sqlite"


def version_of(*files: str | os.PathLike) -> str:
    """A function's version: the SHA-256 over the names and bytes of the files it depends on (source, data)."""
    digest = hashlib.sha256()
    for file in map(Path, files):
        digest.update(file.name.encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=60.0, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 60000")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.executescript(_SCHEMA)
    return conn


class TextMemo:
    """The stored values of one pure function of a text, at one version.

    `kept(texts)` loads what is stored for `texts`; `get` and `remember` then serve and collect values
    in memory, and the new ones are written in one transaction when the block ends.
    """

    def __init__(self, function: str, version: Callable[[], str]):
        self.function = function
        self._version = version
        self._known: dict[str, Any] = {}
        self._new: dict[str, Any] | None = None

    def get(self, text: str) -> Any | None:
        """The stored value for `text` (None when it is not known)."""
        return self._known.get(text)

    def remember(self, text: str, value: Any) -> None:
        """Keep a newly computed value, to be written when the current `kept` block ends."""
        if self._new is not None:
            self._new[text] = value

    @contextmanager
    def kept(self, texts: Iterable[str]) -> Iterator[None]:
        """Within the block, values of `texts` stored by earlier runs are served; new values are stored at its end."""
        if self._new is not None:  # nested: the outer block loads and stores
            yield
            return
        path = memo_path()
        wanted = [t for t in dict.fromkeys(texts) if isinstance(t, str)]
        if path.exists() and wanted:
            try:
                self._known = self._load(path, wanted)
            except (sqlite3.Error, OSError) as err:  # only a shortcut: compute everything instead
                log.warning("the memo %s cannot be read (%s); computing %s afresh", path, err, self.function)
        self._new = {}
        try:
            yield
        finally:
            new, self._new, self._known = self._new, None, {}
            if new:
                try:
                    self._store(path, new)
                except (sqlite3.Error, OSError) as err:
                    log.warning("the memo %s cannot be written (%s); %s values are not kept", path, err,
                                self.function)

    def _load(self, path: Path, texts: list[str]) -> dict[str, Any]:
        version = self._version()
        by_digest = {_digest(t): t for t in texts}
        digests = list(by_digest)
        found: dict[str, Any] = {}
        conn = _connect(path)
        try:
            for start in range(0, len(digests), 500):
                chunk = digests[start:start + 500]
                rows = conn.execute(f"SELECT digest, value FROM memo WHERE function = ? AND version = ? AND digest IN "
                                    f"({','.join('?' * len(chunk))})", [self.function, version, *chunk])
                found.update((by_digest[d], json.loads(v)) for d, v in rows)
        finally:
            conn.close()
        return found

    def _store(self, path: Path, values: dict[str, Any]) -> None:
        version = self._version()
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = _connect(path)
        try:
            with conn:
                conn.execute("BEGIN")
                conn.executemany("INSERT OR IGNORE INTO memo VALUES (?, ?, ?, ?)",
                                 [(self.function, version, _digest(t), json.dumps(v)) for t, v in values.items()])
        finally:
            conn.close()
