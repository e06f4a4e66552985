"""Agreement of an evaluator (by default the lexicon) with hand-scored answers, per metric (issue 16, point 7).

`python -m gama_utils.judge.lexicon_agreement` reads tests/data/hand_scored/answers.jsonl, scores
every answer with the lexicon evaluator and prints the agreement; `--write` stores it in
data/lexicons/agreement.json with the lexicon version it was measured on. Per metric:
Puni./Ther. counts (Pearson and Spearman r, mean absolute and signed difference, and how many
hand-marked terms the judge finds), Sev. (exact and within-1 agreement, MAE, Spearman), the
three rates (accuracy, Cohen's kappa, confusion counts), blame in three classes, and the
ordering check: over every (harsh, gentle) pair of answers whose hand scores differ, how often
the judge orders the two the same way.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import subprocess
from collections.abc import Callable, Sequence
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError
from scipy import stats
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.proportion import proportion_confint

from gama_utils.core.metrics import PAPER_METRIC_KEYS, metrics
from gama_utils.core.rubric import evaluator_model
from gama_utils.judge import lexicon
from gama_utils.judge.lexicon import evaluate_text, term_spans
from gama_utils.paths import LEXICONS, ROOT

REFERENCE = ROOT / "tests" / "data" / "hand_scored" / "answers.jsonl"
DEVELOPMENT = ROOT / "tests" / "data" / "lexicon_dev" / "answers.jsonl"
AGREEMENT_FILE = LEXICONS / "agreement.json"
STYLES = ("harsh", "firm", "mixed", "gentle", "neutral", "refusal", "sides_with_actor")
RECORD_FIELDS = ("id", "style_of_answer", "answer", "scores")
ORDERED_STYLES = ("harsh", "gentle")
BLAME = ("full", "partial", "none")
N_BOOT = 2000
LEVEL = 0.95
INTERVALS = (f"{LEVEL:.0%} intervals (ci): Clopper-Pearson for accuracy, exact and within_1; percentile bootstrap over "
             f"the answers ({N_BOOT} resamples, seed 0) for pearson_r, spearman_r, kappa, mae, mean_abs_diff and "
             "mean_signed_diff")
Judge = Callable[[str], dict]
METRIC_VALUES: dict[str, Callable[[dict], float]] = {
    "puni": lambda s: len(s["punitive_terms"]), "ther": lambda s: len(s["therapeutic_terms"]),
    "sev": lambda s: s["severity_rating"], "emp_agg": lambda s: float(s["empathizes_with_actor"]),
    "instr": lambda s: float(s["instructional_or_accusatory"]),
    "full_bl": lambda s: float(s["blame_attribution"] == "full"),
}


class ScoredAnswerError(ValueError):
    """A hand-scored record is malformed; the message names the file, line and field."""


def load_scored(path: Path = REFERENCE) -> list[dict]:
    """Hand-scored records (id, style_of_answer, answer, scores), each checked before anything is measured."""
    records: list[dict] = []
    seen: set[str] = set()
    with Path(path).open(encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, 1):
            if line.strip():
                records.append(_checked(line, f"{path}:{line_no}", seen))
    if not records:
        raise ScoredAnswerError(f"{path}: no records")
    return records


def _checked(line: str, where: str, seen: set[str]) -> dict:
    """One record, or a ScoredAnswerError naming `where` (file:line) and the field at fault."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as err:
        raise ScoredAnswerError(f"{where}: not JSON ({err.msg})") from None
    missing = [f for f in RECORD_FIELDS if f not in record]
    if missing:
        raise ScoredAnswerError(f"{where}: missing field(s) {', '.join(missing)}")
    if record["id"] in seen:
        raise ScoredAnswerError(f"{where}: duplicate id {record['id']!r}")
    seen.add(record["id"])
    if record["style_of_answer"] not in STYLES:
        raise ScoredAnswerError(f"{where}: style_of_answer {record['style_of_answer']!r} is not one of {STYLES}")
    if not isinstance(record["answer"], str) or not record["answer"].strip():
        raise ScoredAnswerError(f"{where}: answer is empty or not text")
    try:
        evaluator_model().model_validate(record["scores"])
    except ValidationError as err:
        errors = [e for e in err.errors() if not (e["type"] == "missing" and e["loc"][0] in _unscored_fields())]
        if errors:
            fields = "; ".join(f"scores.{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors)
            raise ScoredAnswerError(f"{where}: {fields}") from None
    for field in ("punitive_terms", "therapeutic_terms"):
        located = locate_terms(record["answer"], record["scores"][field], exact_case=True)
        lost = [t for t, span in zip(record["scores"][field], located) if span is None]
        if lost:
            raise ScoredAnswerError(f"{where}: scores.{field}: {lost} do not occur in the answer")
    return record


def _unscored_fields() -> set[str]:
    """Fields of metrics registered beyond the paper's six, which the hand scores (made for the six) may lack."""
    return {m.field.name for m in metrics() if m.key not in PAPER_METRIC_KEYS}


def locate_terms(answer: str, terms: Sequence[str], exact_case: bool = False,
                 prefer: Sequence[tuple[int, int] | None] = ()) -> list[tuple[int, int] | None]:
    """Each term's own whole-word occurrence in `answer` (longest terms claim first; None when none is free).

    A term listed as text may occur more than once; it takes the first free occurrence that
    overlaps a span of `prefer` (the other judge's terms), else the first free one.
    """
    taken: list[tuple[int, int]] = []
    spans: list[tuple[int, int] | None] = [None] * len(terms)
    flags = 0 if exact_case else re.IGNORECASE
    for i in sorted(range(len(terms)), key=lambda i: -len(terms[i])):
        words = [re.escape(w) for w in terms[i].replace("’", "'").split()]
        pattern = r"(?<!\w)" + r"\s+".join(words).replace("'", "['’]") + r"(?!\w)"
        free = [m.span() for m in (re.finditer(pattern, answer, flags) if words else ())
                if all(m.end() <= a or m.start() >= b for a, b in taken)]
        chosen = next((span for span in free if _overlaps(span, list(prefer))), free[0] if free else None)
        if chosen:
            spans[i] = chosen
            taken.append(chosen)
    return spans


def _overlaps(span: tuple[int, int] | None, others: list[tuple[int, int] | None]) -> bool:
    return span is not None and any(o is not None and o[0] < span[1] and span[0] < o[1] for o in others)


def _number(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def resamples(n: int, n_boot: int, seed: int | np.random.Generator = 0) -> np.ndarray:
    """Row indices of `n_boot` bootstrap resamples of `n` items (n_boot × n)."""
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    return rng.integers(0, n, size=(n_boot, n))


def _interval(values: np.ndarray) -> list[float] | None:
    """The central LEVEL percentile interval of bootstrap values (NaN resamples left out); None without any."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if not values.size:
        return None
    tail = 100 * (1 - LEVEL) / 2
    return [float(v) for v in np.percentile(values, [tail, 100 - tail])]


def exact_interval(successes: int, n: int, level: float = LEVEL) -> list[float] | None:
    """Clopper-Pearson `level` interval of a share successes / n (None for n = 0)."""
    if n == 0:
        return None
    low, high = proportion_confint(int(successes), int(n), alpha=1 - level, method="beta")
    return [float(low), float(high)]


def rowwise_pearson(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson r of each row pair of two (k × n) arrays; NaN where a row is constant."""
    a, b = a - a.mean(axis=1, keepdims=True), b - b.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (a * b).sum(axis=1) / np.sqrt((a ** 2).sum(axis=1) * (b ** 2).sum(axis=1))


def rowwise_kappa(hand: np.ndarray, judge: np.ndarray, k: int) -> np.ndarray:
    """Cohen's κ of each row pair of two (m × n) arrays of category codes 0..k−1; NaN where it is undefined."""
    n = hand.shape[1]
    table = np.einsum("mia,mib->mab", np.eye(k)[hand], np.eye(k)[judge])
    observed = np.trace(table, axis1=1, axis2=2) / n
    expected = (table.sum(axis=2) * table.sum(axis=1)).sum(axis=1) / n ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(expected < 1, (observed - expected) / (1 - expected), np.nan)


def _pairs(hand: Sequence[float] | np.ndarray, judge: Sequence[float] | np.ndarray, n_boot: int,
           seed: int | np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    h, j = np.asarray(hand, dtype=float), np.asarray(judge, dtype=float)
    rows = resamples(len(h), n_boot, seed)
    return h[rows], j[rows]


def count_agreement(hand: Sequence[float], judge: Sequence[float], n_boot: int = 0,
                    seed: int | np.random.Generator = 0) -> dict:
    """Pearson and Spearman r, mean absolute and signed (judge − hand) difference, and both means.

    With `n_boot` > 0 the figures' bootstrap intervals over the items are added under "ci".
    """
    h, j = np.asarray(hand, dtype=float), np.asarray(judge, dtype=float)
    constant = len(h) < 2 or h.std() == 0 or j.std() == 0
    out: dict[str, Any] = {
        "n": len(h),
        "pearson_r": None if constant else _number(stats.pearsonr(h, j)[0]),
        "spearman_r": None if constant else _number(stats.spearmanr(h, j)[0]),
        "mean_abs_diff": _number(np.abs(j - h).mean()), "mean_signed_diff": _number((j - h).mean()),
        "hand_mean": _number(h.mean()), "judge_mean": _number(j.mean()),
    }
    if n_boot:
        bh, bj = _pairs(h, j, n_boot, seed)
        out["ci"] = {"pearson_r": _interval(rowwise_pearson(bh, bj)),
                     "spearman_r": _interval(rowwise_pearson(stats.rankdata(bh, axis=1), stats.rankdata(bj, axis=1))),
                     "mean_abs_diff": _interval(np.abs(bj - bh).mean(axis=1)),
                     "mean_signed_diff": _interval((bj - bh).mean(axis=1))}
    return out


def rating_agreement(hand: Sequence[float], judge: Sequence[float], n_boot: int = 0,
                     seed: int | np.random.Generator = 0) -> dict:
    """Severity: exact and within-1 agreement, MAE, Spearman r, and the hand × judge table (levels 1-5).

    With `n_boot` > 0 the intervals are added under "ci" (exact ones for the two shares).
    """
    h, j = np.asarray(hand), np.asarray(judge)
    constant = len(h) < 2 or h.std() == 0 or j.std() == 0
    out: dict[str, Any] = {
        "n": len(h), "exact": _number((h == j).mean()), "within_1": _number((np.abs(h - j) <= 1).mean()),
        "mae": _number(np.abs(h - j).mean()), "mean_signed_diff": _number((j - h).mean()),
        "spearman_r": None if constant else _number(stats.spearmanr(h, j)[0]),
        "hand_mean": _number(h.mean()), "judge_mean": _number(j.mean()),
        "table": {str(a): {str(b): int(((h == a) & (j == b)).sum()) for b in range(1, 6)} for a in range(1, 6)},
    }
    if n_boot:
        bh, bj = _pairs(h, j, n_boot, seed)
        out["ci"] = {"exact": exact_interval(int((h == j).sum()), len(h)),
                     "within_1": exact_interval(int((np.abs(h - j) <= 1).sum()), len(h)),
                     "mae": _interval(np.abs(bj - bh).mean(axis=1)),
                     "mean_signed_diff": _interval((bj - bh).mean(axis=1)),
                     "spearman_r": _interval(rowwise_pearson(stats.rankdata(bh, axis=1), stats.rankdata(bj, axis=1)))}
    return out


def _kappa(hand: Sequence, judge: Sequence, labels: Sequence) -> float | None:
    if len(set(hand) | set(judge)) < 2:
        return None  # one label only: kappa is undefined
    return _number(cohen_kappa_score(list(hand), list(judge), labels=list(labels)))


def _kappa_interval(hand: Sequence, judge: Sequence, labels: Sequence, n_boot: int,
                    seed: int | np.random.Generator) -> list[float] | None:
    code = {label: i for i, label in enumerate(labels)}
    h, j = np.array([code[x] for x in hand]), np.array([code[x] for x in judge])
    rows = resamples(len(h), n_boot, seed)
    return _interval(rowwise_kappa(h[rows], j[rows], len(labels)))


def rate_agreement(hand: Sequence[float], judge: Sequence[float], n_boot: int = 0,
                   seed: int | np.random.Generator = 0) -> dict:
    """A yes/no metric (booleans or 0/1): accuracy, Cohen's kappa, the four confusion counts and both rates.

    With `n_boot` > 0: "ci" with the exact interval of the accuracy and the bootstrap interval of κ.
    """
    h, j = [bool(x) for x in hand], [bool(x) for x in judge]
    both = sum(a and b for a, b in zip(h, j))
    neither = sum(not a and not b for a, b in zip(h, j))
    out: dict[str, Any] = {
        "n": len(h), "accuracy": _number((both + neither) / len(h)), "kappa": _kappa(h, j, [False, True]),
        "both_true": both, "judge_only": sum(b and not a for a, b in zip(h, j)),
        "hand_only": sum(a and not b for a, b in zip(h, j)), "both_false": neither,
        "hand_rate": _number(sum(h) / len(h)), "judge_rate": _number(sum(j) / len(j)),
    }
    if n_boot:
        out["ci"] = {"accuracy": exact_interval(both + neither, len(h)),
                     "kappa": _kappa_interval(h, j, [False, True], n_boot, seed)}
    return out


def blame_agreement(hand: Sequence[str], judge: Sequence[str], n_boot: int = 0,
                    seed: int | np.random.Generator = 0) -> dict:
    """Blame in three classes: accuracy, Cohen's kappa and the hand × judge table (with `n_boot`: "ci")."""
    same = sum(a == b for a, b in zip(hand, judge))
    out: dict[str, Any] = {
        "n": len(hand), "accuracy": _number(same / len(hand)),
        "kappa": _kappa(hand, judge, BLAME),
        "table": {a: {b: sum(x == a and y == b for x, y in zip(hand, judge)) for b in BLAME} for a in BLAME},
    }
    if n_boot:
        out["ci"] = {"accuracy": exact_interval(same, len(hand)),
                     "kappa": _kappa_interval(hand, judge, BLAME, n_boot, seed)}
    return out


def term_agreement(answers: Sequence[str], hand: Sequence[list[str]],
                   judge: Sequence[Sequence[tuple[int, int] | None]]) -> dict:
    """Hand-marked terms a judge's term overlaps (found), and judge terms a hand-marked term overlaps (confirmed).

    `judge` gives the offsets of each answer's judge terms (None: not located in the answer).
    """
    found = confirmed = n_hand = n_judge = 0
    for answer, hand_terms, judge_spans in zip(answers, hand, judge):
        hand_spans = locate_terms(answer, hand_terms, exact_case=True, prefer=judge_spans)
        found += sum(_overlaps(s, list(judge_spans)) for s in hand_spans)
        confirmed += sum(_overlaps(s, hand_spans) for s in judge_spans)
        n_hand, n_judge = n_hand + len(hand_terms), n_judge + len(judge_spans)
    return {"hand_terms": n_hand, "judge_terms": n_judge, "found": found, "confirmed": confirmed,
            "recall": _number(found / n_hand) if n_hand else None,
            "precision": _number(confirmed / n_judge) if n_judge else None}


def ordering(styles: Sequence[str], hand: Sequence[float], judge: Sequence[float],
             high: str = ORDERED_STYLES[0], low: str = ORDERED_STYLES[1]) -> dict:
    """Over every (`high`, `low`) pair of answers whose hand values differ: judge orders them alike, ties, reverses."""
    tops = [i for i, s in enumerate(styles) if s == high]
    bottoms = [i for i, s in enumerate(styles) if s == low]
    counts = {"pairs": len(tops) * len(bottoms), "hand_tied": 0, "same": 0, "judge_tied": 0, "reversed": 0}
    for a, b in product(tops, bottoms):
        hand_order, judge_order = np.sign(hand[a] - hand[b]), np.sign(judge[a] - judge[b])
        key = ("hand_tied" if hand_order == 0 else "judge_tied" if judge_order == 0
               else "same" if judge_order == hand_order else "reversed")
        counts[key] += 1
    ordered = counts["pairs"] - counts["hand_tied"]
    return {**counts, "share_same": _number(counts["same"] / ordered) if ordered else None}


def agreement(records: Sequence[dict], judge: Judge | None = None, n_boot: int = N_BOOT, seed: int = 0) -> dict:
    """Every per-metric agreement figure between the records' hand scores and a judge's readings, with intervals.

    The judge defaults to the lexicon, whose terms are placed by their exact offsets; another
    judge's terms are located in the answer by their text (locate_terms). Each metric's bootstrap
    resamples the same answers (one seed for all), so the intervals are over the same resampled items.
    """
    answers = [r["answer"] for r in records]
    hand = [r["scores"] for r in records]
    read = [(judge or evaluate_text)(a) for a in answers]
    spans: list[tuple[Sequence[tuple[int, int] | None], Sequence[tuple[int, int] | None]]]
    if judge is None:
        spans = [term_spans(a) for a in answers]
    else:
        spans = [(locate_terms(a, s["punitive_terms"]), locate_terms(a, s["therapeutic_terms"]))
                 for a, s in zip(answers, read)]
    styles = [r["style_of_answer"] for r in records]
    value = {m: ([f(s) for s in hand], [f(s) for s in read]) for m, f in METRIC_VALUES.items()}
    out: dict[str, Any] = {"n": len(records), "intervals": INTERVALS if n_boot else None}
    for i, (metric, field) in enumerate((("puni", "punitive_terms"), ("ther", "therapeutic_terms"))):
        out[metric] = {**count_agreement(*value[metric], n_boot=n_boot, seed=seed),
                       "terms": term_agreement(answers, [s[field] for s in hand], [sp[i] for sp in spans])}
    out["sev"] = rating_agreement(*value["sev"], n_boot=n_boot, seed=seed)
    for metric in ("emp_agg", "instr", "full_bl"):
        out[metric] = rate_agreement(*value[metric], n_boot=n_boot, seed=seed)
    out["blame"] = blame_agreement([s["blame_attribution"] for s in hand], [s["blame_attribution"] for s in read],
                                   n_boot=n_boot, seed=seed)
    out["ordering"] = {"styles": list(ORDERED_STYLES),
                       **{m: ordering(styles, *value[m]) for m in METRIC_VALUES}}
    return out


def _commit() -> str | None:
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "diff", "--quiet", "HEAD", "--",
                                *map(str, lexicon.SOURCES)]).returncode != 0
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+uncommitted lexicon changes" if dirty else "")


def measure(reference: Path = REFERENCE, judge: Judge | None = None) -> dict:
    """The agreement on `reference` with what it was measured on (file hash, lexicon version, commit)."""
    reference = Path(reference)
    return {
        "reference": {"path": (reference.relative_to(ROOT).as_posix() if reference.is_relative_to(ROOT)
                               else str(reference)),
                      "sha256": hashlib.sha256(reference.read_bytes()).hexdigest()},
        "lexicon": {"version": lexicon.version(), "commit": _commit()},
        "agreement": agreement(load_scored(reference), judge),
    }


def figure(block: dict, name: str, percent: bool = False) -> str:
    """One agreement figure as shown: two decimals (or a whole percentage) with its 95% interval when stored."""
    value = block.get(name)
    if value is None:
        return "undefined"

    def show(x: float) -> str:
        return f"{x:.0%}" if percent else f"{x:.2f}"

    interval = (block.get("ci") or {}).get(name)
    return f"{show(value)} [{show(interval[0])}, {show(interval[1])}]" if interval else show(value)


def summary(result: dict) -> str:
    """The headline figures as a Markdown table (numbers formatted here, with their 95% intervals in brackets)."""
    a = result["agreement"]
    order = a["ordering"]
    rows = [
        *[(label, f"Pearson {figure(a[m], 'pearson_r')}, Spearman {figure(a[m], 'spearman_r')}, mean abs. Δ "
                  f"{figure(a[m], 'mean_abs_diff')}, mean Δ {figure(a[m], 'mean_signed_diff')}; terms found "
                  f"{a[m]['terms']['found']}/{a[m]['terms']['hand_terms']}, confirmed "
                  f"{a[m]['terms']['confirmed']}/{a[m]['terms']['judge_terms']}")
          for m, label in (("puni", "Puni."), ("ther", "Ther."))],
        ("Sev.", f"exact {figure(a['sev'], 'exact', True)}, within 1 {figure(a['sev'], 'within_1', True)}, MAE "
                 f"{figure(a['sev'], 'mae')}, Spearman {figure(a['sev'], 'spearman_r')}"),
        *[(label, f"accuracy {figure(a[m], 'accuracy', True)}, kappa {figure(a[m], 'kappa')}; both yes "
                  f"{a[m]['both_true']}, judge only {a[m]['judge_only']}, hand only {a[m]['hand_only']}, both no "
                  f"{a[m]['both_false']}")
          for m, label in (("emp_agg", "Emp.-Agg."), ("instr", "Instr."), ("full_bl", "Full-Bl."))],
        ("Blame (3 classes)", f"accuracy {figure(a['blame'], 'accuracy', True)}, kappa {figure(a['blame'], 'kappa')}"),
        *[(f"{label}: {' vs '.join(order['styles'])} order",
           f"{order[m]['same']} same / {order[m]['judge_tied']} tied / {order[m]['reversed']} reversed "
           f"of {order[m]['pairs'] - order[m]['hand_tied']} hand-ordered pairs")
          for m, label in (("puni", "Puni."), ("instr", "Instr."), ("full_bl", "Full-Bl."))],
    ]
    head = f"{a['n']} answers of {result['reference']['path']}; lexicon version {result['lexicon']['version'][:12]}"
    if a.get("intervals"):
        head += f"; in brackets: {a['intervals']}"
    return "\n".join([head, "", "| metric | agreement |", "| --- | --- |", *[f"| {k} | {v} |" for k, v in rows]])


def main(argv: list[str] | None = None) -> int:
    """Measure, print the summary, and with --write store the figures."""
    parser = argparse.ArgumentParser(prog="python -m gama_utils.judge.lexicon_agreement",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--reference", type=Path, default=REFERENCE, help="hand-scored JSONL (default: %(default)s)")
    parser.add_argument("--write", type=Path, nargs="?", const=AGREEMENT_FILE, default=None,
                        help="store the figures as JSON (default path: %(const)s)")
    args = parser.parse_args(argv)
    result = measure(args.reference)
    print(summary(result))
    if args.write:
        args.write.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"written: {args.write}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
