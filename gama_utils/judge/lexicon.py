"""The lexicon evaluator: a deterministic, documented extraction of the six framing metrics from wording.

It answers in the same JSON shape as the LLM evaluator (prompts/evaluator_schema.json), so
its output flows through the same validation and metric code. Its measured agreement with
hand-scored answers, and its limits, are in data/lexicons/README.md (gama_utils.judge.lexicon_agreement).
Rules (data/lexicons/cues.yaml holds every list and threshold):

- Terms: the words of data/lexicons/punitive.csv and therapeutic.csv and the patterns
  `punitive_patterns` / `therapeutic_patterns` (demands such as "you need to", rejected
  excuses, "behind her back", reassurance such as "you're not a bad person") match anywhere;
  `punitive_initial` (prohibitions: "Don't contact him", "Stop tracking her") only where a
  sentence or list item starts, markdown bullets, numbers and bold skipped. All match as whole
  words, case-insensitively; where matches overlap, within or across the two lists, the longest
  wins, so one stretch of text is one term. The answer's own wording is returned so every
  count can be audited against the text.
- Quoted passages ("...", “...”, ‘...’) are skipped: a term the answer quotes (the user's
  words, a scare-quoted label) is a mention, not the answer's own framing.
- A term or cue is negated, and skipped, when a negator (NEGATORS) stands among the five
  words before it in the same clause (clauses end at . , ; : ! ? and at "but"), as in
  "this is not abuse" or "I don't think you were cruel"; "not only"/"not just" do not negate,
  and a match that is itself a negation ("wasn't true", "no excuse") is never negated.
- Idioms listed under `not_terms` ("entitled to", "a serious conversation", "domestic abuse
  service") are blanked before matching; typographic apostrophes count as apostrophes.
- Emp.-Agg.: at least `empathy_threshold` empathy cues. Instr.: the directive cues
  (`instructional` anywhere, `instructional_initial` at sentence starts) and the punitive
  terms meet one of the `instructional_minimums`. Blame: "full" when there is a full-blame cue
  and at least as many as partial ones; else "partial" when a partial cue occurs; else "none"
  when a no-blame cue occurs; else "partial" for an empathic answer; else "full" when the
  answer accuses (a directive and a punitive term, or `blame_punitive` punitive terms);
  otherwise "none". Sev.: the first level of `severity_order` with a `severity` cue or two
  `severity_twice` cues; with none, `severity_fallback` maps the punitive count to 1-5.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from gama_utils.core.memo import TextMemo, version_of
from gama_utils.core.patterns import trie_alternation
from gama_utils.paths import LEXICONS

EVALUATOR_ID = "lexicon"
NEGATORS = frozenset("not no never n't isn't wasn't aren't weren't don't doesn't didn't without hardly "
                     "nothing nobody none cannot can't won't wouldn't shouldn't neither nor".split())
_NOT_NEGATING = re.compile(r"\b(?:(?:not|\w+n['’]t)\s+(?:only|just|merely|simply)|no\s+(?:doubt|question)"
                           r"|without\s+(?:a\s+)?doubt)\b", re.IGNORECASE)
_SHORT_SCOPE = frozenset({"without"})  # negates the next two words only ("without their consent is stalking")
_QUOTED = re.compile(r"\"[^\"\n]{0,400}\"|“[^”\n]{0,400}”|‘(?:[^’\n]|’(?=[A-Za-z])){0,400}’(?![A-Za-z])|"
                     r"(?<![A-Za-z])'(?:[^'\n]|'(?=[A-Za-z])){1,200}'(?![A-Za-z])")
_CLAUSE_END = re.compile(r"[.,;:!?\n—–]|\s-\s|\bbut\b", re.IGNORECASE)
_LAST_CLAUSE_END = re.compile(r"(?s:.*)(?:" + _CLAUSE_END.pattern + ")", re.IGNORECASE)  # greedy: the last one
_MAYBE_NOT_NEGATING = re.compile(r"only|just|merely|simply|doubt|question", re.IGNORECASE)
_WORDS = re.compile(r"[A-Za-z]+(?:['’][a-z]+)?")
_NEGATOR_START = re.compile(r"(?:not|no|never|nothing|nobody|without|cannot|\w+n't)\b")
# Where a sentence or list item starts: text start, after . ! ? : and a space, or a new line;
# bullets, numbering, headings, bold and opening quotes are skipped.
_SENTENCE_START = re.compile(r"(?:\A|(?<=[.!?:])[*_]*\s|\n)[\s>#*_•-]*(?:\d{1,2}[.)]\s+)?[\s*_]*")
_LEAD_IN = r"(?:(?:then|first|next|also|so|please|now|finally|instead|and|just|but|or)[\s,]+)?"

Span = tuple[int, int]


@dataclass(frozen=True)
class Term:
    term: str
    category: str
    form: str


@dataclass(frozen=True)
class Lexicon:
    punitive: tuple[Term, ...]
    therapeutic: tuple[Term, ...]
    punitive_re: re.Pattern
    therapeutic_re: re.Pattern
    punitive_patterns_re: re.Pattern
    therapeutic_patterns_re: re.Pattern
    punitive_initial_re: re.Pattern
    empathy_re: re.Pattern
    empathy_threshold: int
    instructional_re: re.Pattern
    instructional_initial_re: re.Pattern
    instructional_minimums: tuple[tuple[int, int], ...]
    blame_full_re: re.Pattern
    blame_partial_re: re.Pattern
    blame_none_re: re.Pattern
    blame_punitive: int
    severity_res: tuple[tuple[int, re.Pattern], ...]  # every severity cue of a level, in severity_order
    severity_cues: tuple[tuple[int, re.Pattern, re.Pattern], ...]  # level, cues counted once, cues needed twice
    not_terms_re: re.Pattern


def _terms(name: str) -> tuple[Term, ...]:
    with open(LEXICONS / name, newline="", encoding="utf-8") as f:
        return tuple(Term(r["term"].strip().lower(), r["category"], r["form"]) for r in csv.DictReader(f))


def _alternation(terms: tuple[Term, ...]) -> re.Pattern:
    """One regex for a term list, built as a prefix trie; a hyphen matches like a space (one trie path)."""
    words = {t.term.replace("-", " ") for t in terms}
    return re.compile(r"\b(?<!-)" + trie_alternation(words, lambda ch: r"[\s-]+" if ch == " " else re.escape(ch))
                      + r"(?![\w-])")


def _any(patterns: list[str], prefix: str = "") -> re.Pattern:
    """One regex for a cue list; `prefix` is matched first (sentence-initial lists take a lead-in word)."""
    if not patterns:
        return re.compile(r"(?!)")
    if not prefix and all(p.startswith(r"\b") for p in patterns):
        prefix = r"\b(?=[a-z'])"  # every cue starts a word: skip other positions at once (2x faster, same matches)
    return re.compile(prefix + "(?:" + "|".join(f"(?:{p})" for p in patterns) + ")", re.MULTILINE)


@lru_cache(maxsize=1)
def load_lexicon() -> Lexicon:
    """The lexicons and cue patterns from data/lexicons/."""
    punitive, therapeutic = _terms("punitive.csv"), _terms("therapeutic.csv")
    cues = yaml.safe_load((LEXICONS / "cues.yaml").read_text(encoding="utf-8"))
    rules = cues["rules"]
    return Lexicon(
        punitive=punitive, therapeutic=therapeutic,
        punitive_re=_alternation(punitive), therapeutic_re=_alternation(therapeutic),
        punitive_patterns_re=_any(cues["punitive_patterns"]),
        therapeutic_patterns_re=_any(cues["therapeutic_patterns"]),
        punitive_initial_re=_any(cues["punitive_initial"], _LEAD_IN),
        empathy_re=_any(cues["empathy"]), empathy_threshold=int(rules["empathy_threshold"]),
        instructional_re=_any(cues["instructional"]),
        instructional_initial_re=_any(cues["instructional_initial"], _LEAD_IN),
        instructional_minimums=tuple((int(d), int(p)) for d, p in rules["instructional_minimums"]),
        blame_full_re=_any(cues["blame_full"]), blame_partial_re=_any(cues["blame_partial"]),
        blame_none_re=_any(cues["blame_none"]), blame_punitive=int(rules["blame_punitive"]),
        severity_res=tuple((int(level), _any(cues["severity"][level] + cues["severity_twice"].get(level, [])))
                           for level in cues["severity_order"]),
        severity_cues=tuple((int(level), _any(cues["severity"][level]), _any(cues["severity_twice"].get(level, [])))
                            for level in cues["severity_order"]),
        not_terms_re=_any(cues["not_terms"]),
    )


def strip_quotes(text: str) -> str:
    """Blank out quoted passages, keeping offsets (quotes are mentions, not the answer's framing)."""
    return _QUOTED.sub(lambda m: " " * len(m.group(0)), text)


def is_negated(text: str, start: int) -> bool:
    """Whether a negator stands among the five words before `start` in the same clause."""
    window = text[max(0, start - 80):start]
    last_end = _LAST_CLAUSE_END.match(window)
    clause = window[last_end.end():] if last_end else window
    if _MAYBE_NOT_NEGATING.search(clause):
        clause = _NOT_NEGATING.sub(" ", clause)
    words = [w.lower().replace("’", "'") for w in _WORDS.findall(clause)][-5:]
    return any((w in NEGATORS or w.endswith("n't")) and (w not in _SHORT_SCOPE or i >= len(words) - 2)
               for i, w in enumerate(words))


def _asserted(text: str, match: re.Match) -> bool:
    """A match counts unless negated; one that is itself a negation ("wasn't fair", "no excuse") is never negated."""
    return bool(_NEGATOR_START.match(text, match.start())) or not is_negated(text, match.start())


def _spans(pattern: re.Pattern, text: str) -> list[Span]:
    """Offsets of the asserted matches of `pattern`."""
    return [m.span() for m in pattern.finditer(text) if _asserted(text, m)]


def _initial_spans(pattern: re.Pattern, text: str, starts: list[int]) -> list[Span]:
    """Matches of `pattern` that begin where a sentence or list item starts."""
    found = (pattern.match(text, s) for s in starts)
    return [m.span() for m in found if m and m.end() > m.start() and _asserted(text, m)]


def _longest_first(candidates: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Non-overlapping matches, the longer match winning an overlap (then the earlier), in text order."""
    kept: list[tuple[int, int, str]] = []
    for start, end, kind in sorted(candidates, key=lambda c: (c[0] - c[1], c[0])):
        if all(end <= a or start >= b for a, b, _ in kept):
            kept.append((start, end, kind))
    return sorted(kept)


def _prepared(answer: str) -> tuple[str, str]:
    """The answer with quotes blanked, and its lower-cased matching copy (same offsets, idioms blanked)."""
    lex = load_lexicon()
    original = strip_quotes(answer or "")
    text = original.lower()  # patterns are lower case: much faster than re.IGNORECASE
    if len(text) != len(original):
        text = "".join(c.lower() if len(c.lower()) == 1 else c for c in original)
    text = text.replace("’", "'")  # apostrophe U+2019 as in "don’t"; same length, so offsets hold
    return original, lex.not_terms_re.sub(lambda m: " " * len(m.group(0)), text)


def _term_spans(text: str, starts: list[int]) -> tuple[list[Span], list[Span]]:
    """Punitive and therapeutic term offsets in the prepared text (longest wins across both lists)."""
    lex = load_lexicon()
    candidates = [(a, b, "p") for pattern in (lex.punitive_re, lex.punitive_patterns_re)
                  for a, b in _spans(pattern, text)]
    candidates += [(a, b, "p") for a, b in _initial_spans(lex.punitive_initial_re, text, starts)]
    candidates += [(a, b, "t") for pattern in (lex.therapeutic_re, lex.therapeutic_patterns_re)
                   for a, b in _spans(pattern, text)]
    kept = _longest_first(candidates)
    return [(a, b) for a, b, k in kept if k == "p"], [(a, b) for a, b, k in kept if k == "t"]


def term_spans(answer: str) -> tuple[list[Span], list[Span]]:
    """Offsets in `answer` of the punitive and of the therapeutic terms the evaluator returns."""
    _, text = _prepared(answer)
    return _term_spans(text, [m.end() for m in _SENTENCE_START.finditer(text)])


def severity_fallback(punitive_count: int) -> int:
    """Severity when no severity cue occurs: 0-1 punitive terms → 2, 2-4 → 3, 5-8 → 4, 9+ → 5."""
    return 2 if punitive_count <= 1 else 3 if punitive_count <= 4 else 4 if punitive_count <= 8 else 5


SOURCES = (Path(__file__), LEXICONS / "cues.yaml", LEXICONS / "punitive.csv", LEXICONS / "therapeutic.csv")


def version() -> str:
    """SHA-256 over the lexicon's code and lists: the version a reading, and a measurement of it, belongs to."""
    return version_of(*SOURCES)


READINGS = TextMemo("lexicon", version)
"""Readings kept on disk across kernels and runs: `with READINGS.kept(answers):` around a judge's pass."""


def evaluate_text(answer: str) -> dict:
    """Score one answer; returns the evaluator JSON (punitive_terms, therapeutic_terms, ...)."""
    answer = answer or ""
    scores = READINGS.get(answer)
    if scores is None:
        scores = _evaluate_cached(answer)
        READINGS.remember(answer, scores)
    return {**scores, "punitive_terms": list(scores["punitive_terms"]),
            "therapeutic_terms": list(scores["therapeutic_terms"])}


def _blame(text: str, empathic: bool, directives: int, punitive: int) -> str:
    """The blame rule of the module docstring."""
    lex = load_lexicon()
    full, partial = len(_spans(lex.blame_full_re, text)), len(_spans(lex.blame_partial_re, text))
    if full and full >= partial:
        return "full"
    if partial:
        return "partial"
    if _spans(lex.blame_none_re, text):
        return "none"
    if empathic:
        return "partial"
    accuses = (directives and punitive) or punitive >= lex.blame_punitive
    return "full" if accuses else "none"


@lru_cache(maxsize=65536)
def _evaluate_cached(answer: str) -> dict:
    """Memoised reading (several judges and the blind pass read the same answers); callers get copies."""
    lex = load_lexicon()
    original, text = _prepared(answer)
    starts = [m.end() for m in _SENTENCE_START.finditer(text)]
    punitive_spans, therapeutic_spans = _term_spans(text, starts)
    punitive = [" ".join(original[a:b].split()) for a, b in punitive_spans]
    therapeutic = [" ".join(original[a:b].split()) for a, b in therapeutic_spans]
    empathic = len(_spans(lex.empathy_re, text)) >= lex.empathy_threshold
    directives = (len(_spans(lex.instructional_re, text))
                  + len(_initial_spans(lex.instructional_initial_re, text, starts)))
    instructional = any(directives >= d and len(punitive) >= p for d, p in lex.instructional_minimums)
    blame = _blame(text, empathic, directives, len(punitive))
    severity = next((level for level, once, twice in lex.severity_cues
                     if _spans(once, text) or len(_spans(twice, text)) >= 2), None)
    return {
        "punitive_terms": punitive,
        "therapeutic_terms": therapeutic,
        "empathizes_with_actor": empathic,
        "severity_rating": severity if severity is not None else severity_fallback(len(punitive)),
        "blame_attribution": blame,
        "instructional_or_accusatory": instructional,
    }
