"""Exceptions of the LLM access layer; their messages never contain an API key."""

from __future__ import annotations

from typing import Any


class ConfigError(ValueError):
    """A model cannot be used as configured (unknown alias, missing key variable, unreachable URL, ...)."""

    def __init__(self, problems: list[str] | str):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__(self.problems[0] if len(self.problems) == 1 else
                         f"{len(self.problems)} model configuration problems:\n"
                         + "\n".join(f"  - {p}" for p in self.problems))


class RunStopped(RuntimeError):
    """A run stopped early; answers received so far are in the cache and in `results`."""

    def __init__(self, message: str, results: list[Any] | None = None):
        super().__init__(message)
        self.results = results or []


class BudgetExceeded(RunStopped):
    """The next request would overspend the run's Budget, so nothing more was sent."""


class QuotaExhausted(RunStopped):
    """The provider says the account's quota or credit is used up; retrying cannot help."""


class RateLimited(RunStopped):
    """The provider answered only 429s for longer than the run may wait (max_rate_limit_wait_s)."""
