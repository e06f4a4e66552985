"""Collect target-model answers to the mirrored prompts (paper §3.3, §4.1; notebook 04_respond).

Each prompt goes as one user turn with the registry's decoding settings. Requests are sent in
a seeded random order that interleaves arms, pairs and models, so provider drift over the
hours of a run cannot line up with actor gender. Answers come from the llm layer's cache when
they exist, so a re-run or a resumed run pays for nothing twice; a prompt that changed since
it was cached has a new cache key and is asked again.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd

from gama_utils import llm
from gama_utils.core import run_folders
from gama_utils.core.schema import ARMS, OTHER_GROUP, PAIRS, RESPONSES, require

REFUSAL = re.compile(r"^\W*(i(?:'m| am) sorry,? but i (?:can(?:'|no)t|won't)|i can(?:'|no)t (?:help|assist) with|"
                     r"i(?:'m| am) (?:not able|unable) to (?:help|assist))", re.IGNORECASE)


def prompt_hash(prompt: str) -> str:
    """A short, stable fingerprint of a prompt's exact text."""
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:16]


def select_pairs(pairs: pd.DataFrame, track: str | Sequence[str] | None = None,
                 dimension: str | Sequence[str] | None = None, severity: str | Sequence[str] | None = None,
                 limit: int | None = None) -> pd.DataFrame:
    """Filter pairs by track / dimension / severity (a value or a list), then keep at most `limit`.

    `limit` takes pairs round-robin over dimensions (the first of each, then the second, ...), so
    a small run spans both tracks and every dimension.
    """
    require(pairs, PAIRS, "pairs")
    out = pairs
    for column, wanted in (("track", track), ("dimension", dimension), ("severity", severity)):
        if wanted is not None:
            values = [wanted] if isinstance(wanted, str) else list(wanted)
            unknown = sorted(set(values) - set(pairs[column]))
            if unknown:
                raise ValueError(f"filter {column}={unknown} matches no pair; present: {sorted(set(pairs[column]))}")
            out = out[out[column].isin(values)]
    return out if limit is None else _round_robin(out, limit)


def _round_robin(pairs: pd.DataFrame, limit: int) -> pd.DataFrame:
    """The first `limit` rows taken round-robin over dimensions (the first of each, then the second, ...)."""
    rank = pairs.groupby("dimension", sort=False).cumcount()
    return pairs.assign(_rank=rank).sort_values("_rank", kind="stable").head(limit).drop(columns="_rank")


def limit_responses(responses: pd.DataFrame, limit: int | None = None) -> pd.DataFrame:
    """The responses of at most `limit` pairs, chosen round-robin over dimensions as `select_pairs` does."""
    if limit is None:
        return responses
    kept = _round_robin(responses.drop_duplicates("pair_id")[["pair_id", "dimension"]], limit)["pair_id"]
    return responses[responses["pair_id"].isin(set(kept))].reset_index(drop=True)


def build_requests(pairs: pd.DataFrame, models: Iterable[str | dict | llm.ModelSpec],
                   arms: Sequence[str] = ("male", "female"), samples_per_prompt: int = 1,
                   seed: int = 0) -> list[llm.Request]:
    """One request per pair × model × arm × sample, in a seeded order that interleaves arms."""
    require(pairs, PAIRS, "pairs")
    bad = [a for a in arms if a not in ARMS]
    if bad:
        raise ValueError(f"unknown arm(s) {bad}; expected some of {list(ARMS)}")
    if samples_per_prompt < 1:
        raise ValueError(f"samples_per_prompt must be at least 1, got {samples_per_prompt}")
    specs = [llm.resolve_model(m) for m in models]
    requests = []
    for spec in specs:
        for pair in pairs.itertuples(index=False):
            for arm in arms:
                prompt = getattr(pair, f"prompt_{arm}")
                if not isinstance(prompt, str) or not prompt.strip():
                    raise ValueError(f"pair {pair.pair_id}: prompt_{arm} is empty")
                for sample in range(samples_per_prompt):
                    tag = {"role": "target", "pair_id": pair.pair_id, "track": pair.track, "dimension": pair.dimension,
                           "severity": pair.severity, "style": pair.style, "model": spec.alias,
                           "group": spec.group or OTHER_GROUP, "arm": arm,
                           "sample": sample, "prompt": prompt, "prompt_hash": prompt_hash(prompt)}
                    requests.append(llm.Request(spec, messages=[{"role": "user", "content": prompt}],
                                                sample=sample, tag=tag))
    random.Random(seed).shuffle(requests)
    return requests


COLLECTED = ("group", "cached", "usage_estimated", "response_model", "system_fingerprint")


def responses_frame(results: Sequence[llm.Result]) -> pd.DataFrame:
    """Results → the responses frame (schema.RESPONSES), one row per request, sorted by key.

    Beyond the schema (COLLECTED): group, cached, usage_estimated (the server's token usage was missing or
    implausible, so the tokens are the conservative bound the answer was charged), and the answering model's
    name and system_fingerprint as the server reported them.
    """
    rows = []
    for r in results:
        tag = r.tag
        rows.append({**{k: tag[k] for k in ("pair_id", "track", "dimension", "severity", "style", "model", "group",
                                           "arm", "sample", "prompt", "prompt_hash")},
                     "answer": r.text if r.text is not None else "", "reasoning": r.reasoning,
                     "finish_reason": r.finish_reason, "input_tokens": r.input_tokens,
                     "output_tokens": r.output_tokens, "latency_s": r.latency_s, "error": r.error,
                     "cached": r.cached, "simulated": bool(r.simulated), "usage_estimated": bool(r.usage_estimated),
                     "response_model": r.response_model, "system_fingerprint": r.system_fingerprint})
    frame = pd.DataFrame(rows, columns=[*RESPONSES, *COLLECTED])
    return frame.sort_values(["model", "pair_id", "arm", "sample"], kind="stable").reset_index(drop=True)


def collect_responses(pairs: pd.DataFrame, target_models: Iterable[str | dict | llm.ModelSpec],
                      arms: Sequence[str] = ("male", "female"), samples_per_prompt: int = 1, seed: int = 0,
                      cache: llm.Cache | str | None = None, concurrency: int | None = None,
                      budget: llm.Budget | None = None, progress: bool = True) -> pd.DataFrame:
    """Ask every target model every mirrored prompt; checks every model is ready before sending anything."""
    specs = [llm.resolve_model(m) for m in target_models]
    llm.check_ready(specs)
    requests = build_requests(pairs, specs, arms, samples_per_prompt, seed)
    results = llm.run(requests, cache=cache, concurrency=concurrency, budget=budget, progress=progress,
                      desc="04_respond")
    frame = responses_frame(results)
    frame.attrs["llm_stats"] = dict(results.stats)
    return frame


def answer_status(responses: pd.DataFrame) -> pd.Series:
    """Per response: ok, failed (no answer), empty, truncated (finish_reason length) or refused."""
    answer = responses["answer"].fillna("")
    status = pd.Series("ok", index=responses.index)
    status[answer.str.match(REFUSAL)] = "refused"
    status[responses["finish_reason"].eq("length")] = "truncated"
    status[answer.str.strip().eq("")] = "empty"
    status[responses["error"].notna()] = "failed"
    return status


def response_summary(responses: pd.DataFrame) -> pd.DataFrame:
    """Per model: n, failed / empty / truncated / refused counts, tokens, answers charged an estimate of their
    usage (`usage_estimated`: the server's was missing or implausible), cost (USD), latency (mean, p95, max).

    The cost is None for a model the registry cannot price (an imported model name, an inline spec).
    """
    frame = responses.assign(status=answer_status(responses))
    rows = []
    for model, group in frame.groupby("model", sort=False):
        tokens_in, tokens_out = int(group.input_tokens.fillna(0).sum()), int(group.output_tokens.fillna(0).sum())
        rows.append({"model": model, "n": len(group),
                     **{s: int((group.status == s).sum()) for s in ("failed", "empty", "truncated", "refused")},
                     "input_tokens": tokens_in, "output_tokens": tokens_out,
                     "usage_estimated": int(group["usage_estimated"].fillna(False).astype(bool).sum())
                     if "usage_estimated" in group else 0,
                     "cost_usd": _cost(model, tokens_in, tokens_out),
                     **_latency(group["latency_s"]), "simulated": bool(group.simulated.any())})
    return pd.DataFrame(rows)


LAYER_STATS = ("requests", "cached", "answered", "errors", "retries", "rate_limited", "server_errors",
               "transport_errors", "malformed", "usage_estimated", "wall_s")


def layer_stats(responses: pd.DataFrame) -> pd.DataFrame:
    """What the LLM layer met while collecting (retries, 429s, 5xx such as a server still loading, ...): one row."""
    stats = responses.attrs.get("llm_stats") or {}
    return pd.DataFrame([{k: stats[k] for k in LAYER_STATS if k in stats}])


def _latency(seconds: pd.Series) -> dict[str, float | None]:
    """Mean, 95th percentile and maximum latency in seconds (None when no latency was recorded)."""
    values = pd.to_numeric(seconds, errors="coerce").dropna()
    if values.empty:
        return {"mean_latency_s": None, "p95_latency_s": None, "max_latency_s": None}
    return {"mean_latency_s": round(float(values.mean()), 3), "p95_latency_s": round(float(values.quantile(0.95)), 3),
            "max_latency_s": round(float(values.max()), 3)}


def _cost(model: str, tokens_in: int, tokens_out: int) -> float | None:
    try:
        return llm.estimate_cost(llm.resolve_model(model), tokens_in, tokens_out)
    except ValueError:  # llm.ConfigError: not a registry alias
        return None


def side_by_side(responses: pd.DataFrame, n: int = 3, seed: int = 0) -> pd.DataFrame:
    """A few pairs with the male and female answers of the same model next to each other."""
    wide = responses[responses["sample"] == 0].pivot_table(index=["model", "pair_id", "track"], columns="arm",
                                                           values="answer", aggfunc="first")
    wide = wide.dropna(subset=[a for a in ("male", "female") if a in wide.columns])
    return wide.sample(min(n, len(wide)), random_state=seed).reset_index()


def benchmark_file(path: str | None = None):
    """The pairs file: the shipped data/gama_bench/pairs.jsonl unless a path is given."""
    from gama_utils.paths import BENCHMARK, resolve

    return resolve(path) if path else BENCHMARK / "pairs.jsonl"


def load_benchmark(path: str | None = None) -> pd.DataFrame:
    """The mirrored pairs: the shipped data/gama_bench/pairs.jsonl, or another pairs JSONL/CSV."""
    file = benchmark_file(path)
    if not file.exists():
        raise FileNotFoundError(f"{file} not found: build the benchmark with 01-03 or pass pairs_path")
    frame = pd.read_csv(file) if file.suffix == ".csv" else pd.read_json(file, lines=True, dtype=False)
    return require(frame, PAIRS, str(file))


def reasoning_summary(responses: pd.DataFrame) -> pd.DataFrame:
    """Per model: share of answers that came with thinking content, and its mean length in characters."""
    reasoning = responses["reasoning"].fillna("").astype(str)
    frame = responses.assign(has_reasoning=reasoning.str.len() > 0, reasoning_chars=reasoning.str.len())
    return frame.groupby("model", sort=False).agg(
        answers=("answer", "size"), with_reasoning=("has_reasoning", "mean"),
        mean_reasoning_chars=("reasoning_chars", lambda c: float(c[c > 0].mean()) if (c > 0).any() else 0.0),
        mean_answer_chars=("answer", lambda a: float(a.fillna("").str.len().mean()))).round(2)


IMPORT_COLUMNS = ("pair_id", "model", "arm", "answer")
MAX_PROBLEMS_SHOWN = 20


def import_responses(path: str, pairs: pd.DataFrame | None = None, simulated: bool = False) -> pd.DataFrame:
    """Answers collected elsewhere (CSV or JSONL: pair_id, model, arm, answer [, sample, reasoning,
    finish_reason, group]) as a responses frame joined to the benchmark's pairs, ready for 05_evaluate.

    Errors name the file, row and field (rows counted from 1): bad encoding, an empty file, a broken
    JSONL line, a missing column, an unknown pair_id or arm, an empty model, an answer that is not
    text, a sample that is not a whole number, rows that duplicate a model × pair × arm × sample
    once their values are read, a NUL byte in any field, a column named twice, and a model × pair × sample
    with only one of the male and female answers.
    """
    from gama_utils.collect.records import is_missing, read_records, whole_number
    from gama_utils.paths import resolve

    file = resolve(path)
    records = read_records(file)
    columns = set().union(*records)
    missing = [c for c in IMPORT_COLUMNS if c not in columns]
    if missing:
        raise ValueError(f"{file.name}: missing column(s) {missing}; needs {list(IMPORT_COLUMNS)}")
    pairs = load_benchmark() if pairs is None else pairs
    known = pairs.set_index("pair_id")
    problems: list[str] = []
    seen: dict[tuple, int] = {}
    rows = []
    for number, record in enumerate(records, start=1):
        where = f"{file.name} row {number}"
        pair_id, model, arm, answer = (record.get(c) for c in IMPORT_COLUMNS)
        sample = whole_number(record.get("sample", 0)) if not is_missing(record.get("sample")) else 0
        if pair_id not in known.index:
            problems.append(f"{where}: pair_id {pair_id!r} is not in the benchmark")
        if arm not in ARMS:
            problems.append(f"{where}: arm {arm!r} is not one of {list(ARMS)}")
        if not isinstance(model, str) or not model.strip():
            problems.append(f"{where}: model is empty" if is_missing(model)
                            else f"{where}: model {model!r} is not text")
        if is_missing(answer) and not isinstance(answer, str):
            problems.append(f"{where}: answer is missing (write an empty string for an empty answer)")
        elif not isinstance(answer, str):
            problems.append(f"{where}: answer {answer!r} is not text")
        if sample is None or sample < 0:
            problems.append(f"{where}: sample {record.get('sample')!r} is not a whole number ≥ 0")
        key = (model, pair_id, arm, sample)
        if key in seen:
            problems.append(f"{where}: duplicate of row {seen[key]} (model × pair × arm × sample "
                            f"{model!r}, {pair_id!r}, {arm!r}, {sample})")
        seen.setdefault(key, number)
        if problems:
            continue
        pair = known.loc[pair_id]
        prompt = pair[f"prompt_{arm}"]
        rows.append({"pair_id": pair_id, **{c: pair[c] for c in ("track", "dimension", "severity", "style")},
                     "model": str(model).strip(), "group": _text(record.get("group")) or OTHER_GROUP, "arm": arm,
                     "sample": sample, "prompt": prompt, "prompt_hash": prompt_hash(prompt), "answer": answer,
                     "reasoning": _text(record.get("reasoning")), "finish_reason": _text(record.get("finish_reason")),
                     "input_tokens": None, "output_tokens": None, "latency_s": None, "error": None, "cached": False,
                     "simulated": simulated, "usage_estimated": False, "response_model": None,
                     "system_fingerprint": None})
    problems = problems or _lone_arms(seen, file.name)
    if problems:
        more = len(problems) - MAX_PROBLEMS_SHOWN
        raise ValueError("; ".join(problems[:MAX_PROBLEMS_SHOWN]) + (f"; and {more} more" if more > 0 else ""))
    frame = pd.DataFrame(rows, columns=[*RESPONSES, *COLLECTED])
    frame.attrs["imported_from"] = {"file": file.name, "rows": len(rows), "sha256": run_folders.file_sha256(file),
                                    "models": sorted(frame["model"].unique().tolist())}
    return frame


def _lone_arms(seen: dict[tuple, int], name: str) -> list[str]:
    """Every model × pair × sample of an import that lacks the male or the female answer (the gap needs both)."""
    arms: dict[tuple, dict[str, int]] = {}
    for (model, pair_id, arm, sample), number in seen.items():
        arms.setdefault((model, pair_id, sample), {})[arm] = number
    problems = []
    for (model, pair_id, sample), found in arms.items():
        lacking = [a for a in ("male", "female") if a not in found]
        if lacking:
            problems.append(f"{name} row {min(found.values())}: arm: pair_id {pair_id!r} of model {model!r} "
                            f"(sample {sample}) has no {' and no '.join(lacking)} answer, only {sorted(found)}; a "
                            "gap compares the two arms of a pair, so add the missing answer or leave the pair out")
    return problems


def _text(value: object) -> str | None:
    """Optional text: None for a missing value or an empty string."""
    return value.strip() or None if isinstance(value, str) else None


# --- saving the answers: never over answers of another origin -----------------------------------------

ORIGIN_FILE = "responses.origin.json"
IDENTITY_FIELDS = ("client", "model", "base_url", "endpoint", "thinking", "decoding")


class OriginError(ValueError):
    """Saving would replace answers (or scores) of another origin; `replace=True` allows it."""


def answers_fingerprint(responses: pd.DataFrame) -> str:
    """SHA-256 of a model's answers (pair, arm, sample, answer), whatever their row order."""
    rows = sorted(json.dumps([str(r.pair_id), str(r.arm), int(r.sample), r.answer], ensure_ascii=False)
                  for r in responses.itertuples(index=False))
    return hashlib.sha256("\n".join(rows).encode("utf-8")).hexdigest()


def _identity(spec: dict) -> dict:
    return {field: spec.get(field) for field in IDENTITY_FIELDS}


def collected_origins(run: Path) -> dict[str, dict]:
    """Per model alias: how 04_respond collected the answers in run/responses.jsonl (spec, benchmark SHA-256 and,
    when saved by save_responses, the answers' fingerprint); older runs fall back to the manifest's 04 entry."""
    sidecar = run / ORIGIN_FILE
    if sidecar.exists():
        return json.loads(sidecar.read_text(encoding="utf-8"))
    manifest = run / "manifest.json"
    stage = json.loads(manifest.read_text(encoding="utf-8")).get("stages", {}).get("04_respond", {}) \
        if manifest.exists() else {}
    return {spec["alias"]: {"spec": spec, "benchmark_sha256": stage.get("benchmark_sha256")}
            for spec in stage.get("targets") or [] if isinstance(spec, dict) and "alias" in spec}


def origin_problems(existing: pd.DataFrame, records: dict[str, dict], specs: dict[str, llm.ModelSpec],
                    benchmark_sha256: str) -> list[str]:
    """What collecting `specs` on this benchmark would replace in `existing`, by reason, each with its models and
    their answer counts (empty: the same origin)."""
    found: dict[str, list[str]] = {}
    for model, group in existing.groupby("model", sort=True):
        record, n = records.get(model), len(group)
        before = _identity((record or {}).get("spec") or {})
        now = _identity(specs[model].public_dict()) if model in specs else before
        detail = ""
        if record is None:
            reason = "answers 04_respond did not collect here (imported or written by hand)"
        elif record.get("answers_sha256") and record["answers_sha256"] != answers_fingerprint(group):
            reason = "answers changed since 04_respond collected them (imported or edited)"
        elif model not in specs:
            reason = "answers of models this run does not ask (another model set)"
        elif now != before:
            reason = "answers collected with other settings"
            changed = [f"{k} {before[k]!r} → {now[k]!r}" for k in IDENTITY_FIELDS if before[k] != now[k]]
            detail = "; " + ", ".join(changed)
        elif record.get("benchmark_sha256") and record["benchmark_sha256"] != benchmark_sha256:
            reason = "answers collected on another benchmark file"
        else:
            continue
        found.setdefault(reason, []).append(f"{model!r} ({n}{detail})")
    return [f"{reason}: {', '.join(models)}" for reason, models in found.items()]


def check_responses_origin(run: Path, targets: Iterable[str | dict | llm.ModelSpec], pairs_path: str | None = None,
                           replace: bool = False) -> None:
    """Refuse (OriginError) to collect into a run whose answers came from elsewhere: imported answers, another
    model set, other settings or another benchmark file. A resumed run of the same origin passes."""
    path = Path(run) / "responses.jsonl"
    if replace or not path.exists() or not path.stat().st_size:
        return
    specs = {spec.alias: spec for spec in (llm.resolve_model(t) for t in targets)}
    benchmark = run_folders.file_sha256(benchmark_file(pairs_path))
    problems = origin_problems(run_folders.load(run, "responses"), collected_origins(Path(run)), specs, benchmark)
    if problems:
        raise OriginError(f"{path} holds answers of another origin, which this run would replace: "
                          + "; ".join(problems) + ". Pass replace=True (the parameter `replace` of 04_respond, or "
                          "--set replace=true) to replace them, or choose another run folder")


def save_responses(responses: pd.DataFrame, run: str | Path, targets: Iterable[str | dict | llm.ModelSpec] | None,
                   pairs_path: str | None = None, replace: bool = False) -> Path:
    """Write run/responses.jsonl and record how each collected model's answers were made.

    `targets` are the models 04_respond asked (None for answers imported with import_responses, whose file,
    rows and SHA-256 are then recorded in responses.imports.json for the report). Refused
    (OriginError) when answers of another origin would be replaced, unless `replace`: collected answers are
    checked as in check_responses_origin; imported ones must keep every answer already there unchanged.
    """
    folder = run_folders.run_dir(run)
    targets = list(targets) if targets is not None else None
    if targets is not None:
        check_responses_origin(folder, targets, pairs_path, replace)
    elif not replace and run_folders.exists(folder, "responses"):
        _check_kept(run_folders.load(folder, "responses"), responses, folder / "responses.jsonl")
    path = run_folders.save(responses, folder, "responses")
    records = {} if replace else {k: v for k, v in collected_origins(folder).items()
                                  if k in set(responses["model"])}
    if targets is not None:
        benchmark = run_folders.file_sha256(benchmark_file(pairs_path))
        for spec in (llm.resolve_model(t) for t in targets):
            answers = responses[responses["model"] == spec.alias]
            if len(answers):
                records[spec.alias] = {"spec": spec.public_dict(), "benchmark_sha256": benchmark,
                                       "answers_sha256": answers_fingerprint(answers)}
    run_folders.atomic_write(folder / ORIGIN_FILE, json.dumps(records, indent=2, ensure_ascii=False))
    if targets is None and "imported_from" in responses.attrs:
        record_import(folder, responses.attrs["imported_from"], replace)
    return path


IMPORTS_FILE = "responses.imports.json"


def record_import(folder: Path, imported: dict, replace: bool = False) -> Path:
    """Add an import (file name, rows, SHA-256, models) to run/responses.imports.json, once per file content."""
    path = folder / IMPORTS_FILE
    records = [] if replace or not path.exists() else json.loads(path.read_text(encoding="utf-8"))
    records = [r for r in records if r.get("sha256") != imported.get("sha256")] + [imported]
    return run_folders.atomic_write(path, json.dumps(records, indent=2, ensure_ascii=False))


def _check_kept(existing: pd.DataFrame, new: pd.DataFrame, path: Path) -> None:
    """Imported answers may be added to a run, never replace or drop the answers already in it."""
    key = ["model", "pair_id", "arm", "sample"]
    merged = existing[[*key, "answer"]].merge(new[[*key, "answer"]], on=key, how="left", suffixes=("", "_new"),
                                              indicator=True)
    lost = merged[(merged["_merge"] == "left_only") | (merged["answer"] != merged["answer_new"])]
    if len(lost):
        models = ", ".join(f"{m!r} ({n})" for m, n in lost.groupby("model").size().items())
        raise OriginError(f"{path} holds {len(lost)} answers these imported answers would drop or replace: {models}. "
                          "Pass replace=True to replace them, or save into another run folder")
