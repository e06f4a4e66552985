"""A local API that is not OpenAI-compatible, for the provider plug-in's tests (and the CONTRIBUTING recipe).

It takes {"model_name", "input": {"system", "turns": [{"who", "text"}]}, "generation": {"max_new_tokens"}} at
POST /v2/generate with the key in X-Api-Key, and answers {"output": {"text", "stop"}, "meter": {"tokens_in",
"tokens_out"}}: nothing of OpenAI's shape. `faults` lists HTTP statuses to answer with first.
"""

from __future__ import annotations

import asyncio
import threading

from aiohttp import web

KEY = "other-secret"


class OtherServer:
    """A small local API with its own request and response shape, a key header, and faults on demand."""

    def __init__(self) -> None:
        self.received: list[dict] = []
        self.faults: list[int] = []
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    async def _generate(self, request: web.Request) -> web.Response:
        if request.headers.get("X-Api-Key") != KEY:
            return web.json_response({"problem": "bad key"}, status=401)
        body = await request.json()
        self.received.append(body)
        if self.faults:
            return web.json_response({"problem": "busy"}, status=self.faults.pop(0))
        turns = body["input"]["turns"]
        text = f"echo: {turns[-1]['text']}"
        return web.json_response({"output": {"text": text, "stop": "done"},
                                  "meter": {"tokens_in": 7, "tokens_out": 1000}})

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_post("/v2/generate", self._generate)
        self._runner = web.AppRunner(app)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    def start(self) -> OtherServer:
        self._thread.start()
        self._ready.wait(10)
        return self

    @property
    def base_url(self) -> str:
        """Where the API listens."""
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
