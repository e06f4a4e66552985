"""Headless Chromium for tests: find it, load a local file with no network (DOM dump, screenshot, console), and
drive a page over the DevTools protocol (`devtools_page`: evaluate, wait, screenshot at a set viewport)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

CANDIDATES = ("chromium", "chromium-browser", "/usr/bin/chromium", "/usr/bin/chromium-browser")
# No sandbox (tests may run as root), no GPU, and nothing that reaches the network on its own.
OFFLINE_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-default-apps", "--disable-extensions", "--no-default-browser-check",
                 "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio")


def find_chromium() -> str | None:
    """Path of a headless-capable Chromium (env CHROMIUM, then chromium / chromium-browser), or None.

    A candidate counts only if `--version` answers, so Ubuntu's snap stub without snapd is passed over.
    """
    for candidate in (os.environ.get("CHROMIUM"), *CANDIDATES):
        path = candidate and shutil.which(candidate)
        if not path:
            continue
        try:
            out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            continue
        if out.returncode == 0 and "chrom" in out.stdout.lower():
            return path
    return None


@dataclass
class PageLoad:
    """What Chromium gave back for one headless load: stdout (the DOM for --dump-dom), stderr (its log)."""

    dom: str
    log: str
    returncode: int


def load_page(chromium: str, page: Path, *action: str, window: str = "1280,2400", timeout: float = 60) -> PageLoad:
    """Load file://<page> headless with a throwaway profile and console logging on stderr, doing `action`.

    `action` is e.g. ("--dump-dom",) or (f"--screenshot={png}",); --virtual-time-budget lets the page
    finish loading (and decoding its images) before the dump or the screenshot.
    """
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        args = [chromium, *OFFLINE_FLAGS, f"--user-data-dir={profile}", f"--window-size={window}",
                "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000", *action, page.resolve().as_uri()]
        out = subprocess.run(args, capture_output=True, text=True, timeout=timeout,
                             env={**os.environ, "HOME": profile})
    return PageLoad(out.stdout, out.stderr, out.returncode)


def console_messages(log: str) -> list[str]:
    """The page's console lines in a Chromium stderr log (lines tagged CONSOLE)."""
    return [line for line in log.splitlines() if ":CONSOLE" in line]


class DevToolsPage:
    """One Chromium tab driven over the DevTools protocol (aiohttp's websocket client, no extra dependency)."""

    def __init__(self, loop, websocket):  # type: ignore[no-untyped-def]
        self._loop, self._ws, self._id = loop, websocket, 0

    def call(self, method: str, **params: object) -> dict:
        """Send one DevTools command and return its result (events arriving meanwhile are skipped)."""
        self._id += 1
        number = self._id

        async def exchange() -> dict:
            await self._ws.send_json({"id": number, "method": method, "params": params})
            while True:
                message = await self._ws.receive_json()
                if message.get("id") == number:
                    if "error" in message:
                        raise RuntimeError(f"{method}: {message['error']}")
                    return message.get("result", {})

        return self._loop.run_until_complete(exchange())

    def evaluate(self, expression: str) -> object:
        """The value of a JavaScript expression in the page (promises awaited); a thrown error is raised here."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"page error: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, limit: float = 60.0) -> None:
        """Poll until `expression` is truthy in the page (RuntimeError after `limit` seconds)."""
        import time

        deadline = time.monotonic() + limit
        while not self.evaluate(expression):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the page never made {expression!r} true")
            time.sleep(0.1)

    def goto(self, page: Path) -> None:
        """Load a local file and wait until its document has loaded."""
        self.call("Page.navigate", url=page.resolve().as_uri())
        self.wait_for("document.readyState === 'complete'")

    def screenshot(self, path: Path) -> Path:
        """The viewport as a PNG file."""
        import base64

        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"]))
        return path


@contextmanager
def devtools_page(chromium: str, width: int = 1400, height: int = 900) -> Iterator[DevToolsPage]:
    """A headless Chromium with a throwaway profile, its one tab set to width × height CSS pixels."""
    import asyncio
    import json
    import time
    import urllib.request

    import aiohttp

    with tempfile.TemporaryDirectory(prefix="chromium-devtools-") as profile:
        args = [chromium, *OFFLINE_FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0",
                f"--window-size={width},{height}", "about:blank"]
        process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   env={**os.environ, "HOME": profile})
        loop = asyncio.new_event_loop()
        try:
            port_file = Path(profile) / "DevToolsActivePort"
            deadline = time.monotonic() + 60
            while not (port_file.exists() and port_file.read_text().strip()):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("Chromium did not open its DevTools port")
                time.sleep(0.1)
            port = port_file.read_text().split()[0]
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as answer:
                target = next(t for t in json.load(answer) if t.get("type") == "page")

            async def connect():  # type: ignore[no-untyped-def]
                session = aiohttp.ClientSession()
                return session, await session.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0)

            session, websocket = loop.run_until_complete(connect())
            page = DevToolsPage(loop, websocket)
            page.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                      mobile=False)
            try:
                yield page
            finally:
                loop.run_until_complete(websocket.close())
                loop.run_until_complete(session.close())
        finally:
            loop.close()
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
