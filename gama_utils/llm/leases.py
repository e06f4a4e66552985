"""Leases on request keys, so that two processes sharing one cache never pay for the same request.

Before sending, a run claims the keys it is about to send in one transaction (BEGIN IMMEDIATE):
a key already answered is read from the cache instead; a key leased by another live run is left
to that run, and this run waits for its answer; every other key is leased to this run. A lease
ends when its answer is stored (same transaction), when the run ends, or when it expires: runs
renew theirs while they work, so a lease outlives its owner by at most `ttl_s`, and not at all
when the owner was a process on this machine that no longer exists (SIGKILL, crash).
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from gama_utils.llm.cache import Cache

LEASE_TTL_S = 120.0


@dataclass
class Claim:
    """The outcome of claiming some keys: leased to us, already answered, or leased to another run."""

    mine: list[str] = field(default_factory=list)
    answered: list[str] = field(default_factory=list)
    taken: dict[str, str] = field(default_factory=dict)


def _alive(owner: str, host: str) -> bool:
    """False only when the owner was a process on this host that no longer exists."""
    owner_host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if owner_host != host or not pid.isdigit():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Leases:
    """This run's leases in `cache` (owner: host:pid:random)."""

    def __init__(self, cache: Cache, ttl_s: float = LEASE_TTL_S):
        self.cache = cache
        self.ttl_s = ttl_s
        self.host = socket.gethostname()
        self.owner = f"{self.host}:{os.getpid()}:{secrets.token_hex(4)}"
        self.renewed = time.monotonic()

    def claim(self, keys: Iterable[str]) -> Claim:
        """Lease every key that is neither answered nor leased by another live run."""
        keys = list(dict.fromkeys(keys))
        claim = Claim()
        if not keys:
            return claim
        conn = self.cache.connection()
        now = time.time()
        conn.execute("BEGIN IMMEDIATE")
        try:
            answered: set[str] = set()
            held: dict[str, tuple[str, float]] = {}
            for start in range(0, len(keys), 500):
                chunk = keys[start:start + 500]
                marks = ",".join("?" * len(chunk))
                answered.update(k for (k,) in conn.execute(f"SELECT key FROM responses WHERE key IN ({marks})", chunk))
                held.update((k, (o, e)) for k, o, e in conn.execute(
                    f"SELECT key, owner, expires FROM leases WHERE key IN ({marks})", chunk))
            alive: dict[str, bool] = {}
            for key in keys:
                if key in answered:
                    claim.answered.append(key)
                    continue
                owner, expires = held.get(key, (self.owner, 0.0))
                if owner != self.owner and expires > now:
                    if owner not in alive:
                        alive[owner] = _alive(owner, self.host)
                    if alive[owner]:
                        claim.taken[key] = owner
                        continue
                claim.mine.append(key)
            conn.executemany("INSERT OR REPLACE INTO leases VALUES (?, ?, ?)",
                             [(k, self.owner, now + self.ttl_s) for k in claim.mine])
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return claim

    def renew(self) -> None:
        """Push back the expiry of every lease this run holds."""
        self.renewed = time.monotonic()
        self.cache.connection().execute("UPDATE leases SET expires = ? WHERE owner = ?",
                                        (time.time() + self.ttl_s, self.owner))

    def release(self) -> None:
        """Drop every lease this run still holds (requests it did not get answered)."""
        self.cache.connection().execute("DELETE FROM leases WHERE owner = ?", (self.owner,))
