"""Headless Chromium for tests: find it, and load a local file with no network (DOM dump, screenshot, console)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
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
