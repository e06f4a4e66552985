"""Throughput of the LLM access layer against an OpenAI-compatible server (prints figures; not a test).

Scenario A: n requests (default 2,000) at concurrency 64 to a server answering after 500 ms: wall
time, ideal time (n × latency / concurrency), efficiency = ideal / wall and CPU time per request,
for gama_utils.llm.run (aiohttp transport, then the openai-SDK transport), for a bare asyncio +
semaphore loop over AsyncOpenAI, and for a plain sequential loop over the openai client (run on
--seq-n requests and extrapolated to n); then the time of a second, fully cached run.
Fault scenarios (local server only): (B) the server allows 1,200 requests per minute and answers
429 + Retry-After beyond it, 600 requests, with the limit configured (rpm=1200) and without it
(adaptive concurrency); (C) 5% of requests get a 429 and 5% a 500, 1,000 requests.

    .venv/bin/python benchmarks/bench_llm.py                       # spawns tests/fake_openai.py
    .venv/bin/python benchmarks/bench_llm.py --base-url http://localhost:8000/v1 --model Qwen/Qwen3-0.6B \
        --n 500 --concurrency 32 --latency-hint 2.0                # any OpenAI-compatible server
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import openai  # imported before any timing

from gama_utils import llm


def requests_for(spec: llm.ModelSpec, n: int, tag: str) -> list[llm.Request]:
    """n distinct one-line chat requests."""
    return [llm.Request(spec, messages=[{"role": "user", "content": f"{tag} question {i}: is this fair?"}])
            for i in range(n)]


def timed(fn, *args, **kwargs):
    """(result, wall seconds, CPU seconds of this process)."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - wall, time.process_time() - cpu


def line(label: str, n: int, wall: float, ideal: float, cpu: float, note: str = "") -> None:
    print(f"  {label:<44} n={n:>5}  wall {wall:7.2f} s  ideal {ideal:7.2f} s  efficiency {ideal / wall:5.3f}  "
          f"CPU {1000 * cpu / n:5.2f} ms/req{('  ' + note) if note else ''}", flush=True)


def bare_sdk(base_url: str, model: str, key: str, n: int, concurrency: int) -> None:
    """The reference point: asyncio + semaphore over AsyncOpenAI, nothing else."""
    async def main() -> None:
        client = openai.AsyncOpenAI(base_url=base_url, api_key=key, max_retries=0)
        gate = asyncio.Semaphore(concurrency)

        async def one(i: int) -> None:
            async with gate:
                await client.chat.completions.create(
                    model=model, messages=[{"role": "user", "content": f"bare question {i}: is this fair?"}])

        await asyncio.gather(*(one(i) for i in range(n)))
        await client.close()

    asyncio.run(main())


def sequential_sdk(base_url: str, model: str, key: str, n: int) -> None:
    """A plain loop over the synchronous openai client."""
    client = openai.OpenAI(base_url=base_url, api_key=key, max_retries=2)
    for i in range(n):
        client.chat.completions.create(model=model,
                                       messages=[{"role": "user", "content": f"seq question {i}: is this fair?"}])


def scenario_a(args, spec: llm.ModelSpec, key: str, cache_dir: Path) -> None:
    n, c, latency = args.n, args.concurrency, args.latency_hint
    ideal = n * latency / c
    print(f"\n(A) {n} requests, concurrency {c}, latency {latency} s -> ideal {ideal:.2f} s", flush=True)
    efficiencies = []
    for repeat in range(args.repeat):
        requests = requests_for(spec, n, f"A{repeat}")
        cache = llm.Cache(cache_dir / f"a{repeat}.sqlite")
        results, wall, cpu = timed(llm.run, requests, cache=cache, concurrency=c, progress=args.progress, desc="A")
        failed = sum(1 for r in results if r.error)
        line("gama_utils.llm.run (aiohttp transport)", n, wall, ideal, cpu, f"errors {failed}")
        efficiencies.append(ideal / wall)
    if args.repeat > 1:
        print(f"  {'  median efficiency over ' + str(args.repeat) + ' runs':<44} {statistics.median(efficiencies):.3f} "
              f"(min {min(efficiencies):.3f}, max {max(efficiencies):.3f})", flush=True)
    _, cached_wall, cached_cpu = timed(llm.run, requests, cache=cache, concurrency=c, progress=args.progress)
    print(f"  {'second run, fully cached':<44} n={n:>5}  wall {cached_wall:7.3f} s  "
          f"CPU {1e6 * cached_cpu / n:6.1f} us/req  (target < 1 s)", flush=True)
    if args.compare_sdk:
        sdk_spec = spec.model_copy(update={"transport": "sdk"})
        _, wall, cpu = timed(llm.run, requests_for(sdk_spec, n, "A-sdk"), cache=llm.Cache(cache_dir / "sdk.sqlite"),
                             concurrency=c, progress=args.progress, desc="A-sdk")
        line("gama_utils.llm.run (openai SDK transport)", n, wall, ideal, cpu)
        _, wall, cpu = timed(bare_sdk, spec.resolved_base_url(), spec.model, key, n, c)
        line("bare asyncio + semaphore over AsyncOpenAI", n, wall, ideal, cpu)
    m = args.seq_n
    _, wall, cpu = timed(sequential_sdk, spec.resolved_base_url(), spec.model, key, m)
    extrapolated = wall * n / m
    print(f"  {'plain sequential loop over openai.OpenAI':<44} n={m:>5}  wall {wall:7.2f} s; extrapolated to "
          f"n={n}: {extrapolated:8.1f} s; efficiency vs its own ideal (n x latency) "
          f"{m * latency / wall:5.3f}, vs the concurrent ideal {ideal / extrapolated:6.4f}  "
          f"CPU {1000 * cpu / m:5.2f} ms/req  (run on {m} requests, extrapolated)", flush=True)


def scenario_b(args, spec: llm.ModelSpec, server, cache_dir: Path) -> None:
    n, rpm = 600, 1200
    print(f"\n(B) {n} requests, server limit {rpm} requests/min (429 + Retry-After beyond), latency "
          f"{args.latency_hint} s -> ideal {n / (rpm / 60):.1f} s (target: all within 33 s, 429 on <= 5%)",
          flush=True)
    for label, limit in (("limit configured (rpm=1200)", rpm), ("no limit configured (adaptive)", None)):
        server.reset(latency=args.latency_hint, rpm=rpm, retry_after=1.0)
        time.sleep(1.1)
        requests = requests_for(spec, n, f"B-{limit}")
        results, wall, cpu = timed(llm.run, requests, cache=llm.Cache(cache_dir / f"b{limit}.sqlite"),
                                   concurrency=args.concurrency, rpm=limit, progress=args.progress, desc="B")
        stats = server.stats()
        answered = sum(1 for r in results if not r.error)
        n429 = stats["statuses"].get("429", 0)
        print(f"  {label:<34} answered {answered}/{n}  wall {wall:6.2f} s  429s {n429} "
              f"({100 * n429 / n:.1f}% of requests)  requests sent {stats['received']}  "
              f"concurrency cuts {results.stats['concurrency_cuts']}  CPU {1000 * cpu / n:.2f} ms/req", flush=True)


def scenario_c(args, spec: llm.ModelSpec, server, cache_dir: Path) -> None:
    n = 1000
    print(f"\n(C) {n} requests, 5% answered 429 (Retry-After 1 s), 5% answered 500, latency {args.latency_hint} s, "
          f"concurrency {args.concurrency} (target: all answered, none paid twice)", flush=True)
    server.reset(latency=args.latency_hint, p_429=0.05, p_500=0.05, retry_after=1.0, seed=7)
    requests = requests_for(spec, n, "C")
    results, wall, cpu = timed(llm.run, requests, cache=llm.Cache(cache_dir / "c.sqlite"),
                               concurrency=args.concurrency, progress=args.progress, desc="C")
    stats = server.stats()
    answered = sum(1 for r in results if not r.error)
    print(f"  answered {answered}/{n}  wall {wall:6.2f} s (ideal without faults {n * args.latency_hint / args.concurrency:.2f} s)  "
          f"requests sent {stats['received']}  statuses {stats['statuses']}  paid twice {stats['billed_twice']}  "
          f"retries {results.stats['retries']}  concurrency cuts {results.stats['concurrency_cuts']}  "
          f"CPU {1000 * cpu / n:.2f} ms/req", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base-url", help="an OpenAI-compatible server; default: spawn tests/fake_openai.py")
    parser.add_argument("--model", default="bench-model")
    parser.add_argument("--api-key-env", default=None, help="variable holding the server's key, if it needs one")
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency-hint", type=float, default=0.5,
                        help="server latency in seconds (sets the spawned server's latency; used for the ideal)")
    parser.add_argument("--repeat", type=int, default=1, help="repeat the main measurement of (A)")
    parser.add_argument("--seq-n", type=int, default=40, help="requests for the sequential loop (extrapolated)")
    parser.add_argument("--no-sdk", dest="compare_sdk", action="store_false", help="skip the SDK comparisons")
    parser.add_argument("--no-faults", dest="faults", action="store_false", help="skip scenarios B and C")
    parser.add_argument("--progress", action="store_true", help="show progress bars")
    args = parser.parse_args()

    server = None
    if args.base_url is None:
        from fake_openai import FakeOpenAI

        server = FakeOpenAI.spawn(latency=args.latency_hint)
        args.base_url = server.base_url
    key = os.environ.get(args.api_key_env, "") if args.api_key_env else ""
    spec = llm.resolve_model({"alias": "bench", "base_url": args.base_url, "model": args.model,
                              "api_key_env": args.api_key_env, "timeout_s": 120.0})
    llm.check_ready([spec])
    print(f"server {llm.redact_url(args.base_url)}, model {args.model}, python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs", flush=True)
    try:
        with tempfile.TemporaryDirectory(prefix="bench_llm_") as tmp:
            scenario_a(args, spec, key or "EMPTY", Path(tmp))
            if server is not None and args.faults:
                scenario_b(args, spec, server, Path(tmp))
                scenario_c(args, spec, server, Path(tmp))
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
