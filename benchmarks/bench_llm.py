"""Throughput and behaviour under pressure of the LLM access layer (prints figures; not a test).

Against tests/fake_openai.py spawned in its own process (or any OpenAI-compatible server with
--base-url, scenario A only, plus the cached rerun):

(A) n requests (default 2,000) at 500 ms latency, with the default settings (no concurrency given)
    and with concurrency 64: wall, ideal (n × latency / 64 = 15.6 s), efficiency = ideal / wall,
    CPU per request; a bare aiohttp loop at 64 in flight on the same server, as this machine's
    ceiling (the issue set its targets beside one); then a second, fully cached run. Optionally
    (--compare-sdk) the openai-SDK transport and a bare asyncio + semaphore loop over AsyncOpenAI;
    a plain sequential loop, extrapolated.
(B) 600 requests to a server allowing 1,200 requests per minute (429 with Retry-After of tens of
    ms and retry-after-ms beyond it, x-ratelimit-* headers unless switched off): limit configured
    (rpm=1200); not configured, headers on; not configured, no headers (defaults, then
    concurrency 64); and a second run on the same cache reusing the learned limit.
    Targets: all answered; configured <= 31 s with no 429; not configured <= 33 s with 429s on
    at most 10% of the requests the server saw.
(C) 1,000 requests, 5% answered 429 (Retry-After 0.05 s) and 5% 500: all answered, none paid twice.
(D) a server that runs one request at a time and queues the rest (llama.cpp with one slot).
(E) two processes started at once on one cache: requests paid twice.
(F) a busy provider: 2,000 requests to a server allowing 1,200 requests per minute (no headers) that also
    answers 5% 429s (Retry-After 1 s), 5% 500s and 5% truncated bodies at any pace, not configured; then a
    second run on the same cache. Targets: 0 lost, <= 1.3 x the ideal (n / 20 per second = 100 s), the
    second run not slower.
(K) a child process SIGKILLed mid-run, then a rerun: requests paid twice vs in flight at the kill.

    .venv/bin/python benchmarks/bench_llm.py [--repeat 3] [--progress]
    .venv/bin/python benchmarks/bench_llm.py --base-url http://localhost:8000/v1 --model Qwen/Qwen3-0.6B \\
        --n 500 --latency-hint 2.0            # any OpenAI-compatible server (scenario A and the cached rerun)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import aiohttp
import openai  # imported before any timing

from gama_utils import llm

ROOT = Path(__file__).resolve().parent.parent


def requests_for(spec: llm.ModelSpec, n: int, tag: str) -> list[llm.Request]:
    """n distinct one-line chat requests."""
    return [llm.Request(spec, messages=[{"role": "user", "content": f"{tag} question {i}: is this fair?"}])
            for i in range(n)]


def timed(fn, *args, **kwargs):
    """(result, wall seconds, CPU seconds of this process)."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - wall, time.process_time() - cpu


def median_line(label: str, values: list[float], unit: str = "") -> None:
    if len(values) > 1:
        print(f"    median {label} over {len(values)} runs: {statistics.median(values):.3f}{unit} "
              f"(min {min(values):.3f}, max {max(values):.3f})", flush=True)


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


def bare_aiohttp(base_url: str, model: str, key: str, n: int, concurrency: int, tag: str) -> None:
    """The machine's ceiling: asyncio + semaphore over one aiohttp session, no cache, pacing or retries."""
    async def main() -> None:
        gate = asyncio.Semaphore(concurrency)
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {key}"}
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), headers=headers) as session:
            async def one(i: int) -> None:
                body = {"model": model, "messages": [{"role": "user", "content": f"{tag} question {i}: is this fair?"}]}
                async with gate, session.post(f"{base_url}/chat/completions", data=json.dumps(body).encode()) as r:
                    json.loads(await r.read())

            await asyncio.gather(*(one(i) for i in range(n)))

    asyncio.run(main())


def sequential_sdk(base_url: str, model: str, key: str, n: int) -> None:
    """A plain loop over the synchronous openai client."""
    client = openai.OpenAI(base_url=base_url, api_key=key, max_retries=2)
    for i in range(n):
        client.chat.completions.create(model=model,
                                       messages=[{"role": "user", "content": f"seq question {i}: is this fair?"}])


def scenario_a(args, spec: llm.ModelSpec, key: str, tmp: Path) -> None:
    n, latency = args.n, args.latency_hint
    ideal = n * latency / 64
    print(f"\n(A) {n} requests, latency {latency} s -> ideal {ideal:.2f} s at 64 in flight "
          f"(targets: default >= 0.90; concurrency 64 >= 0.99 of the bare aiohttp loop's efficiency, run beside it)",
          flush=True)
    ratios: list[float] = []
    for label, concurrency in (("default settings (no concurrency given)", None), ("concurrency 64", 64)):
        efficiencies, cpus, bare_efficiencies, bare_cpus = [], [], [], []
        for repeat in range(args.repeat):
            cache = llm.Cache(tmp / f"a-{concurrency}-{repeat}.sqlite")
            results, wall, cpu = timed(llm.run, requests_for(spec, n, f"A{concurrency}-{repeat}"), cache=cache,
                                       concurrency=concurrency, progress=args.progress, desc="A")
            failed = sum(1 for r in results if r.error)
            efficiencies.append(ideal / wall)
            cpus.append(1000 * cpu / n)
            model = results.stats["models"][spec.alias]
            print(f"  {label:<40} wall {wall:6.2f} s  efficiency {ideal / wall:5.3f}  "
                  f"CPU {1000 * cpu / n:4.2f} ms/req  "
                  f"errors {failed}  final in flight limit {model['concurrency']}", flush=True)
            if concurrency == 64:  # the machine's ceiling, measured right after ours under the same conditions
                _, wall, cpu = timed(bare_aiohttp, spec.resolved_base_url(), spec.model, key, n, 64, f"bare-{repeat}")
                bare_efficiencies.append(ideal / wall)
                bare_cpus.append(1000 * cpu / n)
                ratios.append(efficiencies[-1] / bare_efficiencies[-1])
                print(f"  {'reference: bare aiohttp loop, 64':<40} wall {wall:6.2f} s  efficiency {ideal / wall:5.3f}  "
                      f"CPU {1000 * cpu / n:4.2f} ms/req  (no cache, pacing or retries)", flush=True)
        median_line("efficiency", efficiencies)
        median_line("CPU", cpus, " ms/req")
        if bare_efficiencies:
            median_line("bare loop's efficiency", bare_efficiencies)
            median_line("bare loop's CPU", bare_cpus, " ms/req")
    print(f"  ours / bare loop at 64, run by run: {', '.join(f'{r:.3f}' for r in ratios)}; median "
          f"{statistics.median(ratios):.3f} (target >= 0.99)", flush=True)
    _, cached_wall, cached_cpu = timed(llm.run, requests_for(spec, n, f"A64-{args.repeat - 1}"), cache=cache,
                                       progress=args.progress)
    print(f"  {'second run, fully cached':<40} wall {cached_wall:6.3f} s  CPU {1e6 * cached_cpu / n:6.1f} us/req",
          flush=True)
    if args.compare_sdk:
        sdk_spec = spec.model_copy(update={"transport": "sdk"})
        _, wall, cpu = timed(llm.run, requests_for(sdk_spec, n, "A-sdk"), cache=llm.Cache(tmp / "sdk.sqlite"),
                             concurrency=64, progress=args.progress, desc="A-sdk")
        print(f"  {'llm.run, openai SDK transport, 64':<40} wall {wall:6.2f} s  efficiency {ideal / wall:5.3f}  "
              f"CPU {1000 * cpu / n:4.2f} ms/req", flush=True)
        _, wall, cpu = timed(bare_sdk, spec.resolved_base_url(), spec.model, key, n, 64)
        print(f"  {'bare asyncio + semaphore, AsyncOpenAI':<40} wall {wall:6.2f} s  efficiency {ideal / wall:5.3f}  "
              f"CPU {1000 * cpu / n:4.2f} ms/req", flush=True)
    if args.seq_n:
        m = args.seq_n
        _, wall, cpu = timed(sequential_sdk, spec.resolved_base_url(), spec.model, key, m)
        print(f"  {'plain sequential loop over openai.OpenAI':<40} {m} requests in {wall:.2f} s; extrapolated to "
              f"{n}: {wall * n / m:.0f} s (efficiency vs 64 in flight {ideal / (wall * n / m):.4f})", flush=True)


def scenario_b(args, spec: llm.ModelSpec, server, tmp: Path) -> None:
    n, rpm = 600, 1200
    print(f"\n(B) {n} requests, server limit {rpm}/min (burst 20), latency {args.latency_hint} s -> ideal "
          f"{n / (rpm / 60):.1f} s (targets: configured <= 31 s, no 429; not configured <= 33 s, 429 <= 10%)",
          flush=True)
    cases = [("limit configured (rpm=1200)", {"rpm": rpm}, True, "b-conf"),
             ("not configured, rate headers", {}, True, "b-headers"),
             ("not configured, no headers", {}, False, "b-plain"),
             ("not configured, no headers, concurrency 64", {"concurrency": 64}, False, "b-plain64"),
             ("rerun on the same cache: learned limit reused", {}, False, "b-plain")]
    for repeat in range(args.repeat):
        for n_case, (label, options, headers, cache_name) in enumerate(cases):
            server.reset(latency=args.latency_hint, rpm=rpm, rate_headers=headers)
            results, wall, cpu = timed(llm.run, requests_for(spec, n, f"B{repeat}-{n_case}"),
                                       cache=llm.Cache(tmp / f"{cache_name}-{repeat}.sqlite"),
                                       progress=args.progress, desc="B", **options)
            stats = server.stats()
            n429 = stats["statuses"].get("429", 0)
            model = results.stats["models"][spec.alias]
            print(f"  {label:<46} answered {sum(r.ok for r in results)}/{n}  wall {wall:6.2f} s  429s {n429} "
                  f"({100 * n429 / stats['received']:.1f}% of {stats['received']} received)  paid twice "
                  f"{stats['billed_twice']}  pace {60 * (model['rate_per_s'] or 0):.0f}/min ({model['limit_source']})  "
                  f"waited {model['rate_limit_wait_s']:.1f} s  CPU {1000 * cpu / n:.2f} ms/req", flush=True)


def scenario_c(args, spec: llm.ModelSpec, server, tmp: Path) -> None:
    n = 1000
    print(f"\n(C) {n} requests, 5% answered 429 (Retry-After 0.05 s), 5% answered 500, latency {args.latency_hint} s, "
          f"default settings (target: all answered, none paid twice)", flush=True)
    server.reset(latency=args.latency_hint, p_429=0.05, p_500=0.05, retry_after=0.05, seed=7)
    cache = llm.Cache(tmp / "c.sqlite")
    results, wall, cpu = timed(llm.run, requests_for(spec, n, "C"), cache=cache, progress=args.progress, desc="C")
    stats = server.stats()
    print(f"  answered {sum(r.ok for r in results)}/{n}  wall {wall:6.2f} s (ideal without faults "
          f"{n * args.latency_hint / 64:.2f} s)  requests sent {stats['received']}  statuses {stats['statuses']}  "
          f"paid twice {stats['billed_twice']}  retries {results.stats['retries']}  CPU {1000 * cpu / n:.2f} ms/req",
          flush=True)


def scenario_d(args, spec: llm.ModelSpec, server, tmp: Path) -> None:
    n, service = 60, 0.1
    print(f"\n(D) {n} requests to a server that runs one at a time ({service} s each) and queues the rest, "
          f"default settings -> ideal {n * service:.1f} s", flush=True)
    server.reset(latency=service, slots=1)
    results, wall, _ = timed(llm.run, requests_for(spec, n, "D"), cache=llm.Cache(tmp / "d.sqlite"),
                             progress=args.progress, desc="D")
    model = results.stats["models"][spec.alias]
    latencies = sorted(r.latency_s for r in results if r.ok)
    print(f"  answered {sum(r.ok for r in results)}/{n}  wall {wall:5.2f} s  sent {server.stats()['received']}  "
          f"in flight limit at the end {model['concurrency']} (cut {model['concurrency_cuts']} times)  "
          f"latency median {latencies[len(latencies) // 2]:.2f} s, max {latencies[-1]:.2f} s", flush=True)


def scenario_f(args, spec: llm.ModelSpec, server, tmp: Path) -> None:
    n, rpm, share = args.f_n, 1200, 0.05
    rate = rpm / 60
    ideal = n / rate
    needed = n / (1 - 3 * share)                     # every fault is sent again, and counts against the limit
    print(f"\n(F) a busy provider: {n} requests, server limit {rpm}/min, no rate headers, and {share:.0%} 429s "
          f"(Retry-After 1 s), {share:.0%} 500s and {share:.0%} truncated bodies at any pace, latency "
          f"{args.latency_hint} s, not configured -> ideal {ideal:.1f} s ({needed:.0f} requests at {rate:.0f}/s: "
          f"{needed / rate:.1f} s) (targets: 0 lost, <= 1.3 x ideal = {1.3 * ideal:.0f} s, a second run on the same "
          "cache not slower)", flush=True)
    path = tmp / "f.sqlite"
    for label, tag in (("first run", "F1"), ("second run, same cache (saved limit)", "F2")):
        server.reset(latency=args.latency_hint, rpm=rpm, rate_headers=False, p_429=share, p_500=share,
                     p_truncate=share, retry_after=1.0, seed=11)
        cache = llm.Cache(path)
        saved = cache.learned_limit(spec)
        results, wall, cpu = timed(llm.run, requests_for(spec, n, tag), cache=cache, progress=args.progress,
                                   desc="F")
        stats = server.stats()
        model = results.stats["models"][spec.alias]
        print(f"  {label:<38} answered {sum(r.ok for r in results)}/{n}  lost {sum(not r.ok for r in results)}  "
              f"wall {wall:6.2f} s = {wall / ideal:.2f} x ideal  sent {stats['received']}  statuses "
              f"{stats['statuses']}  paid twice {stats['billed_twice']}  rate cuts {model['rate_cuts']}  "
              f"pace at the end {60 * (model['rate_per_s'] or 0):.0f}/min ({model['limit_source']})  saved before "
              f"{saved['rpm'] if saved else None}, after {(cache.learned_limit(spec) or {}).get('rpm')}  "
              f"CPU {1000 * cpu / n:.2f} ms/req", flush=True)


CHILD = textwrap.dedent("""
    import sys
    from gama_utils import llm
    spec = llm.resolve_model({"alias": "bench", "base_url": sys.argv[1], "model": "bench-model", "timeout_s": 120})
    requests = [llm.Request(spec, [{"role": "user", "content": f"{sys.argv[3]} question {i}"}])
                for i in range(int(sys.argv[4]))]
    results = llm.run(requests, cache=sys.argv[2], progress=False)
    print(sum(r.ok for r in results), results.stats["answered"], results.stats["answered_elsewhere"], flush=True)
""")


def _child(server, path: Path, tag: str, n: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", CHILD, server.base_url, str(path), tag, str(n)], env=env,
                            stdout=subprocess.PIPE, text=True)


def scenario_e(args, spec: llm.ModelSpec, server, tmp: Path) -> None:
    n = 1000
    print(f"\n(E) two processes started at once on one cache, {n} requests each (the same ones), latency "
          f"{args.latency_hint} s", flush=True)
    server.reset(latency=args.latency_hint)
    started = time.perf_counter()
    children = [_child(server, tmp / "e.sqlite", "E", n) for _ in range(2)]
    outs = [c.communicate(timeout=600)[0].split() for c in children]
    stats = server.stats()
    print(f"  answered in each (ok, sent by it, taken from the other): {outs}  "
          f"wall {time.perf_counter() - started:.1f} s"
          f"  server answered {stats['answered']}  paid twice {stats['billed_twice']}", flush=True)


def scenario_k(args, spec: llm.ModelSpec, server, tmp: Path) -> None:
    n, kill_after = 2000, 4.0
    print(f"\n(K) {n} requests in a child process, SIGKILL after {kill_after} s, then a rerun on the same cache",
          flush=True)
    server.reset(latency=args.latency_hint)
    path = tmp / "k.sqlite"
    child = _child(server, path, "K", n)
    time.sleep(kill_after)
    os.kill(child.pid, signal.SIGKILL)
    at_kill = server.stats()
    child.wait()
    time.sleep(args.latency_hint + 0.5)                           # let the server finish what was in flight
    before = server.stats()
    requests = [llm.Request(spec, [{"role": "user", "content": f"K question {i}"}]) for i in range(n)]
    results, wall, _ = timed(llm.run, requests, cache=llm.Cache(path), progress=args.progress, desc="K")
    after = server.stats()
    print(f"  at the kill: server had answered {at_kill['answered']}, {at_kill['in_flight']} in flight; the server "
          f"then finished {before['answered'] - at_kill['answered']} of them (answered, never cached: "
          f"{before['answered'] - results.stats['cached']}); rerun: {results.stats['cached']} cached, sent "
          f"{after['received'] - before['received']}, all answered {all(r.ok for r in results)}; paid twice "
          f"{after['billed_twice']}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base-url", help="an OpenAI-compatible server; default: spawn tests/fake_openai.py")
    parser.add_argument("--model", default="bench-model")
    parser.add_argument("--api-key-env", default=None, help="variable holding the server's key, if it needs one")
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--latency-hint", type=float, default=0.5,
                        help="server latency in seconds (sets the spawned server's latency; used for the ideal)")
    parser.add_argument("--repeat", type=int, default=1, help="repeat scenarios A and B; medians are printed")
    parser.add_argument("--seq-n", type=int, default=0, help="requests for the sequential loop (extrapolated)")
    parser.add_argument("--compare-sdk", action="store_true", help="also the SDK transport and a bare SDK loop")
    parser.add_argument("--only", default="ABCDEFK", help="scenarios to run, e.g. AB")
    parser.add_argument("--f-n", type=int, default=2000, help="requests of scenario F (a busy provider)")
    parser.add_argument("--progress", action="store_true", help="show progress bars")
    args = parser.parse_args()

    server = None
    if args.base_url is None:
        sys.path.insert(0, str(ROOT / "tests"))
        from fake_openai import FakeOpenAI

        server = FakeOpenAI.spawn(latency=args.latency_hint)
        args.base_url = server.base_url
    key = os.environ.get(args.api_key_env, "") if args.api_key_env else ""
    spec = llm.resolve_model({"alias": "bench", "base_url": args.base_url, "model": args.model,
                              "api_key_env": args.api_key_env, "timeout_s": 120.0})
    llm.check_ready([spec])
    load = os.getloadavg()
    print(f"server {llm.redact_url(args.base_url)}, model {args.model}, python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", flush=True)
    try:
        with tempfile.TemporaryDirectory(prefix="bench_llm_") as tmp:
            if "A" in args.only:
                scenario_a(args, spec, key or "EMPTY", Path(tmp))
            for name, scenario in (("B", scenario_b), ("C", scenario_c), ("D", scenario_d), ("E", scenario_e),
                                   ("F", scenario_f), ("K", scenario_k)):
                if server is not None and name in args.only:
                    scenario(args, spec, server, Path(tmp))
    finally:
        if server is not None:
            server.stop()
    print(f"load average at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)


if __name__ == "__main__":
    main()
