"""LLM access layer: model registry, async client with limits and retries, response cache, batches.

    from gama_utils import llm
    spec = llm.resolve_model("qwen3-8b")                      # or an inline dict / "openai-compatible:<url>#<model>"
    llm.check_ready([spec])                                   # ConfigError listing every problem, before any request
    request = llm.Request(spec, messages=[{"role": "user", "content": "Hi"}])
    results = llm.run([request], budget=llm.Budget(max_requests=100))
    llm.Cache().explain_miss(request)                         # why a request is not cached
    llm.batch.run_batch(requests)                             # OpenAI Batch API / vLLM batch files

Modules: registry (ModelSpec, configs/models.yaml), request (Request, Result, cache key, thinking split),
cache (SQLite), writer (cache writer thread), leases (no request paid twice across processes), limits
(Budget, rate limiter, resizable concurrency), pacing (per-model limits learned from the server),
classify (Retry-After, rate-limit headers, error bodies), redaction (API keys in every form a server
could echo them, blanked out before anything is written), transport (aiohttp / openai SDK), client
(run, arun, register_backend, and the Sender that sends what is not cached), structured (JSON answers
validated and re-asked), batch.
"""

from gama_utils.llm import batch
from gama_utils.llm.cache import Cache, CacheError
from gama_utils.llm.classify import retry_after_seconds
from gama_utils.llm.client import RunResults, arun, run
from gama_utils.llm.errors import BudgetExceeded, ConfigError, QuotaExhausted, RateLimited, RunStopped
from gama_utils.llm.limits import Budget, ConcurrencyLimit, RateLimiter
from gama_utils.llm.registry import (
    REGISTRY_PATH,
    ModelSpec,
    Provider,
    check_ready,
    client_kinds,
    estimate_cost,
    load_registry,
    redact_url,
    register_backend,
    register_provider,
    resolve_model,
)
from gama_utils.llm.request import Request, Result, build_body, cache_key, prepare, split_thinking, transcript

__all__ = [
    "REGISTRY_PATH", "Budget", "BudgetExceeded", "Cache", "CacheError", "ConcurrencyLimit", "ConfigError", "ModelSpec",
    "Provider", "QuotaExhausted", "RateLimited", "RateLimiter", "Request", "Result", "RunResults", "RunStopped", "arun",
    "batch", "build_body", "cache_key", "check_ready", "client_kinds", "estimate_cost", "load_registry", "prepare",
    "redact_url", "register_backend", "register_provider", "resolve_model", "retry_after_seconds",
    "run", "split_thinking", "transcript",
]
