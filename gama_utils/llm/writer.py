"""The cache writer: commits answers from a thread of its own, so the event loop never waits on the disk."""

from __future__ import annotations

import queue
import threading
from typing import Any

from gama_utils.llm.cache import Cache
from gama_utils.llm.request import Prepared, Result


class CacheWriter:
    """Commits each answer within milliseconds of its arrival, several per transaction when they arrive together.

    `close` waits until all are on disk.
    """

    _STOP = object()

    def __init__(self, cache: Cache):
        self.cache = cache
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._work, name="gama-llm-cache", daemon=True)
        self.thread.start()

    def add(self, item: Prepared, result: Result, meta: dict[str, Any]) -> None:
        """Queue an answer for the cache."""
        self.queue.put((item, result, meta))

    def _work(self) -> None:
        stop = False
        while not stop:
            rows = [self.queue.get()]
            while True:
                try:
                    rows.append(self.queue.get_nowait())
                except queue.Empty:
                    break
            if rows[-1] is self._STOP:
                stop = True
                rows.pop()
            if rows and self.error is None:
                try:
                    self.cache.put_many(rows)
                except Exception as exc:  # reported by close()
                    self.error = exc
        self.cache.close()

    def close(self) -> None:
        """Wait until every queued answer is committed; re-raise a write error."""
        self.queue.put(self._STOP)
        self.thread.join()
        if self.error is not None:
            raise RuntimeError(f"could not write the response cache {self.cache.path}: {self.error}") from self.error
