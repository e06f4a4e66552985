"""Wording checks of the benchmark bank v2: singular-they agreement, the closing advice question, third parties.

Rules (the authors follow these; `lint_template(..., v2_rules=True)` and the audit apply them):

Agreement. Every "they" takes a plural verb, in the neutral arm as compiled and in the template
itself: "they was / is / has / does / doesn't / says / goes" is an error, and so is a singular verb
coordinated with a "they" subject in the same clause ("They came home in tears, says ...",
"They deleted the account, but says ..."). "themself" is an error (write "themselves").

Advice question. The template ends with a question, and one of its closing questions (the run of
questions that ends the text, at most the last three sentences) asks for advice or help about
what to do: "What should I/we/my [PARTNER] do?", "How do/can/should I ...?", "Should I ...?",
"What would you do/suggest/advise?", "Do I need to ...?", "Is there anything I can do?", "any advice",
"help me ...". A judgement may be asked as well. Rhetorical questions (opening with "Why" or a
negative auxiliary: "Isn't it normal ...?") and verdict requests ("Was I wrong?", "AITA?") do not
count, nor do backward-looking ones ("What would you have done?", "Should I have ...?").
"""

from __future__ import annotations

import re

# Singular finite verbs that are never plural nouns (so a coordinated one can be read as a verb).
_AUXILIARIES = "is was has does isn't wasn't hasn't doesn't".split()
_VERBS_3SG = _AUXILIARIES + """
says keeps wants thinks seems feels knows gets goes makes takes tells asks refuses insists admits agrees
expects tries leaves hates believes blames decides gives sleeps sits stands stays talks walks wonders
writes reads hears sees apologises apologizes accuses avoids comes brings buys deserves earns eats finds
forgets forgives handles hides laughs loses notices owes pays pretends puts quits remembers responds
shouts screams yells argues sends shuts smiles speaks spends suggests swears understands waits wakes
wears won't
""".replace("won't", "").split()
VERBS_3SG: frozenset[str] = frozenset(_VERBS_3SG)
# Words ending in -s after "they" that are not singular verbs.
NOT_VERBS = frozenset("""
always sometimes perhaps as this thus plus less unless across towards afterwards besides nevertheless
us its his hers theirs ours yours yes regardless anyways nowadays sideways whereas
""".split())
_ADVERBS = r"(?:(?:always|sometimes|never|just|still|even|then|already|also|once|now|perhaps|really|often|usually|" \
           r"finally|suddenly|apparently|actually|simply|only|barely|hardly|clearly|obviously|supposedly|\w+ly)\s+)*"
_SUBORDINATORS = frozenset("""
although though because since if when whenever whether while until unless once before after as where
that who which what how why so than
""".split())
_STOP_WORDS = frozenset("i we you he she it there they this".split())
_SENTENCE = re.compile(r"[^.!?]+(?:[.!?]+[\"'”’)]*|$)")
_THEY = re.compile(r"\bthey\b", re.IGNORECASE)
_DIRECT = re.compile(rf"\bthey\s+{_ADVERBS}([a-z']+)\b", re.IGNORECASE)
_INVERTED = re.compile(r"(?:^|[,;:]\s*|\b(?:and|but|or|so|what|where|why|how|when|who)\s+)"
                       r"((?:is|was|has|does|isn't|wasn't|hasn't|doesn't)\s+they)\b[^.!?]*\?", re.IGNORECASE)
_INVERSION_SUBJECT = re.compile(r"^\s+(?:I|we|you|he|she|it|this|that|there|my|your|our|the|a|an)\b", re.IGNORECASE)
_CLAUSE_WORDS = frozenset("who which whose because although while whether if when where".split())
_COORDINATION_BEFORE = re.compile(rf"(?:,|\b(?:and|but|or|then|yet))\s+{_ADVERBS}$", re.IGNORECASE)


def _singular(word: str) -> bool:
    low = word.lower()
    if low in VERBS_3SG:
        return True
    return (low.endswith("s") and not low.endswith(("ss", "us", "is", "'s")) and low not in NOT_VERBS
            and len(low) > 3)


def agreement_errors(text: str) -> list[str]:
    """Singular verbs agreeing with 'they' and 'themself', as quoted snippets ([] when clean); English text."""
    errors = [f"'{m.group(0)}'" for m in re.finditer(r"\bthemself\b", text, re.IGNORECASE)]
    for sentence in _SENTENCE.findall(text):
        errors += [f"'{m.group(1)}'" for m in _INVERTED.finditer(sentence.strip())]
        for they in _THEY.finditer(sentence):
            before = re.findall(r"[A-Za-z']+", sentence[: they.start()])
            direct = _DIRECT.match(sentence, they.start())
            if direct and _singular(direct.group(1)):
                errors.append(f"'{direct.group(0)}'")
                continue
            if before and before[-1].lower() in _SUBORDINATORS:
                continue  # a subordinate clause: the verb after its comma belongs to the main clause
            coordinated = _coordinated_verb(sentence, they.end())
            if coordinated:
                errors.append(f"'{sentence[they.start():coordinated].strip()}'")
    return errors


def _coordinated_verb(sentence: str, start: int) -> int | None:
    """End of a singular verb coordinated with the 'they' subject ending at `start`, or None.

    The clause ends at the next subject pronoun or clause word; the first singular verb in it counts
    only when it follows a comma or a conjunction (else a new noun subject has taken over).
    """
    rest = sentence[start:]
    for token in re.finditer(r"[A-Za-z']+", rest):
        low = token.group(0).lower()
        if low in _STOP_WORDS or low.endswith("'s") or low in _CLAUSE_WORDS:
            return None
        if low in VERBS_3SG:
            link = _COORDINATION_BEFORE.search(rest[: token.start()])
            inverted = (low in _AUXILIARIES and _INVERSION_SUBJECT.match(rest[token.end():])
                        and rest.rstrip("\"'”’) ").endswith("?"))
            return start + token.end() if link and not inverted else None
    return None


# --- the closing advice question ---------------------------------------------------------

_SUBJECT = r"(?<![\w\[])(?:I|we|my \[PARTNER\]|\[PARTNER_SUBJ\]|they|my partner|my spouse)(?!\w)"
_NOT_FORWARD = r"(?!\s+(?:\w+ly\s+|really\s+|even\s+|just\s+|still\s+)?(?:not|have|been|be(?!\s+\w+ing\b))\b)"
ADVICE_CUES: tuple[re.Pattern, ...] = tuple(re.compile(p, re.IGNORECASE) for p in (
    rf"\b(?:should|shall|can|could|must|ought)\s+{_SUBJECT}{_NOT_FORWARD}",
    rf"\b(?:what|how)\s+(?:do|does)\s+(?:I|we)\b{_NOT_FORWARD}",
    rf"{_SUBJECT}\s+(?:should|could|can|ought to|need to|have to|must)\b{_NOT_FORWARD}",
    r"\bdo\s+(?:I|we)\s+(?:really\s+|still\s+)?(?:need|have\s+to)\b",
    r"\bwould\s+it\s+(?:help|be\s+better|be\s+best|make\s+sense)\b",
    r"\b(?:right|best|only)\s+(?:thing|way|move)\s+to\b",
    r"\b(?:any|a|another)\s+way\s+(?:to|out|back|forward)\b",
    r"\b(?:what|how)\s+(?:am I|are we)\s+supposed\s+to\b(?!\s+(?:feel|know|think|believe|live|carry|trust|forgive)\b)",
    r"\bwhat(?:'s|\s+is|\s+are)\s+(?:my|our|the)\s+(?:best\s+|right\s+|next\s+)?"
    r"(?:options?|move|approach|course of action|next step|way forward)\b",
    r"\bcourse\s+of\s+action\b",
    r"\bhow\s+would\s+(?:I|we)\s+(?:even\s+)?(?:go about|do|start|fix|handle|approach)\b",
    r"\bwhat\s+should\s+(?:someone|a person|anyone)\b",
    r"\bwhere\s+do\s+(?:I|we)\s+(?:even\s+)?(?:start|begin|go from here)\b",
    r"\bam\s+I\s+(?:obligated|obliged|required)\s+to\b",
    r"\bis\s+it\s+worth\s+trying\b",
    r"\bwhat\s+(?:would|could|might)\s+be\s+(?:a|the)\s+(?:fair|good|right|better|best)\s+way\s+to\b",
    r"\bshould\s+[^?]{0,40}?\bbe\s+the\s+one\s+to\b",
    r"\bwhat\s+would\s+you\s+(?:do|say|suggest|advise|recommend|tell me)\b(?!\s+(?:have|of)\b)",
    r"\bhow\s+would\s+you\s+(?:handle|approach|deal with|go about|fix|respond)\b",
    r"\bwould\s+you\s+(?:tell|advise|recommend|suggest|encourage|urge)\s+(?:me|us|my \[PARTNER\]|\[PARTNER_OBJ\])"
    r"(?!\w)",
    r"^do\s+(?:I|we)\s+(?!deserve|owe|really|look|seem|sound)\w+\b[^?]*\bor\b",
    r"\bwhat\s+would\s+it\s+take\b",
    r"\b(?:what|which)\s+options\b",
    r"\b(?:advice|advise|suggest|suggestions?|recommend|recommendations?|next steps?|way forward)\b",
    r"\b(?:what|how|when|whether)\s+to\s+\w+",
    r"\bhelp\s+me\b",
    r"\bany\s*(?:thing|way)\b[^?]*\bto\s+(?:do|fix|make|repair|say|undo|put)\b",
    r"\bfor me to (?:do|say)\b",
))
RHETORICAL_OPENING = re.compile(
    r"^(?:why|isn't|aren't|wasn't|weren't|doesn't|don't|didn't|shouldn't|can't|couldn't|wouldn't|won't|hasn't|"
    r"haven't|how\s+(?:can|could|is|was|dare)\s+(?!I\b|we\b))", re.IGNORECASE)
_LEAD_IN = re.compile(r"^(?:(?:and|so|but|also|then|please|honestly|seriously|okay|ok|now|as an ai|"
                      r"tell me(?: honestly| straight)?|be honest)\b[,:!]?\s*)+", re.IGNORECASE)
_SENTENCES = re.compile(r"[^.!?]*[.!?]+[\"'”’)]*|[^.!?]+$")


def closing_questions(text: str, window: int = 3) -> list[str]:
    """The run of questions that ends `text`, among its last `window` sentences ([] when it ends otherwise)."""
    sentences = [s.strip() for s in _SENTENCES.findall(text.strip()) if s.strip()]
    run: list[str] = []
    for sentence in reversed(sentences[-window:]):
        if not sentence.rstrip("\"'”’)").endswith("?"):
            break
        run.insert(0, sentence)
    return run


def is_advice_question(question: str) -> bool:
    """Whether one question asks for advice or help about what to do (not rhetorical, not only a verdict)."""
    core = _LEAD_IN.sub("", question.strip().strip("\"'“”‘’"))
    if RHETORICAL_OPENING.match(core):
        return False
    return any(cue.search(core) for cue in ADVICE_CUES)


def advice_question_problem(text: str) -> str | None:
    """Why the text does not end with an advice-seeking question, or None when it does."""
    questions = closing_questions(text)
    if not questions:
        return "does not end with a question"
    if not any(is_advice_question(q) for q in questions):
        quoted = " ".join(questions)
        return (f"closing question(s) {quoted!r} ask for no advice about what to do (add e.g. 'What should I do now?'; "
                "rhetorical and verdict-only questions do not count)")
    return None


# --- third parties and style -------------------------------------------------------------

FLAGGED_THIRD_PARTIES: tuple[str, ...] = ("my grandparent", "my sibling", "my parent", "my child", "my grandchild",
                                          "my parent-in-law", "my sibling-in-law", "my nibling", "my pibling")
_FLAGGED = re.compile(r"\b(" + "|".join(re.escape(p) for p in FLAGGED_THIRD_PARTIES) + r")(?:['’]s)?(?![\w-])",
                      re.IGNORECASE)


def flagged_third_party_wording(text: str) -> list[str]:
    """Singular neutralised kin terms that read oddly ('my grandparent', 'my sibling', ...); plurals read naturally."""
    return [m.group(0) for m in _FLAGGED.finditer(text)]


def singular_they_count(text: str) -> int:
    """Occurrences of they/them/their/theirs/themselves in the template's own text (placeholders excluded)."""
    return len(re.findall(r"\b(?:they|them|their|theirs|themselves|themself|they're|they've|they'd|they'll)\b",
                          text, re.IGNORECASE))


def exclamation_count(text: str) -> int:
    """The number of '!' in the text."""
    return text.count("!")
