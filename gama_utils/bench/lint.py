"""The template lint: gender cues, placeholders, structure and (bank v2) wording rules; one problem per string.

`lint_template` checks one text; `lint_bank` checks a frame of templates (text, metadata and the
mirrored pair). The bank v2 rules (singular-they agreement in the neutral arm, the closing advice
question; see `gama_utils.bench.wording`) are part of every lint and build since the bank's v2 rewrite
passes them (V2_RULES_ENFORCED); `v2_rules=False` checks a text by the v1 rules only.
"""

from __future__ import annotations

import re

import pandas as pd

from gama_utils.bench import gender_cues, wording
from gama_utils.bench.mirror import AGREEMENT_ADVERBS, PLACEHOLDERS, SKELETON_PLACEHOLDERS, MirrorError, render
from gama_utils.core import grid

MIN_WORDS, MAX_WORDS = 80, 350
V2_RULES_ENFORCED = True

_FIRST_PERSON = re.compile(r"\b(I|I'm|I've|I'd|I'll|[Mm]e|[Mm]y|[Mm]ine|[Mm]yself)\b")
_PLACEHOLDER_LIKE = re.compile(r"\[[^\[\]\n]*\]")
_BRACKET_CHAR = re.compile(r"[\[\]]")
_OTHER_BRACES = re.compile(r"[{<]\s*[A-Za-z_]*(PARTNER|AGGRESSOR|VICTIM)[A-Za-z_]*\s*[}>]", re.IGNORECASE)
_BARE_NAME = re.compile(r"(?<![\[{<A-Za-z_])(PARTNER(_[A-Z]+)?|AGGRESSOR|VICTIM)(?![A-Za-z_\]])")
_PREPOSITION_BEFORE_SUBJ = re.compile(
    r"\b(with|to|for|at|of|from|about|by|without|behind|near|me and)\s+\[PARTNER_SUBJ\]", re.IGNORECASE)
_INVERTED_SUBJ = re.compile(r"\b(is|was|has|does|isn't|wasn't|hasn't|doesn't)\s+\[PARTNER_SUBJ\]", re.IGNORECASE)
_SECOND_VERB = re.compile(
    r"\[PARTNER_SUBJ\][^.,;:!?\n\[]{1,80}?\band\s+(was|is|has|does|wasn't|isn't|hasn't|doesn't)\b")
_AGREEMENT_OK = frozenset("was is has does wasn't isn't hasn't doesn't".split())
_QUESTION_END: dict[str, tuple[str, ...]] = {"en": ("?",), "zh": ("?", "？")}


def word_count(text: str) -> int:
    """Words as a reader counts them (placeholders count as one word)."""
    return len(re.findall(r"\S+", text))


def lint_template(text: str, track: str, lang: str = "en", *, v2_rules: bool | None = None) -> list[str]:
    """Every problem that keeps `text` from being a valid gender-neutral template of `track`; [] when clean."""
    if track not in grid.TRACKS:
        raise ValueError(f"unknown track {track!r}; expected one of {', '.join(grid.TRACKS)}")
    if lang not in _QUESTION_END:
        raise ValueError(f"unknown language {lang!r}; expected one of {', '.join(_QUESTION_END)}")
    v2_rules = V2_RULES_ENFORCED if v2_rules is None else v2_rules
    problems: list[str] = []
    invisible = gender_cues.invisible_characters(text)
    if invisible:
        problems.append(f"invisible character(s) {', '.join(invisible)}: delete them")
    text = gender_cues.normalise(text)
    problems.extend(_placeholder_problems(text, track))
    stripped = _PLACEHOLDER_LIKE.sub(" ", text)
    if lang == "zh":
        problems.extend(gender_cues.chinese_cues(stripped))
        if stripped.count("我") < 3:
            problems.append("not narrated in the first person (fewer than three 我)")
    else:
        problems.extend(gender_cues.english_cues(stripped))
        problems.extend(_agreement_problems(text))
        if len(_FIRST_PERSON.findall(stripped)) < 3:
            problems.append("not narrated in the first person (fewer than three of I/me/my)")
        n = word_count(text)
        if not MIN_WORDS <= n <= MAX_WORDS:
            problems.append(f"length {n} words outside {MIN_WORDS}-{MAX_WORDS}")
    if not text.rstrip().rstrip("\"'”’)」』").endswith(_QUESTION_END[lang]):
        problems.append("does not end with an advice-seeking question")
    if v2_rules and lang == "en":
        problems.extend(v2_problems(text, track))
    return problems


def v2_problems(text: str, track: str) -> list[str]:
    """The bank v2 wording rules: singular-they agreement in the neutral arm and the closing advice question."""
    problems: list[str] = []
    try:
        neutral = render(text, track, "neutral")
    except MirrorError:
        neutral = None  # the placeholder problems are reported already
    if neutral is not None:
        problems.extend(f"singular-they agreement: {e} in the neutral arm (use a plural verb, or repeat the subject)"
                        for e in wording.agreement_errors(neutral))
    advice = wording.advice_question_problem(text)
    if advice:
        problems.append(advice)
    return problems


def _placeholder_problems(text: str, track: str) -> list[str]:
    problems = []
    placeholders = _PLACEHOLDER_LIKE.findall(text)
    for token in placeholders:
        if token in SKELETON_PLACEHOLDERS:
            problems.append(f"skeleton placeholder {token} left in a compiled template "
                            "(rewrite it in the first person)")
        elif token not in PLACEHOLDERS:
            hint = f" (did you mean {token.upper()}?)" if token.upper() in PLACEHOLDERS else ""
            problems.append(f"unknown placeholder {token}{hint}; known: {', '.join(PLACEHOLDERS)}")
    stripped = _PLACEHOLDER_LIKE.sub(" ", text)
    if _BRACKET_CHAR.search(stripped):
        problems.append("malformed placeholder: unbalanced '[' or ']'")
    for match in _OTHER_BRACES.finditer(text):
        problems.append(f"malformed placeholder {match.group(0)!r}: placeholders use square brackets, e.g. [PARTNER]")
    for match in _BARE_NAME.finditer(stripped):
        problems.append(f"malformed placeholder: bare {match.group(0)} without square brackets")
    partner_refs = [p for p in placeholders if p in PLACEHOLDERS]
    if track == "public" and partner_refs:
        problems.append(f"partner placeholder(s) {', '.join(sorted(set(partner_refs)))} in a public-track template; "
                        "keep the other party gender-neutral (the coworker, the driver, they)")
    if track == "intimate" and not partner_refs:
        problems.append("intimate template has no partner reference ([PARTNER] or a partner pronoun placeholder)")
    return problems


def _agreement_problems(text: str) -> list[str]:
    """Present-tense verbs after [PARTNER_SUBJ] that would read 'they goes' in the neutral arm."""
    problems = []
    for match in re.finditer(r"\[PARTNER_SUBJ\]((?:\s+[a-z]+)+)", text):
        words = match.group(1).split()
        while words and (words[0] in AGREEMENT_ADVERBS or words[0].endswith("ly")):
            words = words[1:]
        if words and words[0].endswith("s") and not words[0].endswith("ss") and words[0] not in _AGREEMENT_OK:
            problems.append(f"'[PARTNER_SUBJ] {words[0]}': use the past tense or an auxiliary so the neutral arm "
                            "reads naturally with 'they'")
    for match in _PREPOSITION_BEFORE_SUBJ.finditer(text):
        problems.append(f"'{match.group(0)}': use [PARTNER_OBJ] after a preposition (it would read 'with she')")
    for match in _INVERTED_SUBJ.finditer(text):
        problems.append(f"'{match.group(0)}': a question with the verb first would read '{match.group(1)} they' in the "
                        "neutral arm; rephrase")
    for match in _SECOND_VERB.finditer(text):
        problems.append(f"'... and {match.group(1)}' after [PARTNER_SUBJ]: the neutral arm would read 'they ... and "
                        f"{match.group(1)}'; repeat [PARTNER_SUBJ] before the second verb")
    if re.search(r"\[PARTNER_SUBJ\]['’]", text):
        problems.append("contraction after [PARTNER_SUBJ] (e.g. [PARTNER_SUBJ]'s): write the verb out")
    return problems


def lint_bank(templates: pd.DataFrame, *, v2_rules: bool | None = None) -> pd.DataFrame:
    """Lint every template, its metadata and its mirrored pair; one row per problem (template_id, problem)."""
    from gama_utils.bench import bank_metadata
    from gama_utils.bench.mirror import compile_pair, mirror_violations

    rows: list[dict[str, str]] = []
    for t in templates.to_dict("records"):
        lang = t.get("lang") or "en"
        problems = lint_template(t["text"], t["track"], lang, v2_rules=v2_rules)
        problems += bank_metadata.metadata_problems(t)
        if not problems:
            pair = compile_pair(t["text"], t["track"], t.get("relationship") or "partner", lang)
            problems = mirror_violations(pair, lang)
        rows.extend({"template_id": t["template_id"], "problem": p} for p in problems)
    return pd.DataFrame(rows, columns=["template_id", "problem"])
