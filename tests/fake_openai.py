"""A local OpenAI-compatible server for tests and benchmarks (127.0.0.1 only, never the internet).

Serves chat completions, completions, files and batches (OpenAI paths under /v1 and Azure paths
under /openai, including /openai/deployments/<name>/...), with configurable latency, server-side
requests- and tokens-per-minute limits (token buckets holding one second's worth) answered like
real providers: at once, before any generation, by 429 with the time until the next request is
allowed (`Retry-After: 0.05`, `retry-after-ms: 50`), and x-ratelimit-{limit,remaining,reset}-
{requests,tokens} headers on every reply (`rate_headers`); `slots` makes a server that runs that
many requests at a time and queues the rest (llama.cpp with one slot: latency grows with the
queue); random 429s, 500s and truncated bodies (p_429, p_500, p_truncate), and scripted faults for
the next requests: "ok" (no fault), "429", "quota" (429 insufficient_quota), "500", "503", "400", "401",
"timeout" (answer only after `hang_s`), "drop" (close the connection), "truncate" (half the body, then
close), "malformed" (invalid JSON); or a fault
for every request containing some text (`fail_when`). It counts what it served: requests, statuses,
faults, answers per distinct request body (`billed_twice`), the highest number of requests in flight,
arrival times.

In-process (tests)::

    server = FakeOpenAI(latency=0.05).start(); server.enqueue("429", "500"); ...; server.stop()

In its own process (benchmarks; control over HTTP at /_control/{stats,config,reset})::

    python tests/fake_openai.py --port 0 --latency 0.5     # prints "READY <base_url>"
    handle = FakeOpenAI.spawn(latency=0.5)                  # the same from Python
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import logging
import math
import random
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter, deque
from collections.abc import Callable
from typing import Any

from aiohttp import web

FAULTS = ("ok", "429", "quota", "500", "503", "400", "401", "timeout", "drop", "truncate", "malformed")
DEFAULTS = {"latency": 0.0, "rpm": None, "tpm": None, "rate_headers": True, "slots": None, "p_429": 0.0, "p_500": 0.0,
            "p_truncate": 0.0, "retry_after": 1.0, "hang_s": 30.0, "seed": 0, "api_key": None, "batch_delay": 0.2,
            "quota_after": None}


def default_answer(body: dict[str, Any]) -> dict[str, Any]:
    """The deterministic answer: 'Answer to: <last user text>'; thinking for models named *-think-tags/-reasoning."""
    if "prompt" in body:
        prompt = body["prompt"]
    else:
        prompt = next((m.get("content", "") for m in reversed(body.get("messages", [])) if m.get("role") == "user"),
                      "")
    answer = f"Answer to: {str(prompt)[:200]}"
    model = str(body.get("model", ""))
    if model.endswith("-think-tags"):
        return {"content": f"<think>Let me weigh this.</think>\n{answer}"}
    if model.endswith("-reasoning"):
        return {"content": answer, "reasoning_content": "Let me weigh this."}
    return {"content": answer}


class FakeOpenAI:
    """The server; `base_url` ends in /v1, `azure_endpoint` is the bare origin."""

    def __init__(self, **config: Any):
        unknown = set(config) - set(DEFAULTS)
        if unknown:
            raise TypeError(f"unknown FakeOpenAI settings: {sorted(unknown)}")
        self.config = {**DEFAULTS, **config}
        self.responder: Callable[[dict[str, Any]], dict[str, Any]] = default_answer
        self.script: deque = deque()
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self.reset(**config)

    # ------------------------------------------------------------------ state
    def reset(self, **config: Any) -> FakeOpenAI:
        """Zero the counters, forget files and batches, clear the script, restore the default settings (+ `config`)."""
        self.config = {**DEFAULTS, **config}
        self.responder = default_answer
        self.script.clear()
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.rules: list[tuple[bytes, str]] = []
        self.received = 0
        self.statuses: Counter = Counter()
        self.faults: Counter = Counter()
        self.billed: Counter = Counter()
        self.answered = 0
        self.generation = getattr(self, "generation", 0) + 1
        self.in_flight = 0
        self.max_in_flight = 0
        self.arrivals: list[float] = []
        self.auth_headers_seen = 0
        self.models: Counter = Counter()
        self._rng = random.Random(self.config["seed"])
        self._buckets: dict[str, tuple[float, float]] = {}
        self._slots: asyncio.Semaphore | None = None
        return self

    def configure(self, **config: Any) -> None:
        """Change settings (latency, rpm, p_429, p_500, retry_after, hang_s, api_key, ...)."""
        self.config.update(config)

    def enqueue(self, *faults: str) -> None:
        """Script faults for the next requests, in order (one fault per request)."""
        for fault in faults:
            if fault not in FAULTS:
                raise ValueError(f"unknown fault {fault!r}; one of {FAULTS}")
            self.script.append(fault)

    def fail_when(self, text: str, fault: str) -> None:
        """Answer every request whose body contains `text` with `fault`."""
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; one of {FAULTS}")
        self.rules.append((json.dumps(text)[1:-1].encode(), fault))

    @property
    def billed_twice(self) -> int:
        """Distinct request bodies answered (200 sent) more than once."""
        return sum(1 for n in self.billed.values() if n > 1)

    def stats(self) -> dict[str, Any]:
        """The counters as a dict."""
        return {"received": self.received, "answered": self.answered, "statuses": dict(self.statuses),
                "faults": dict(self.faults), "billed_twice": self.billed_twice, "max_in_flight": self.max_in_flight,
                "in_flight": self.in_flight,
                "distinct_answered": len(self.billed), "batches": len(self.batches), "files": len(self.files)}

    # ------------------------------------------------------------------ lifecycle
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def azure_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def app(self) -> web.Application:
        app = web.Application(client_max_size=1024 ** 3)
        for prefix in ("/v1", "/openai", "/openai/v1"):
            app.router.add_post(prefix + "/chat/completions", self._completion)
            app.router.add_post(prefix + "/completions", self._completion)
            app.router.add_post(prefix + "/files", self._upload)
            app.router.add_get(prefix + "/files/{file_id}", self._file)
            app.router.add_get(prefix + "/files/{file_id}/content", self._file_content)
            app.router.add_post(prefix + "/batches", self._create_batch)
            app.router.add_get(prefix + "/batches/{batch_id}", self._get_batch)
            app.router.add_post(prefix + "/batches/{batch_id}/cancel", self._cancel_batch)
        app.router.add_post("/openai/deployments/{deployment}/chat/completions", self._completion)
        app.router.add_post("/openai/deployments/{deployment}/completions", self._completion)
        app.router.add_get("/_control/stats", self._control_stats)
        app.router.add_post("/_control/config", self._control_config)
        app.router.add_post("/_control/reset", self._control_reset)
        return app

    async def _serve(self, host: str, port: int) -> None:
        self._runner = web.AppRunner(self.app(), access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port, backlog=1024)
        await site.start()
        self.port = self._runner.addresses[0][1]

    def start(self, host: str = "127.0.0.1", port: int = 0) -> FakeOpenAI:
        """Serve from a background thread; returns self once listening."""
        logging.getLogger("aiohttp").setLevel(logging.CRITICAL)
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()

        def serve() -> None:
            asyncio.set_event_loop(self._loop)
            self._loop.run_until_complete(self._serve(host, port))
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=serve, name="fake-openai", daemon=True)
        self._thread.start()
        if not ready.wait(30):
            raise RuntimeError("fake OpenAI server did not start")
        return self

    def stop(self) -> None:
        """Stop serving and join the thread."""
        if self._loop is None:
            return
        async def shutdown() -> None:
            await self._runner.cleanup()
            others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in others:
                task.cancel()
            await asyncio.gather(*others, return_exceptions=True)

        future = asyncio.run_coroutine_threadsafe(shutdown(), self._loop)
        try:
            future.result(timeout=10)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._loop = None

    def __enter__(self) -> FakeOpenAI:
        return self.start() if self._loop is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @staticmethod
    def spawn(**config: Any) -> SpawnedFake:
        """Start a server in its own process (so it does not share the client's CPU core)."""
        return SpawnedFake(**config)

    # ------------------------------------------------------------------ completions
    def _bucket(self, name: str, per_minute: float, cost: float, take: bool) -> tuple[bool, float, float]:
        """A bucket refilled at per_minute/60 a second, holding one second's worth (at least 1): take `cost` if it can.

        Returns (admitted, level left, seconds until `cost` more would be admitted).
        """
        rate = per_minute / 60.0
        capacity = max(1.0, rate)
        now = time.monotonic()
        level, then = self._buckets.get(name, (capacity, now))
        level = min(capacity, level + (now - then) * rate)
        admitted = take and level >= min(cost, capacity)
        if admitted:
            level -= cost
        self._buckets[name] = (level, now)
        return admitted, level, max(0.0, min(cost, capacity) - level) / rate

    def _limits(self, raw: bytes, body: dict[str, Any]) -> tuple[bool, float | None, dict[str, str]]:
        """Apply the rpm/tpm buckets: (admitted, seconds until it would be, x-ratelimit-* headers)."""
        headers: dict[str, str] = {}
        wait: float | None = None
        admitted = True
        tokens = len(raw) // 4 + int(body.get("max_tokens") or body.get("max_completion_tokens") or 0)
        for name, limit, cost in (("requests", self.config["rpm"], 1.0), ("tokens", self.config["tpm"], tokens)):
            if not limit:
                continue
            ok, level, until = self._bucket(name, float(limit), cost, take=admitted)
            if admitted and not ok:
                admitted, wait = False, until
            rate = float(limit) / 60.0
            headers.update({f"x-ratelimit-limit-{name}": str(int(limit)),
                            f"x-ratelimit-remaining-{name}": str(max(0, math.floor(level))),
                            f"x-ratelimit-reset-{name}": _duration((max(1.0, rate) - level) / rate)})
        return admitted, wait, (headers if self.config["rate_headers"] else {})

    def _next_fault(self, raw: bytes) -> str | None:
        for text, fault in self.rules:
            if text in raw:
                return None if fault == "ok" else fault
        if self.script:
            fault = self.script.popleft()
            return None if fault == "ok" else fault
        limit = self.config["quota_after"]
        if limit is not None and self.answered >= limit:
            return "quota"
        draw = self._rng.random()
        if draw < self.config["p_429"]:
            return "429"
        if draw < self.config["p_429"] + self.config["p_500"]:
            return "500"
        if draw < self.config["p_429"] + self.config["p_500"] + self.config["p_truncate"]:
            return "truncate"
        return None

    def _authorized(self, request: web.Request) -> bool:
        key = self.config["api_key"]
        sent = request.headers.get("Authorization", "").removeprefix("Bearer ") or request.headers.get("api-key")
        if sent:
            self.auth_headers_seen += 1
        return key is None or sent == key

    def answer_body(self, body: dict[str, Any], chat: bool) -> dict[str, Any]:
        """The full completion object for a request body."""
        message = self.responder(body)
        content = message.get("content", "")
        prompt_text = json.dumps(body.get("messages", body.get("prompt", "")))
        usage = {"prompt_tokens": len(prompt_text) // 4 + 1, "completion_tokens": len(content) // 4 + 1}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        if chat:
            choice = {"index": 0, "message": {"role": "assistant", **message},
                      "finish_reason": message.get("finish_reason", "stop")}
            choice["message"].pop("finish_reason", None)
            kind = "chat.completion"
        else:
            choice = {"index": 0, "text": content, "finish_reason": message.get("finish_reason", "stop")}
            kind = "text_completion"
        return {"id": f"cmpl-{self.received}", "object": kind, "created": int(time.time()),
                "model": body.get("model"), "choices": [choice], "usage": usage}

    @staticmethod
    def _error(status: int, message: str, code: str, retry_after: float | None = None,
               headers: dict[str, str] | None = None) -> web.Response:
        headers = dict(headers or {})
        if retry_after is not None:
            headers["Retry-After"] = f"{retry_after:.3g}"
            headers["retry-after-ms"] = str(max(1, round(1000 * retry_after)))
        return web.json_response({"error": {"message": message, "type": code, "code": code}}, status=status,
                                 headers=headers)

    async def _completion(self, request: web.Request) -> web.StreamResponse:
        generation = self.generation            # requests left over from before a reset() are not counted
        self.received += 1
        self.arrivals.append(time.monotonic())
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self._complete(request)
        finally:
            if generation == self.generation:
                self.in_flight -= 1

    async def _complete(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        if not self._authorized(request):
            self.statuses[401] += 1
            return self._error(401, "Incorrect API key provided.", "invalid_api_key")
        body = json.loads(raw)
        if "deployment" in request.match_info:
            body["model"] = request.match_info["deployment"]
        self.models[body.get("model")] += 1
        chat = request.path.endswith("/chat/completions")
        admitted, wait, limit_headers = self._limits(raw, body)
        fault = self._next_fault(raw) if admitted else "429-limit"
        if fault:
            self.faults[fault] += 1
        if fault in ("429", "429-limit"):                          # rejected at once, before any generation
            self.statuses[429] += 1
            return self._error(429, "Rate limit reached for requests per min. Please try again later.",
                               "rate_limit_exceeded", wait if fault == "429-limit" else self.config["retry_after"],
                               limit_headers)
        if self.config["slots"]:
            if self._slots is None:
                self._slots = asyncio.Semaphore(int(self.config["slots"]))
            async with self._slots:
                return await self._generate(request, body, raw, chat, fault, limit_headers)
        return await self._generate(request, body, raw, chat, fault, limit_headers)

    async def _generate(self, request: web.Request, body: dict[str, Any], raw: bytes, chat: bool, fault: str | None,
                        limit_headers: dict[str, str]) -> web.StreamResponse:
        if self.config["latency"]:
            await asyncio.sleep(self.config["latency"])
        if fault == "quota":
            self.statuses[429] += 1
            return self._error(429, "You exceeded your current quota, please check your plan and billing details.",
                               "insufficient_quota")
        if fault in ("500", "503", "400", "401"):
            status = int(fault)
            self.statuses[status] += 1
            return self._error(status, f"simulated HTTP {status}", f"simulated_{status}",
                               self.config["retry_after"] if status == 503 else None)
        if fault == "drop":
            request.transport.abort()
            return web.Response(status=499)
        if fault == "timeout":
            await asyncio.sleep(self.config["hang_s"])
            if request.transport is None or request.transport.is_closing():
                return web.Response(status=499)
        payload = json.dumps(self.answer_body(body, chat)).encode()
        self.statuses[200] += 1
        self.billed[hashlib.sha256(raw).hexdigest()] += 1
        if fault == "malformed":
            return web.Response(body=payload[: len(payload) // 2], content_type="application/json")
        if fault == "truncate":
            response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
            response.content_length = len(payload)
            await response.prepare(request)
            await response.write(payload[: len(payload) // 2])
            request.transport.abort()
            return response
        self.answered += 1
        return web.Response(body=payload, content_type="application/json", headers=limit_headers)

    # ------------------------------------------------------------------ files and batches
    def _file_object(self, file_id: str, purpose: str = "batch") -> dict[str, Any]:
        return {"id": file_id, "object": "file", "bytes": len(self.files[file_id]), "created_at": int(time.time()),
                "filename": f"{file_id}.jsonl", "purpose": purpose, "status": "processed"}

    async def _upload(self, request: web.Request) -> web.Response:
        reader = await request.post()
        upload = reader["file"]
        data = upload.file.read() if hasattr(upload, "file") else bytes(upload)
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = data
        return web.json_response(self._file_object(file_id, str(reader.get("purpose", "batch"))))

    async def _file(self, request: web.Request) -> web.Response:
        file_id = request.match_info["file_id"]
        if file_id not in self.files:
            return self._error(404, f"no file {file_id}", "not_found")
        return web.json_response(self._file_object(file_id))

    async def _file_content(self, request: web.Request) -> web.Response:
        file_id = request.match_info["file_id"]
        if file_id not in self.files:
            return self._error(404, f"no file {file_id}", "not_found")
        return web.Response(body=self.files[file_id], content_type="application/octet-stream")

    async def _create_batch(self, request: web.Request) -> web.Response:
        body = await request.json()
        if body.get("input_file_id") not in self.files:
            return self._error(400, "input_file_id not found", "invalid_request")
        batch_id = f"batch_{len(self.batches) + 1}"
        now = int(time.time())
        batch = {"id": batch_id, "object": "batch", "endpoint": body["endpoint"], "errors": None,
                 "input_file_id": body["input_file_id"], "completion_window": body.get("completion_window", "24h"),
                 "status": "validating", "output_file_id": None, "error_file_id": None, "created_at": now,
                 "in_progress_at": None, "expires_at": now + 86400, "finalizing_at": None, "completed_at": None,
                 "failed_at": None, "expired_at": None, "cancelling_at": None, "cancelled_at": None,
                 "request_counts": {"total": 0, "completed": 0, "failed": 0}, "metadata": body.get("metadata")}
        self.batches[batch_id] = batch
        asyncio.get_running_loop().create_task(self._process_batch(batch))
        return web.json_response(batch)

    async def _process_batch(self, batch: dict[str, Any]) -> None:
        await asyncio.sleep(self.config["batch_delay"])
        lines = [json.loads(line) for line in self.files[batch["input_file_id"]].decode().splitlines() if line]
        batch.update(status="in_progress", in_progress_at=int(time.time()))
        batch["request_counts"]["total"] = len(lines)
        await asyncio.sleep(self.config["batch_delay"])
        outputs, errors = [], []
        for n, line in enumerate(lines):
            if batch["status"] == "cancelling":
                break
            body = line["body"]
            chat = line["url"].endswith("/chat/completions")
            if body.get("model") == "fail-in-batch":
                errors.append({"id": f"batch_req_{n}", "custom_id": line["custom_id"],
                               "response": {"status_code": 400, "request_id": f"req_{n}",
                                            "body": {"error": {"message": "simulated failure", "code": "x"}}},
                               "error": None})
                batch["request_counts"]["failed"] += 1
                continue
            self.billed[hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest() + "/batch"] += 1
            outputs.append({"id": f"batch_req_{n}", "custom_id": line["custom_id"],
                            "response": {"status_code": 200, "request_id": f"req_{n}",
                                         "body": self.answer_body(body, chat)}, "error": None})
            batch["request_counts"]["completed"] += 1
        for name, rows in (("output_file_id", outputs), ("error_file_id", errors)):
            if rows:
                file_id = f"file-{len(self.files) + 1}"
                self.files[file_id] = "".join(json.dumps(r) + "\n" for r in rows).encode()
                batch[name] = file_id
        final = "cancelled" if batch["status"] == "cancelling" else "completed"
        batch.update(status=final, completed_at=int(time.time()))

    async def _get_batch(self, request: web.Request) -> web.Response:
        batch = self.batches.get(request.match_info["batch_id"])
        if batch is None:
            return self._error(404, "no such batch", "not_found")
        return web.json_response(batch)

    async def _cancel_batch(self, request: web.Request) -> web.Response:
        batch = self.batches.get(request.match_info["batch_id"])
        if batch is None:
            return self._error(404, "no such batch", "not_found")
        if batch["status"] not in ("completed", "failed", "expired", "cancelled"):
            batch["status"] = "cancelling"
        return web.json_response(batch)

    # ------------------------------------------------------------------ control (for a spawned server)
    async def _control_stats(self, request: web.Request) -> web.Response:
        stats = self.stats()
        stats["arrivals"] = self.arrivals[-5000:]
        return web.json_response(stats)

    async def _control_config(self, request: web.Request) -> web.Response:
        updates = await request.json()
        for fault in updates.pop("script", []):
            self.enqueue(fault)
        self.configure(**updates)
        return web.json_response(self.config)

    async def _control_reset(self, request: web.Request) -> web.Response:
        self.reset(**(await request.json()))
        return web.json_response(self.config)


def _duration(seconds: float) -> str:
    """Seconds as OpenAI writes them in x-ratelimit-reset-*: '20ms', '1.5s', '6m0s'."""
    if seconds < 1.0:
        return f"{max(0, round(seconds * 1000))}ms"
    minutes, rest = divmod(seconds, 60.0)
    return f"{int(minutes)}m{rest:.0f}s" if minutes else f"{rest:.3g}s"


class SpawnedFake:
    """A FakeOpenAI in a child process, driven over HTTP; same base_url / stats / configure / reset."""

    def __init__(self, **config: Any):
        args = [sys.executable, __file__, "--port", "0"]
        for name, value in config.items():
            args += [f"--{name.replace('_', '-')}", str(value)]
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        if not line.startswith("READY "):
            self.process.kill()
            raise RuntimeError(f"fake server did not start: {line!r}")
        self.base_url = line.split()[1]
        self.origin = self.base_url.removesuffix("/v1")

    def _call(self, path: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
        data = json.dumps(payload).encode() if payload is not None else None
        request = urllib.request.Request(self.origin + path, data=data, method="POST" if data else "GET",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def stats(self) -> dict[str, Any]:
        return self._call("/_control/stats")

    def configure(self, **config: Any) -> None:
        self._call("/_control/config", config)

    def reset(self, **config: Any) -> None:
        self._call("/_control/reset", config)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()

    def __enter__(self) -> SpawnedFake:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    """Run a server in the foreground and print 'READY <base_url>'."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--host", default="127.0.0.1")
    for name, value in DEFAULTS.items():
        kind = float if isinstance(value, float) or value is None and name != "api_key" else type(value)
        if isinstance(value, bool):
            kind = lambda text: text.lower() in ("1", "true", "yes")  # noqa: E731
        parser.add_argument(f"--{name.replace('_', '-')}", type=(str if name == "api_key" else kind), default=value)
    args = vars(parser.parse_args())
    host, port = args.pop("host"), args.pop("port")
    server = FakeOpenAI(**args)
    logging.getLogger("aiohttp").setLevel(logging.CRITICAL)

    async def serve() -> None:
        await server._serve(host, port)
        print(f"READY {server.base_url}", flush=True)
        await asyncio.Event().wait()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
