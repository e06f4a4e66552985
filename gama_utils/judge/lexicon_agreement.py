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
DIGITS = 4
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
    return None if value is None or math.isnan(value) else round(float(value), DIGITS)


def count_agreement(hand: Sequence[float], judge: Sequence[float]) -> dict:
    """Pearson and Spearman r, mean absolute and signed (judge − hand) difference, and both means."""
    h, j = np.asarray(hand, dtype=float), np.asarray(judge, dtype=float)
    constant = len(h) < 2 or h.std() == 0 or j.std() == 0
    return {
        "n": len(h),
        "pearson_r": None if constant else _number(stats.pearsonr(h, j)[0]),
        "spearman_r": None if constant else _number(stats.spearmanr(h, j)[0]),
        "mean_abs_diff": _number(np.abs(j - h).mean()), "mean_signed_diff": _number((j - h).mean()),
        "hand_mean": _number(h.mean()), "judge_mean": _number(j.mean()),
    }


def rating_agreement(hand: Sequence[float], judge: Sequence[float]) -> dict:
    """Severity: exact and within-1 agreement, MAE, Spearman r, and the hand × judge table (levels 1-5)."""
    h, j = np.asarray(hand), np.asarray(judge)
    constant = len(h) < 2 or h.std() == 0 or j.std() == 0
    return {
        "n": len(h), "exact": _number((h == j).mean()), "within_1": _number((np.abs(h - j) <= 1).mean()),
        "mae": _number(np.abs(h - j).mean()), "mean_signed_diff": _number((j - h).mean()),
        "spearman_r": None if constant else _number(stats.spearmanr(h, j)[0]),
        "hand_mean": _number(h.mean()), "judge_mean": _number(j.mean()),
        "table": {str(a): {str(b): int(((h == a) & (j == b)).sum()) for b in range(1, 6)} for a in range(1, 6)},
    }


def _kappa(hand: Sequence, judge: Sequence, labels: Sequence) -> float | None:
    if len(set(hand) | set(judge)) < 2:
        return None  # one label only: kappa is undefined
    return _number(cohen_kappa_score(list(hand), list(judge), labels=list(labels)))


def rate_agreement(hand: Sequence[float], judge: Sequence[float]) -> dict:
    """A yes/no metric (booleans or 0/1): accuracy, Cohen's kappa, the four confusion counts and both rates."""
    h, j = [bool(x) for x in hand], [bool(x) for x in judge]
    both = sum(a and b for a, b in zip(h, j))
    neither = sum(not a and not b for a, b in zip(h, j))
    return {
        "n": len(h), "accuracy": _number((both + neither) / len(h)), "kappa": _kappa(h, j, [False, True]),
        "both_true": both, "judge_only": sum(b and not a for a, b in zip(h, j)),
        "hand_only": sum(a and not b for a, b in zip(h, j)), "both_false": neither,
        "hand_rate": _number(sum(h) / len(h)), "judge_rate": _number(sum(j) / len(j)),
    }


def blame_agreement(hand: Sequence[str], judge: Sequence[str]) -> dict:
    """Blame in three classes: accuracy, Cohen's kappa and the hand × judge table."""
    return {
        "n": len(hand), "accuracy": _number(sum(a == b for a, b in zip(hand, judge)) / len(hand)),
        "kappa": _kappa(hand, judge, BLAME),
        "table": {a: {b: sum(x == a and y == b for x, y in zip(hand, judge)) for b in BLAME} for a in BLAME},
    }


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


def agreement(records: Sequence[dict], judge: Judge | None = None) -> dict:
    """Every per-metric agreement figure between the records' hand scores and a judge's readings.

    The judge defaults to the lexicon, whose terms are placed by their exact offsets; another
    judge's terms are located in the answer by their text (locate_terms).
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
    out: dict[str, Any] = {"n": len(records)}
    for i, (metric, field) in enumerate((("puni", "punitive_terms"), ("ther", "therapeutic_terms"))):
        out[metric] = {**count_agreement(*value[metric]),
                       "terms": term_agreement(answers, [s[field] for s in hand], [sp[i] for sp in spans])}
    out["sev"] = rating_agreement(*value["sev"])
    for metric in ("emp_agg", "instr", "full_bl"):
        out[metric] = rate_agreement(*value[metric])
    out["blame"] = blame_agreement([s["blame_attribution"] for s in hand], [s["blame_attribution"] for s in read])
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


def summary(result: dict) -> str:
    """The headline figures as a Markdown table."""
    a = result["agreement"]
    order = a["ordering"]
    rows = [
        ("Puni.", f"Pearson {a['puni']['pearson_r']}, Spearman {a['puni']['spearman_r']}, mean abs. Δ "
                  f"{a['puni']['mean_abs_diff']}, mean Δ {a['puni']['mean_signed_diff']}; terms found "
                  f"{a['puni']['terms']['found']}/{a['puni']['terms']['hand_terms']}, confirmed "
                  f"{a['puni']['terms']['confirmed']}/{a['puni']['terms']['judge_terms']}"),
        ("Ther.", f"Pearson {a['ther']['pearson_r']}, Spearman {a['ther']['spearman_r']}, mean abs. Δ "
                  f"{a['ther']['mean_abs_diff']}, mean Δ {a['ther']['mean_signed_diff']}; terms found "
                  f"{a['ther']['terms']['found']}/{a['ther']['terms']['hand_terms']}, confirmed "
                  f"{a['ther']['terms']['confirmed']}/{a['ther']['terms']['judge_terms']}"),
        ("Sev.", f"exact {a['sev']['exact']}, within 1 {a['sev']['within_1']}, MAE {a['sev']['mae']}, "
                 f"Spearman {a['sev']['spearman_r']}"),
        *[(label, f"accuracy {a[m]['accuracy']}, kappa {a[m]['kappa']}; both yes {a[m]['both_true']}, judge only "
                  f"{a[m]['judge_only']}, hand only {a[m]['hand_only']}, both no {a[m]['both_false']}")
          for m, label in (("emp_agg", "Emp.-Agg."), ("instr", "Instr."), ("full_bl", "Full-Bl."))],
        ("Blame (3 classes)", f"accuracy {a['blame']['accuracy']}, kappa {a['blame']['kappa']}"),
        *[(f"{label}: {' vs '.join(order['styles'])} order",
           f"{order[m]['same']} same / {order[m]['judge_tied']} tied / {order[m]['reversed']} reversed "
           f"of {order[m]['pairs'] - order[m]['hand_tied']} hand-ordered pairs")
          for m, label in (("puni", "Puni."), ("instr", "Instr."), ("full_bl", "Full-Bl."))],
    ]
    head = f"{a['n']} answers of {result['reference']['path']}; lexicon version {result['lexicon']['version'][:12]}"
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
