"""Reading what a server said: Retry-After, rate-limit headers, error bodies, exhausted quotas."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

RETRY_STATUS = {408, 409, 425, 429}
_QUOTA_CODES = re.compile(r"insufficient_quota|exceeded_current_quota|billing_hard_limit|insufficient_balance|"
                          r"arrearage|quota_exhausted", re.IGNORECASE)
_QUOTA_TEXT = re.compile(r"exceeded your current quota|insufficient (quota|balance|credit|funds)|credit balance|"
                         r"out of credits|check your (plan and )?billing|account (is )?(suspended|in arrears)|"
                         r"余额不足|欠费", re.IGNORECASE)
_RETRY_HINT = re.compile(r"retry (in|after)|try again", re.IGNORECASE)
_TOO_LARGE = re.compile(r"request too large|requested \d+ tokens?, which exceeds|exceeds? the (maximum )?"
                        r"(context|token) (length|limit)", re.IGNORECASE)
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from retry-after-ms / Retry-After (seconds or HTTP date); None if absent."""
    value = headers.get("retry-after-ms")
    if value:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


def duration_seconds(text: str | None) -> float | None:
    """'6m0s', '1.5s', '20ms' or a plain number of seconds → seconds; None if unreadable."""
    if not text:
        return None
    try:
        return max(0.0, float(text))
    except ValueError:
        parts = _DURATION.findall(text)
        return sum(float(n) * _UNIT_S[unit] for n, unit in parts) if parts else None


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text else None
    except ValueError:
        return None


@dataclass(slots=True)
class RateHeaders:
    """The x-ratelimit-* headers of one reply (OpenAI-compatible): limits per minute, remaining, reset (s)."""

    limit_requests: float | None
    remaining_requests: float | None
    reset_requests: float | None
    limit_tokens: float | None
    remaining_tokens: float | None
    reset_tokens: float | None


def rate_headers(headers: Mapping[str, str]) -> RateHeaders | None:
    """The reply's x-ratelimit-* headers, or None when it has none."""
    limit = headers.get("x-ratelimit-limit-requests")
    tokens = headers.get("x-ratelimit-limit-tokens")
    if limit is None and tokens is None:
        return None
    return RateHeaders(_number(limit), _number(headers.get("x-ratelimit-remaining-requests")),
                       duration_seconds(headers.get("x-ratelimit-reset-requests")), _number(tokens),
                       _number(headers.get("x-ratelimit-remaining-tokens")),
                       duration_seconds(headers.get("x-ratelimit-reset-tokens")))


def error_fields(raw: bytes) -> tuple[dict[str, Any], str]:
    """The error object and message of an error body (OpenAI, Gemini-style list, plain text)."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return {}, raw[:300].decode("utf-8", "replace").strip()
    if isinstance(data, list) and data and isinstance(data[0], dict):
        data = data[0]
    if not isinstance(data, dict):
        return {}, str(data)[:300]
    error = data.get("error", data)
    if isinstance(error, str):
        return {"message": error}, error
    if not isinstance(error, dict):
        return {}, str(error)[:300]
    message = error.get("message") or error.get("msg") or data.get("message") or data.get("detail") or ""
    return error, str(message)


def is_quota_exhausted(status: int, headers: Mapping[str, str], error: dict[str, Any], message: str) -> bool:
    """True when a 402/429 means the account has no quota or credit left (retrying cannot help)."""
    if status == 402:
        return True
    if status != 429:
        return False
    if _QUOTA_CODES.search(f"{error.get('code') or ''} {error.get('type') or ''} {error.get('status') or ''}"):
        return True
    if retry_after_seconds(headers) is not None or _RETRY_HINT.search(message):
        return False
    return bool(_QUOTA_TEXT.search(message))


def is_too_large(message: str) -> bool:
    """True when a 429 says this one request is larger than the limit itself (waiting cannot help)."""
    return bool(_TOO_LARGE.search(message))
