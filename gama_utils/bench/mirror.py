"""Deterministic mirror compilation of a neutral template into male / female / neutral prompts (§3.2, Fig 4).

Intimate track: the actor-gender prefix plus the partner references. A male actor's
partner is female (girlfriend / wife, she / her / her / hers / herself) and a female
actor's partner is male; the neutral control arm uses "partner"/"spouse" and
they / them / their / theirs / themselves, with the verb after "they" put in agreement.
Public track: only the prefix changes; the other party is already gender-neutral.
"""

from __future__ import annotations

import difflib
import re

from gama_utils.core.schema import ARMS

SKELETON_PLACEHOLDERS = ("[AGGRESSOR]", "[VICTIM]")

# placeholder → grammatical role; rendered per language, relationship and arm below
PLACEHOLDERS: dict[str, str] = {
    "[PARTNER]": "noun",
    "[PARTNER_SUBJ]": "subject",
    "[PARTNER_OBJ]": "object",
    "[PARTNER_DET]": "possessive determiner",
    "[PARTNER_POSS]": "possessive pronoun",
    "[PARTNER_REFL]": "reflexive",
}

# relationship → partner noun as seen by a (male, female, neutral) actor
RELATIONSHIPS: dict[str, dict[str, dict[str, str]]] = {
    "partner": {"en": {"male": "partner", "female": "partner", "neutral": "partner"},
                "zh": {"male": "伴侣", "female": "伴侣", "neutral": "伴侣"}},
    "dating": {"en": {"male": "girlfriend", "female": "boyfriend", "neutral": "partner"},
               "zh": {"male": "女朋友", "female": "男朋友", "neutral": "伴侣"}},
    "spouse": {"en": {"male": "wife", "female": "husband", "neutral": "spouse"},
               "zh": {"male": "妻子", "female": "丈夫", "neutral": "伴侣"}},
}
RELATIONSHIP_ALIASES = {"boyfriend/girlfriend": "dating", "girlfriend/boyfriend": "dating",
                        "husband/wife": "spouse", "wife/husband": "spouse", "married": "spouse"}

PRONOUNS: dict[str, dict[str, dict[str, str]]] = {
    "en": {
        "male": {"subject": "she", "object": "her", "possessive determiner": "her",
                 "possessive pronoun": "hers", "reflexive": "herself"},
        "female": {"subject": "he", "object": "him", "possessive determiner": "his",
                   "possessive pronoun": "his", "reflexive": "himself"},
        "neutral": {"subject": "they", "object": "them", "possessive determiner": "their",
                    "possessive pronoun": "theirs", "reflexive": "themselves"},
    },
    "zh": {
        "male": {"subject": "她", "object": "她", "possessive determiner": "她的",
                 "possessive pronoun": "她的", "reflexive": "她自己"},
        "female": {"subject": "他", "object": "他", "possessive determiner": "他的",
                   "possessive pronoun": "他的", "reflexive": "他自己"},
        "neutral": {"subject": "TA", "object": "TA", "possessive determiner": "TA的",
                    "possessive pronoun": "TA的", "reflexive": "TA自己"},
    },
}

PREFIXES: dict[str, dict[str, str]] = {
    "en": {"male": "I am a man.", "female": "I am a woman.", "neutral": "I am a person."},
    "zh": {"male": "我是男性。", "female": "我是女性。", "neutral": "我是一个普通人。"},
}

# Words that may stand between [PARTNER_SUBJ] and its verb (shared with the template lint).
AGREEMENT_ADVERBS = frozenset("always sometimes never just still even then already also once now perhaps really "
                              "often usually finally suddenly".split())
_PLURAL_AGREEMENT = {"was": "were", "is": "are", "has": "have", "does": "do", "wasn't": "weren't",
                     "isn't": "aren't", "hasn't": "haven't", "doesn't": "don't"}
_PLACEHOLDER_TOKEN = re.compile(r"\[[A-Z_]+\]")
_SENTENCE_START = re.compile(r"(^|[.!?]\s+|\n\s*|[.!?][\"”’']\s+|^[\"“']|[.!?]\s+[\"“'])$")


class MirrorError(ValueError):
    """A template cannot be compiled (unknown track, placeholder, relationship or language)."""


def normalise_relationship(relationship: str) -> str:
    """Map a relationship name or alias (e.g. 'husband/wife') to partner / dating / spouse."""
    key = RELATIONSHIP_ALIASES.get(relationship, relationship)
    if key not in RELATIONSHIPS:
        known = ", ".join([*RELATIONSHIPS, *RELATIONSHIP_ALIASES])
        raise MirrorError(f"unknown relationship {relationship!r}; expected one of {known}")
    return key


def render(text: str, track: str, arm: str, relationship: str = "partner", lang: str = "en") -> str:
    """The full prompt of one arm: prefix + template with partner placeholders filled."""
    _check(track, arm, lang)
    body = text.strip()
    if track == "public":
        stray = _PLACEHOLDER_TOKEN.findall(body)
        if stray:
            raise MirrorError(f"public-track template contains placeholder(s) {', '.join(sorted(set(stray)))}; "
                              "public prompts keep the other party gender-neutral")
        return _join(PREFIXES[lang][arm], body, lang)
    rel = normalise_relationship(relationship)
    noun = RELATIONSHIPS[rel][lang][arm]
    pronouns = PRONOUNS[lang][arm]

    def fill(match: re.Match) -> str:
        token = match.group(0)
        if token not in PLACEHOLDERS:
            raise MirrorError(f"unknown placeholder {token}; known: {', '.join(PLACEHOLDERS)}")
        role = PLACEHOLDERS[token]
        word = noun if role == "noun" else pronouns[role]
        if lang == "en" and _SENTENCE_START.search(body[: match.start()]):
            word = word[0].upper() + word[1:]
        return word

    filled = _PLACEHOLDER_TOKEN.sub(fill, body)
    if "[" in filled and re.search(r"\[[^\]]*\]", filled):
        bad = re.findall(r"\[[^\]]*\]", filled)
        raise MirrorError(f"malformed placeholder(s) {', '.join(bad)}; placeholders look like [PARTNER_SUBJ]")
    if lang == "en" and arm == "neutral":
        filled = _agree_with_they(filled)
    return _join(PREFIXES[lang][arm], filled, lang)


def compile_pair(text: str, track: str, relationship: str = "partner", lang: str = "en") -> dict[str, str]:
    """Compile a neutral template into {"male": ..., "female": ..., "neutral": ...} full prompts."""
    return {arm: render(text, track, arm, relationship, lang) for arm in ARMS}


def mirror_vocabulary(lang: str = "en") -> frozenset[str]:
    """Every word the compiler may inject: prefixes, partner nouns and pronouns (lower case)."""
    words: set[str] = set()
    for arm in ARMS:
        words.update(re.findall(r"\w+", PREFIXES[lang][arm].lower()))
        words.update(w.lower() for w in PRONOUNS[lang][arm].values())
        words.update(RELATIONSHIPS[rel][lang][arm].lower() for rel in RELATIONSHIPS)
    return frozenset(words)


def word_diff(a: str, b: str) -> list[tuple[str, str]]:
    """The differing word runs between two prompts, as (run in a, run in b) strings."""
    wa, wb = a.split(), b.split()
    matcher = difflib.SequenceMatcher(a=wa, b=wb, autojunk=False)
    return [(" ".join(wa[i1:i2]), " ".join(wb[j1:j2]))
            for op, i1, i2, j1, j2 in matcher.get_opcodes() if op != "equal"]


def mirror_violations(pair: dict[str, str], lang: str = "en") -> list[str]:
    """Differences between the male and female prompt beyond prefix and partner references ([] when clean)."""
    allowed = mirror_vocabulary(lang)
    problems = []
    if lang == "zh":
        diffs = [(x, y) for op, i1, i2, j1, j2 in difflib.SequenceMatcher(
            a=pair["male"], b=pair["female"], autojunk=False).get_opcodes() if op != "equal"
            for x, y in [(pair["male"][i1:i2], pair["female"][j1:j2])]]
        allowed_chars = set("".join(allowed))
        return [f"differs beyond the mirror: {x!r} vs {y!r}" for x, y in diffs
                if not set(x + y) <= allowed_chars]
    for run_a, run_b in word_diff(pair["male"], pair["female"]):
        for word in re.findall(r"[A-Za-z']+", f"{run_a} {run_b}"):
            if re.sub(r"'s$", "", word.lower()) not in allowed:
                problems.append(f"differs beyond the mirror: {run_a!r} vs {run_b!r}")
                break
    return problems


def _check(track: str, arm: str, lang: str) -> None:
    if track not in ("intimate", "public"):
        raise MirrorError(f"unknown track {track!r}; expected 'intimate' or 'public'")
    if arm not in ARMS:
        raise MirrorError(f"unknown arm {arm!r}; expected one of {', '.join(ARMS)}")
    if lang not in PREFIXES:
        raise MirrorError(f"unknown language {lang!r}; expected one of {', '.join(PREFIXES)}")


def _join(prefix: str, body: str, lang: str) -> str:
    return prefix + ("" if lang == "zh" else " ") + body


def _agree_with_they(text: str) -> str:
    """Put the verb after a filled-in 'they' in the plural ('they was' → 'they were')."""
    def fix(match: re.Match) -> str:
        verb = match.group(3)
        plural = _PLURAL_AGREEMENT.get(verb.lower(), verb)
        return f"{match.group(1)}{match.group(2)}{plural}"

    adverbs = r"(?:(?:" + "|".join(sorted(AGREEMENT_ADVERBS)) + r"|\w+ly)\s+)*"
    return re.sub(rf"(\b[Tt]hey\s+)({adverbs})(was|is|has|does|wasn't|isn't|hasn't|doesn't)\b", fix, text)
