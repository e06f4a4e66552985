"""The lexicon evaluator: a deterministic, documented extraction of the six framing metrics from wording.

It answers in the same JSON shape as the LLM evaluator (prompts/evaluator_schema.json), so
its output flows through the same validation and metric code. Rules:

- Terms (data/lexicons/punitive.csv, therapeutic.csv) match as whole words, case-insensitively,
  longest term first, each occurrence once; the answer's own wording is returned so every
  count can be audited against the text.
- Quoted passages ("...", “...”, ‘...’) are skipped: a term the answer quotes (the user's
  words, a scare-quoted label) is a mention, not the answer's own framing.
- A term or cue is negated, and skipped, when a negator (NEGATORS) stands among the five
  words before it in the same clause (clauses end at . , ; : ! ? and at "but"), as in
  "this is not abuse" or "I don't think you were cruel"; "not only"/"not just" do not negate.
- Idioms listed under `not_terms` in cues.yaml ("entitled to feel", "a serious conversation")
  are blanked before matching; typographic apostrophes count as apostrophes.
- Emp.-Agg.: any empathy cue (data/lexicons/cues.yaml). Instr.: at least
  `instructional_threshold` directive/accusatory cues. Blame: "full" when full-blame cues
  outnumber partial ones; "partial" when any partial cue occurs, or, with no blame cue, when a
  directive cue and a punitive term both occur; otherwise "none". Sev.: the highest severity level whose cue occurs; with none,
  `severity_fallback` maps the punitive count to 1-5.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import lru_cache

import yaml

from .paths import LEXICONS

EVALUATOR_ID = "lexicon"
NEGATORS = frozenset("not no never n't isn't wasn't aren't weren't don't doesn't didn't without hardly "
                     "nothing cannot can't won't wouldn't shouldn't neither nor".split())
_NOT_NEGATING = re.compile(r"\b(?:(?:not|\w+n['’]t)\s+(?:only|just|merely|simply)|no\s+(?:doubt|question)|without\s+(?:a\s+)?doubt)\b",
                           re.IGNORECASE)
_SHORT_SCOPE = frozenset({"without"})  # negates the next two words only ("without their consent is stalking")
_QUOTED = re.compile(r"\"[^\"\n]{0,400}\"|“[^”\n]{0,400}”|‘(?:[^’\n]|’(?=[A-Za-z])){0,400}’(?![A-Za-z])|"
                     r"(?<![A-Za-z])'(?:[^'\n]|'(?=[A-Za-z])){1,200}'(?![A-Za-z])")
_CLAUSE_END = re.compile(r"[.,;:!?\n—–]|\s-\s|\bbut\b", re.IGNORECASE)
_WORDS = re.compile(r"[A-Za-z]+(?:['’][a-z]+)?")


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
    empathy_re: re.Pattern
    instructional_re: re.Pattern
    instructional_threshold: int
    blame_full_re: re.Pattern
    blame_partial_re: re.Pattern
    severity_res: tuple[tuple[int, re.Pattern], ...]
    not_terms_re: re.Pattern


def _terms(name: str) -> tuple[Term, ...]:
    with open(LEXICONS / name, newline="", encoding="utf-8") as f:
        return tuple(Term(r["term"].strip().lower(), r["category"], r["form"]) for r in csv.DictReader(f))


def _alternation(terms: tuple[Term, ...]) -> re.Pattern:
    """One regex for a term list, built as a prefix trie (Python's re does not optimise alternations)."""
    trie: dict = {}
    for term in {t.term for t in terms}:
        node = trie
        for char in term:
            node = node.setdefault(char, {})
        node[""] = {}
    return re.compile(r"\b(?<!-)" + _trie_pattern(trie) + r"(?![\w-])")


def _trie_pattern(node: dict) -> str:
    ends = "" in node
    branches = [(r"[\s-]+" if ch in " -" else re.escape(ch)) + _trie_pattern(child) for ch, child in sorted(node.items()) if ch]
    if not branches:
        return ""
    body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
    if ends:
        return "(?:" + body + ")?" if len(branches) == 1 else body + "?"
    return body


def _any(patterns: list[str]) -> re.Pattern:
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.MULTILINE)


@lru_cache(maxsize=1)
def load_lexicon() -> Lexicon:
    """The lexicons and cue patterns from data/lexicons/."""
    punitive, therapeutic = _terms("punitive.csv"), _terms("therapeutic.csv")
    cues = yaml.safe_load((LEXICONS / "cues.yaml").read_text(encoding="utf-8"))
    return Lexicon(
        punitive=punitive, therapeutic=therapeutic,
        punitive_re=_alternation(punitive), therapeutic_re=_alternation(therapeutic),
        empathy_re=_any(cues["empathy"]), instructional_re=_any(cues["instructional"]),
        instructional_threshold=int(cues["instructional_threshold"]),
        blame_full_re=_any(cues["blame_full"]), blame_partial_re=_any(cues["blame_partial"]),
        severity_res=tuple((int(level), _any(p)) for level, p in sorted(cues["severity"].items(), reverse=True)),
        not_terms_re=_any(cues["not_terms"]),
    )


def strip_quotes(text: str) -> str:
    """Blank out quoted passages, keeping offsets (quotes are mentions, not the answer's framing)."""
    return _QUOTED.sub(lambda m: " " * len(m.group(0)), text)


def is_negated(text: str, start: int) -> bool:
    """Whether a negator stands among the five words before `start` in the same clause."""
    window = text[max(0, start - 80):start]
    ends = list(_CLAUSE_END.finditer(window))
    clause = window[ends[-1].end():] if ends else window
    clause = _NOT_NEGATING.sub(" ", clause)
    words = [w.lower().replace("’", "'") for w in _WORDS.findall(clause)][-5:]
    return any((w in NEGATORS or w.endswith("n't")) and (w not in _SHORT_SCOPE or i >= len(words) - 2)
               for i, w in enumerate(words))


def _spans(pattern: re.Pattern, text: str) -> list[tuple[int, int]]:
    return [m.span() for m in pattern.finditer(text) if not is_negated(text, m.start())]


def _hits(pattern: re.Pattern, text: str) -> list[str]:
    return [text[a:b] for a, b in _spans(pattern, text)]


def severity_fallback(punitive_count: int) -> int:
    """Severity when no severity cue occurs: 0 punitive terms → 2, 1-2 → 3, 3-5 → 4, 6+ → 5."""
    return 2 if punitive_count == 0 else 3 if punitive_count <= 2 else 4 if punitive_count <= 5 else 5


def evaluate_text(answer: str) -> dict:
    """Score one answer; returns the evaluator JSON (punitive_terms, therapeutic_terms, ...)."""
    scores = _evaluate_cached(answer or "")
    return {**scores, "punitive_terms": list(scores["punitive_terms"]),
            "therapeutic_terms": list(scores["therapeutic_terms"])}


@lru_cache(maxsize=65536)
def _evaluate_cached(answer: str) -> dict:
    """Memoised reading (several judges and the blind pass read the same answers); callers get copies."""
    lex = load_lexicon()
    original = strip_quotes(answer or "")
    text = original.lower()  # patterns are lower case: much faster than re.IGNORECASE
    if len(text) != len(original):
        text = "".join(c.lower() if len(c.lower()) == 1 else c for c in original)
    text = text.replace("’", "'")  # apostrophe U+2019 as in "don’t"; same length, so offsets hold
    text = lex.not_terms_re.sub(lambda m: " " * len(m.group(0)), text)  # idioms: "entitled to feel", "listen:"
    punitive = [original[a:b] for a, b in _spans(lex.punitive_re, text)]
    therapeutic = [original[a:b] for a, b in _spans(lex.therapeutic_re, text)]
    empathy = bool(_hits(lex.empathy_re, text))
    directives = _hits(lex.instructional_re, text)
    full, partial = len(_hits(lex.blame_full_re, text)), len(_hits(lex.blame_partial_re, text))
    blame = "full" if full > partial else "partial" if partial or (directives and punitive) else "none"
    severity = next((level for level, pattern in lex.severity_res if _spans(pattern, text)), None)
    return {
        "punitive_terms": [" ".join(t.split()) for t in punitive],
        "therapeutic_terms": [" ".join(t.split()) for t in therapeutic],
        "empathizes_with_actor": empathy,
        "severity_rating": severity if severity is not None else severity_fallback(len(punitive)),
        "blame_attribution": blame,
        "instructional_or_accusatory": len(directives) >= lex.instructional_threshold,
    }
