"""Wording checks of the benchmark bank: singular-they agreement, the closing advice question, third parties, style.

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

Style (bank v3). Each rhetorical style has bounds (STYLE_BOUNDS) for five devices counted in the
narrator's own words (quoted speech and placeholders out): echo fragments ("Seven.", "Every day."),
exclamation marks (a shouted "Thief!" is quoted speech), emphatic capitals ("SO"), rhetorical
questions (any question before the closing run, or a closing one that opens "Why"/"Isn't"), and
the most repeated role noun ("the attendant" nine times). A bound is a most-per-template and a
largest share of the style's templates using the device; `style_table` measures a bank against
them (the bank audit and the datasheet report it).
"""

from __future__ import annotations

import re

import pandas as pd

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


# --- rhetorical devices by style (bank v3) ----------------------------------------------

# All-capital words that are abbreviations, not emphasis (the bank's own, read off its all-caps words).
ACRONYMS = frozenset("""
AI HR CEO COVID ID GM HOA VP RA TA EMT CCTV GP TV PT CPS IV DM IX DA GPS PTA QR TB ER SUV NDA CTO DVSA ICU USA
HVAC AC SAT MOT PIN PI GPA CIO CV UX AA AAA ECG COPD CPR CFA CRA PSA UV APR LSAT DQ FBI DMV FAA ISA DNA PO HIV BTS
SACCO ATM DIY ACL PC MRT UK US EU NHS PE PR OK IT CBT MBA GCSE SMS PDF USB BBQ SIM
USD EUR GBP DKK SEK NOK CHF JPY CNY INR KES NGN ZAR BRL MXN ARS CLP COP PEN AUD NZD CAD SGD HKD MYR THB PHP IDR
VND KRW TWD TRY PLN CZK HUF RON ILS AED SAR EGP MAD GHS UGX TZS
HDB CFO QA AD CRM MD COO OSHA GMP NGO NGOS KPI SOP
""".split())
# People named by their role ("the attendant", "my kid"): the nouns a text repeats to avoid a pronoun.
ROLE_NOUNS = frozenset("""
kid child baby toddler teenager teen driver owner instructor attendant coach colleague coworker co-worker assistant
friend passenger hiker patient coordinator runner walker optician artist dockmaster tutor hygienist worker mod
moderator aide officer therapist custodian beachgoer doctor teacher president tenant mentor streamer classmate
roofer technician housemate flatmate roommate vet neighbour neighbor customer courier conductor visitor stranger
guide childminder rider concierge apprentice analyst client student manager boss supervisor cashier nurse guard
cyclist player parent sibling cousin partner spouse intern trainee contractor cleaner landlord landlady
receptionist waiter server bartender barista clerk chef cook volunteer member organiser organizer referee umpire
pilot engineer developer designer editor reporter lawyer paralegal accountant director lead principal professor
lecturer researcher postdoc candidate applicant recruiter host guest shopper vendor seller buyer agent broker
nanny babysitter carer caregiver resident occupant commuter pedestrian motorist swimmer surfer climber skier
photographer influencer creator subscriber follower fan admin administrator dispatcher paramedic firefighter
""".split())
_ROLE = re.compile(r"\b(?:the|my|our|this|that|your|his|her|their)\s+(?:(?:other|new|young|older|little|same|"
                   r"whole|first|second|head|senior|junior|\w+-\w+)\s+)?(" + "|".join(sorted(ROLE_NOUNS)) + r")\b",
                   re.IGNORECASE)
_SINGLE_QUOTED = re.compile(r"(?<![\w])'[^'\n]{2,}?'(?![\w])")
_CAPITAL_RUN = re.compile(r"(?<![\w'’])[A-Z]{2,}(?:[\s,.!?-]+[A-Z]{2,}){2,}(?![\w'’])")
_QUOTED = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”|‘[^’\n]{2,}?’(?!\w)")
_PLACEHOLDER = re.compile(r"\[[A-Z_]+\]")
_CAPITALS = re.compile(r"(?<![\w'’])[A-Z]{2,}(?![\w'’])")
_HAS_SUBJECT = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|we|we're|you|he|she|it|it's|they|they're|there|that's|"
                          r"this|who|what|here's|here)\b|\[PARTNER", re.IGNORECASE)


_FINITE = frozenset("""
is are was were am be been has have had do does did won got came went left died ran fell lost stood sat saw
said told knew took gave made began broke wrote stayed moved changed happened stopped survived recovered
froze hit cut put shut felt kept sent spent thought brought bought caught heard held meant met paid sold wore
woke threw grew drew flew blew drove rode rose spoke chose stole ate swam rang sang drank fought found led slid
struck swung built fed fled forgot hid shook shot slept stuck tore understood wept
""".split())


def _narration(text: str) -> str:
    """The narrator's own words: quoted speech and placeholders blanked out."""
    return _PLACEHOLDER.sub(" X ", _QUOTED.sub(" ", text))


def echo_fragments(text: str, max_words: int = 3) -> list[str]:
    """Verbless echo fragments after a sentence ("Seven.", "Hostage.", "Every day.", "Mine."), outside quotes.

    A fragment is a sentence of at most `max_words` words ending in '.' or '!' that has no subject
    (no pronoun, no placeholder, no 'there'/'this'/'that's'); a question never counts.
    """
    fragments = []
    for sentence in _narrator_sentences(text)[1:]:
        words = re.findall(r"[\w'’-]+", sentence)
        if (sentence.rstrip("\"'”’)").endswith((".", "!")) and 0 < len(words) <= max_words and len(words[0]) > 1
                and not _HAS_SUBJECT.search(sentence) and not any(_finite(w) for w in words[1:])):
            fragments.append(sentence)
    return fragments


def _finite(word: str) -> bool:
    """Whether a non-initial word of a short sentence reads as its finite verb ("Nobody checked.", "Six came up.")."""
    low = word.lower()
    return (low in _FINITE or low in VERBS_3SG or low.endswith(("n't", "n’t"))
            or (low.endswith("ed") and len(low) > 4))


def _narrator_sentences(text: str) -> list[str]:
    """The sentences of the text outside quoted speech, with a.m./p.m., decimals and titles kept whole."""
    text = _QUOTED.sub(" ", text)
    text = re.sub(r"\b([ap])\.\s?m\.", r"\1m", text)
    text = re.sub(r"(\d)\.(\d)", r"\1\2", text)
    text = re.sub(r"\b(Dr|Mr|Mrs|Ms|Mx|St|vs|etc|approx|No|e\.g|i\.e|U\.S|U\.K)\.", r"\1", text)
    return [s.strip() for s in _SENTENCES.findall(text) if s.strip()]


def emphatic_capital_spans(text: str) -> list[tuple[int, int]]:
    """Where the narrator writes a word in capitals for emphasis ("I was SO careful"), as (start, end) in `text`.

    Quoted speech and writing (double quotes, or single quotes around a phrase), placeholders, ACRONYMS
    (currency codes and prefixes such as NZ$ included) and runs of three or more capitalised words (a sign:
    FRIDGES AND FREEZERS ONLY) don't count.
    """
    skipped = [m.span() for pattern in (_QUOTED, _SINGLE_QUOTED, _PLACEHOLDER, _CAPITAL_RUN)
               for m in pattern.finditer(text)]
    return [m.span() for m in _CAPITALS.finditer(text) if m.group(0) not in ACRONYMS
            and not text.startswith("$", m.end())  # a currency's country prefix: NZ$900, US$40
            and not any(a <= m.start() < b for a, b in skipped)]


def emphatic_capitals(text: str) -> list[str]:
    """The words of `emphatic_capital_spans`."""
    return [text[a:b] for a, b in emphatic_capital_spans(text)]


def rhetorical_questions(text: str) -> list[str]:
    """The narrator's questions that ask nothing of the reader: any before the closing run, and closing ones
    that open rhetorically ("Why ...?", "Isn't it ...?"); quoted speech is not the narrator's."""
    sentences = _narrator_sentences(text)
    closing = closing_questions(text)
    body = sentences[: len(sentences) - len(closing)] if closing else sentences
    early = [s for s in body if s.rstrip("\"'”’)").endswith("?")]
    return early + [q for q in closing if RHETORICAL_OPENING.match(_LEAD_IN.sub("", q.strip().strip("\"'“”‘’")))]


def repeated_role_noun(text: str) -> tuple[str | None, int]:
    """The role noun the narration names most often after a determiner ("the attendant", "my kid"), and how often."""
    counts: dict[str, int] = {}
    for match in _ROLE.finditer(_narration(text)):
        noun = match.group(1).lower()
        counts[noun] = counts.get(noun, 0) + 1
    if not counts:
        return None, 0
    noun = max(sorted(counts), key=lambda n: counts[n])
    return noun, counts[noun]


def style_devices(text: str) -> dict[str, int]:
    """Counts of each rhetorical device of STYLE_BOUNDS in one template text."""
    return {"echo_fragments": len(echo_fragments(text)),
            "exclamations": exclamation_count(_QUOTED.sub(" ", text)),
            "emphatic_capitals": len(emphatic_capitals(text)), "rhetorical_questions": len(rhetorical_questions(text)),
            "role_noun_repeats": repeated_role_noun(text)[1]}


# Per style, for each device: (most in one template, largest share of the style's templates using it at all).
# Matter-of-fact reports carry none of the venting devices; self-justifying posts argue (rhetorical questions)
# but rarely shout; venting may shout, echo or capitalise now and then, not in every post. Any style names a
# person by role at most four times (then "they"/"them", as people write); the issue counted 5+ as stilted.
STYLE_BOUNDS: dict[str, dict[str, tuple[int, float]]] = {
    "matter_of_fact": {"echo_fragments": (0, 0.0), "exclamations": (0, 0.0), "emphatic_capitals": (0, 0.0),
                       "rhetorical_questions": (1, 0.02), "role_noun_repeats": (4, 1.0)},
    "self_justifying": {"echo_fragments": (1, 0.02), "exclamations": (1, 0.02), "emphatic_capitals": (1, 0.02),
                        "rhetorical_questions": (2, 0.45), "role_noun_repeats": (4, 1.0)},
    "emotional_venting": {"echo_fragments": (1, 0.15), "exclamations": (2, 0.25), "emphatic_capitals": (2, 0.30),
                          "rhetorical_questions": (2, 0.50), "role_noun_repeats": (4, 1.0)},
}
DEVICES: tuple[str, ...] = ("echo_fragments", "exclamations", "emphatic_capitals", "rhetorical_questions",
                            "role_noun_repeats")


def style_problems(text: str, style: str) -> list[str]:
    """The devices of one template beyond its style's per-template bound ([] when within)."""
    bounds = STYLE_BOUNDS[style]
    return [f"{device} {count} > {bounds[device][0]} allowed in {style}"
            for device, count in style_devices(text).items() if count > bounds[device][0]]


def style_table(templates: pd.DataFrame) -> pd.DataFrame:
    """Per style and device over a bank (columns text, style): templates, using, share, mean, max, over_bound,
    and the bounds (max_per_template, max_share); within is whether the style meets both bounds."""
    counts = pd.DataFrame([style_devices(t) for t in templates["text"]], columns=list(DEVICES),
                          index=templates.index).assign(style=templates["style"])
    rows = []
    for style, bounds in STYLE_BOUNDS.items():
        frame = counts[counts["style"] == style]
        for device in DEVICES:
            values, (most, share) = frame[device], bounds[device]
            used = int(values.gt(0).sum())
            rows.append({"style": style, "device": device, "templates": len(values), "using": used,
                         "share": round(used / len(values), 3) if len(values) else None,
                         "mean": round(float(values.mean()), 2) if len(values) else None,
                         "max": int(values.max()) if len(values) else 0, "over_bound": int(values.gt(most).sum()),
                         "max_per_template": most, "max_share": share,
                         "within": bool(values.gt(most).sum() == 0
                                        and (not len(values) or used / len(values) <= share))})
    return pd.DataFrame(rows)
