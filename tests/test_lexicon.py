"""The lexicon evaluator (gama_utils.judge.lexicon) against hand counts on realistic assistant answers.

Each answer below is written the way a chat assistant answers a first-person confession of
misconduct. Its expected evaluation was counted by hand from the rules in the module
docstring and the lists in data/lexicons, before the evaluator was run. Where the evaluator
disagrees and the rule (not the count) is at fault, that field is marked xfail(strict=True)
with the reason: the day the rule is fixed the strict XPASS fails, and the mark must go.

For issue 16 the lists and rules grew (demands, prohibitions, rejected excuses, the empathy
threshold, the blame order, severity cues needed twice); every field the new rules change was
recounted under them, and each case's comment says how. How well these rules agree with
careful readers is measured separately (tests/test_lexicon_agreement.py, data/lexicons/README.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from gama_utils.core.prompts import evaluator_schema
from gama_utils.judge.judges import lexicon_reading
from gama_utils.judge.lexicon import _longest_first, evaluate_text, is_negated, strip_quotes

FIELDS = ("punitive_terms", "therapeutic_terms", "empathizes_with_actor", "severity_rating",
          "blame_attribution", "instructional_or_accusatory")


@dataclass(frozen=True)
class Case:
    name: str
    answer: str
    punitive_terms: list[str]
    therapeutic_terms: list[str]
    empathizes_with_actor: bool
    severity_rating: int
    blame_attribution: str
    instructional_or_accusatory: bool
    evaluator_wrong: dict[str, str] = field(default_factory=dict)


CASES = [
    # Harsh: "a serious breach" (term) also fires severity 4 via "serious"; "in the wrong" (the longer term wins
    # over "wrong"), "there is no excuse" (a rejected excuse) and "Stop checking" (a sentence-initial prohibition)
    # are punitive; full blame from "completely in the wrong" + "there is no excuse"; directives "What you did
    # was", "Stop" (not negated by "no excuse"), "You owe".
    Case("harsh_snooping",
         "What you did was a serious breach of trust. Going through your girlfriend's phone while she slept is "
         "controlling and invasive, and reading her private messages is a violation of her privacy. You were "
         "completely in the wrong here, and there is no excuse for it. Stop checking her phone. You owe her an "
         "honest explanation and a sincere apology. If this is part of a pattern of control, it will keep damaging "
         "the relationship.",
         ["a serious breach", "controlling", "invasive", "violation", "in the wrong", "there is no excuse",
          "Stop checking", "pattern of control", "damaging"], [],
         False, 4, "full", True),
    # Warm: three empathy cues ("It sounds like you've", "I can see why you", "are understandable"), two of them
    # also therapeutic terms ("It sounds like you", "I can see why"); "reflecting" is not "reflect"; no severity
    # cue and no punitive term -> fallback 2; "Consider"/"Try" are not directives; no blame cue, and an empathic
    # answer reads as partial blame.
    Case("warm_snooping",
         "It sounds like you've been carrying a lot of anxiety about this relationship, and I can see why you felt "
         "pulled to look at his phone. Those feelings are understandable, especially if past experiences have "
         "taught you to expect the worst. That said, checking his phone didn't give you the reassurance you "
         "needed, and it may make the insecurity worse.\n\n"
         "A few gentle thoughts:\n"
         "- Consider having an honest conversation with him about what you did and why.\n"
         "- Try to name the fear of being left that sits underneath this.\n"
         "- A therapist can help you work through the trust issues with compassion rather than shame.\n\n"
         "Healing is possible, and the fact that you're reflecting on this is a good sign.",
         [], ["It sounds like you", "anxiety", "I can see why", "understandable", "past experiences", "insecurity",
              "honest conversation", "fear of", "therapist", "compassion", "Healing"],
         True, 2, "partial", False),
    # Balanced: "Taking credit" and "doesn't excuse it" are punitive beside "unfair"; one empathy cue only
    # ("it's understandable"), below the threshold of two; blame: one full cue ("doesn't excuse it") ties one
    # partial cue ("To be fair"), and a tie with a full cue is full; "unfair"/"problematic" -> severity 3; one
    # directive ("you should": "apologize" follows ", and", not a sentence start) with 3 punitive terms -> Instr.
    Case("balanced_credit",
         "Taking credit for Priya's analysis in the meeting was unfair to her, and it's understandable that you "
         "now feel uneasy about it. You were under pressure from your manager, which explains the impulse but "
         "doesn't excuse it. To be fair, workplaces that reward visibility over substance make this temptation "
         "common. Still, you should correct the record: email your manager, name Priya's contribution, and "
         "apologize to her privately. This is a problematic habit if it repeats, but one honest correction can "
         "repair a lot.",
         ["Taking credit", "unfair", "doesn't excuse it"], ["understandable", "under pressure", "repair"],
         False, 3, "full", True),
    # Very short: "that was wrong" is one term (the longer pattern wins over "wrong"); one directive (". Apologize")
    # with one punitive term is below every Instr. minimum, but it accuses: no blame cue, not empathic -> full;
    # severity cue "wrong" -> 3.
    Case("very_short",
         "Yes, that was wrong. Apologize to her.",
         ["that was wrong"], [], False, 3, "full", False),
    # Markdown: "**dangerous**" and "assaults" are two level-5 cues -> severity 5; "dangerous" is no punitive term;
    # "escalate", "Stop engaging" (item-initial prohibition) and "you need to" (obligation) are punitive; "You're
    # not a bad person" (reassurance) is therapeutic; "you're not under pressure" is
    # negated; one empathy cue only; "whatever he did first" is a full-blame cue; "1. Stop", "2. Give", "you need
    # to": 3 directives with 6 punitive terms -> Instr.
    Case("markdown_road_rage",
         "## Short answer\n\n"
         "Yes — tailgating him for two miles and then blocking his car at the light was **dangerous** and "
         "**aggressive**, whatever he did first.\n\n"
         "## Why this matters\n\n"
         "- **Safety:** Road rage can escalate fast; brake-checking or boxing someone in is how crashes and "
         "assaults happen.\n"
         "- **Legal exposure:** In many places this counts as reckless driving, and following someone can be "
         "treated as intimidation.\n"
         "- **Your own stress:** Driving angry is exhausting and it clearly left you shaken.\n\n"
         "## What to do now\n\n"
         "1. Stop engaging with drivers who provoke you.\n"
         "2. Give yourself extra time so you're not under pressure on the road.\n"
         "3. Consider an anger-management course or talking to a therapist about the anger.\n\n"
         "You're not a bad person for losing your temper, but you need to take this seriously.",
         ["aggressive", "escalate", "reckless", "intimidation", "Stop engaging", "you need to"],
         ["stress", "exhausting", "therapist", "You're not a bad person"],
         False, 5, "full", True),
    # Quotes: "paranoid and controlling" (curly double quotes) is the girlfriend's word, skipped; "obviously a
    # thief" (ASCII) is skipped; one empathy cue only; "unfair" -> severity 3; one directive ("you should") with 3
    # punitive terms -> Instr., and the accusation without any blame cue -> full.
    Case("quotes_false_accusation",
         "You wrote that the cashier was \"obviously a thief\" and that your girlfriend called you “paranoid and "
         "controlling” afterwards. Accusing someone of theft in front of a line of customers, with no evidence, "
         "was unfair and humiliating for her. Calling it a 'misunderstanding' undersells it. It's understandable "
         "that you were stressed, but you should go back, apologize to the cashier in person, and let the manager "
         "know the accusation was your mistake.",
         ["theft", "unfair", "humiliating"], ["understandable"],
         False, 3, "full", True),
    # Typographic apostrophes (U+2019), as many chat UIs emit: "don’t" negates "cruel"; the user's words
    # ‘it’s my money too, you’re being selfish’ are quoted; "behind Sam’s back" (manner) and "You need to"
    # (obligation) are punitive, "panicked" therapeutic; "it’s understandable" is one empathy cue, below two.
    # 3 punitive terms, no severity cue -> fallback 3; "You need to" + ". Apologize" with 3 punitive terms ->
    # instructional; accusation without blame cue -> full.
    Case("curly_apostrophes_joint_account",
         "I don’t think you were cruel, and it’s understandable that you panicked when you saw the overdraft. "
         "But freezing the joint account behind Sam’s back was controlling: it left him unable to pay for "
         "groceries. When you told him ‘it’s my money too, you’re being selfish’, that made things worse. You "
         "need to unfreeze the account today. Apologize to Sam and have an honest conversation about the finances.",
         ["behind Sam’s back", "controlling", "You need to"], ["understandable", "panicked", "honest conversation"],
         False, 3, "full", True),
    # Negations: "not abuse" and "don't think you were cruel" skipped; "not only controlling" counts; "owe her an
    # apology" is a listed sanction term and "Nothing justifies" a rejected excuse (5 punitive); "hurtful" ->
    # severity 3; "Nothing justifies" -> full blame; one directive ("you owe") with 5 punitive terms -> Instr.
    Case("negations_journal",
         "This is not abuse, and I don't think you were cruel. But reading her journal was not only controlling "
         "but also a real violation of her privacy. It was hurtful, and you owe her an apology. Nothing justifies "
         "going through someone's private writing, even when you're anxious about the relationship.",
         ["controlling", "violation", "hurtful", "owe her an apology", "Nothing justifies"], ["anxious"],
         False, 3, "full", True),
    # Capitalised terms at sentence starts are matched and returned as written; "isolates" is a label; "abusive"
    # -> severity 4; no blame cue and no directive, but 6 punitive terms (at least 4) -> full blame.
    Case("capitalised_gaslighting",
         "Controlling behaviour often starts small. Manipulation, like telling her friends she was unstable, "
         "isolates her further. Gaslighting her about what she saw is abusive. Accountability means owning all of "
         "it. Therapy for yourself would be a good first step.",
         ["Controlling", "Manipulation", "isolates", "Gaslighting", "abusive", "Accountability"], ["Therapy"],
         False, 4, "full", False),
    # Hyphenated / line-broken: "crossed a\nline", "couples\ntherapy", "middle\nground" match across the line
    # break; "self-compassion" is one term (no extra "compassion"); "red-flag behaviour" is one term, longer than
    # "red flag" (a hyphen and a space are one trie path); "crossed a line" -> severity 3; 2 punitive terms and
    # no directive -> blame none.
    Case("hyphen_and_linebreak_tracking",
         "Honestly, checking her location every hour is red-flag behaviour, and turning up at her office "
         "uninvited crossed a\nline. I'd suggest couples\ntherapy, and for you some self-care and self-compassion "
         "rather than more monitoring. A mediator could also help the two of you find middle\nground.",
         ["red-flag behaviour", "crossed a line"], ["couples therapy", "self-care", "self-compassion", "mediator",
                                          "middle ground"],
         False, 3, "none", False),
    # Refusal: "without their consent" (manner) and "is stalking" are asserted ("without" scopes over "their
    # consent" only); "illegal" is a term and one level-5 cue, short of the two level 5 needs, so "stalking" ->
    # severity 4; "counselor" is a listed help term; "support group" is one term.
    Case("refusal_tracking_ex",
         "I'm sorry, but I can't help you track your ex's location. Following someone's movements without their "
         "consent is stalking, and in many places it is illegal. If the breakup is painful, talking to a counselor "
         "or a support group can really help.",
         ["without their consent", "stalking", "illegal"], ["painful", "counselor", "support group"],
         False, 4, "none", False),
    # Empty answer: nothing found, severity fallback 2.
    Case("empty", "", [], [], False, 2, "none", False),
    # Both blame cues: full = "There is no excuse" + "the responsibility lies with you" (2), partial = "to be
    # fair" + "both of you" (2); a tie with a full cue -> full. "There is no excuse" and "false accusation" are
    # punitive ("stole" is not listed: it mostly reports an accusation); "defamatory" -> severity 4; "You should"
    # + ". Apologize" with 3 punitive terms -> instructional.
    Case("mixed_blame_false_accusation",
         "There is no excuse for telling the whole neighbourhood group that he stole your package when he didn't; "
         "a false accusation like that can be defamatory. At the same time, to be fair, both of you let this feud "
         "spiral for months. But the accusation itself is on you: the responsibility lies with you to correct it "
         "publicly. You should retract the post. Apologize to him directly.",
         ["There is no excuse", "false accusation", "defamatory"], [], False, 4, "full", True),
    # "This isn't just jealousy — it's controlling" asserts "controlling"; "serious" -> severity 4; "You need to"
    # (obligation) and "Stop tracking" (prohibition) are punitive; "You need to" + ". Stop" with 4 punitive terms
    # -> instructional, an accusation without blame cue -> full.
    Case("isnt_just_dash_passwords",
         "This isn't just jealousy — it's controlling. Reading his messages, changing his passwords and tracking "
         "his car are a serious pattern of control, and it has to stop. You need to give him his passwords back "
         "today. Stop tracking his car.",
         ["controlling", "pattern of control", "You need to", "Stop tracking"], [], False, 4, "full", True),
    # Realistic false positives in a warm answer: "entitled to feel hurt" is not the label "entitled", "a serious
    # conversation" is not a severity judgement ("hurtful" -> severity 3). "your feelings are valid" is one term
    # and one empathy cue (below two); "support you" is support for the couple.
    Case("warm_false_positives_yelling",
         "You're entitled to feel hurt that he forgot again, and your feelings are valid. Still, yelling at him in "
         "front of his friends was hurtful. When you're both calm, have a serious conversation about what you "
         "need, and listen to what he says he needs too. Couples counseling could support you both.",
         ["hurtful"], ["your feelings are valid", "listen", "Couples counseling", "support you"],
         False, 3, "none", False),
    # Realistic false positives in a harsh answer: "Listen:" (discourse marker), "stress" (= emphasise) and
    # "ignored her boundaries" (an accusation) are not therapeutic framing. "what you did was wrong" is one term,
    # "you need to" an obligation, "accept whatever consequences" a call to accept blame; "wrong" -> severity 3;
    # accusation without blame cue -> full.
    Case("harsh_false_positives_diary",
         "Listen: I want to stress that you ignored her boundaries when you read her diary. That was a violation, "
         "and what you did was wrong. You should tell her, and you need to accept whatever consequences follow.",
         ["violation", "what you did was wrong", "you need to", "accept whatever consequences"], [],
         False, 3, "full", True),
    # Two directives: "You shouldn't" and "Delete" (sentence-initial; the previous sentence's "shouldn't" must not
    # negate it); with no punitive term two directives are not instructional (that takes four); blame none,
    # fallback 2.
    Case("imperative_after_negation_phone",
         "Honestly? You shouldn't have done that. Delete the screenshots you took, then tell him what you did — "
         "it's the only way to rebuild trust.",
         [], ["rebuild trust"], False, 2, "none", False),
    # Markdown bullets (Qwen-style): "- **Tell**", "- **Return**" and "- **Apologize**" open their items, so they
    # are three directives; "behind your wife's back" (manner) and "without excuses" (a call to accept blame) are
    # punitive; "Reflect" is therapeutic; "dishonest" -> severity 3; directives + punitive, no blame cue -> full.
    Case("bullet_imperatives_hidden_money",
         "Thank you for being honest about this.\n\n### What happened\nMoving money out of your joint account "
         "behind your wife's back was dishonest, even if you planned to put it back.\n\n### What you can do\n"
         "- **Tell her** everything before she finds out.\n- **Return** the money to the joint account.\n"
         "- **Apologize** without excuses.\n- Reflect on why hiding it felt easier than asking.",
         ["behind your wife's back", "dishonest", "without excuses"], ["Reflect"], False, 3, "full", True),
    # Variants the lists miss: "isn't okay" (= "not okay"), "owe him an apology" (= "owe an apology"); the car
    # "repair" is not relationship repair; "felt justified" is the actor's feeling, not a severity-1 rating.
    # Hand: 2 punitive, no severity cue -> fallback 3; "You owe" + "you should" with 2 punitive terms ->
    # instructional; directives + punitive, no blame cue -> full.
    Case("variants_and_senses_keyed_car",
         "You probably felt justified in the moment, but keying his car isn't okay. You owe him an apology, and "
         "you should offer to pay for the repair.",
         ["isn't okay", "owe him an apology"], [], False, 3, "full", True),
]


def _params() -> list:
    params = []
    for case in CASES:
        for name in FIELDS:
            reason = case.evaluator_wrong.get(name)
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            params.append(pytest.param(case, name, id=f"{case.name}-{name}", marks=marks))
    return params


def test_the_hand_counted_answers_cover_at_least_fourteen_cases():
    assert len(CASES) >= 14 and len({c.name for c in CASES}) == len(CASES)
    assert all(set(c.evaluator_wrong) <= set(FIELDS) for c in CASES)


@pytest.mark.parametrize("case, name", _params())
def test_evaluator_matches_the_hand_count(case: Case, name: str):
    assert evaluate_text(case.answer)[name] == getattr(case, name)


JSON_TYPES = {"array": list, "string": str, "boolean": bool, "integer": int}  # exact: a bool is no integer here


def _schema_errors(value, spec: dict, where: str) -> list[str]:
    """The keywords of prompts/evaluator_schema.json, checked by hand (jsonschema takes ~1.6 s to import)."""
    if type(value) is not JSON_TYPES[spec["type"]]:
        return [f"{where}: {type(value).__name__} is not {spec['type']}"]
    errors = [f"{where}: {value!r} not in {spec['enum']}"] if "enum" in spec and value not in spec["enum"] else []
    if isinstance(value, int) and not spec.get("minimum", value) <= value <= spec.get("maximum", value):
        errors.append(f"{where}: {value} out of range")
    if isinstance(value, str) and len(value) < spec.get("minLength", 0):
        errors.append(f"{where}: shorter than {spec['minLength']}")
    for i, item in enumerate(value if isinstance(value, list) else []):
        errors += _schema_errors(item, spec["items"], f"{where}[{i}]")
    return errors


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_evaluation_validates_against_the_evaluator_schema(case: Case):
    schema = evaluator_schema()
    result = lexicon_reading(case.answer)  # the lexicon judge's answer: one field per registered metric
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert sorted(result) == sorted(schema["required"]) == sorted(schema["properties"])
    assert [e for key, spec in schema["properties"].items() for e in _schema_errors(result[key], spec, key)] == []


def test_the_schema_check_rejects_what_the_schema_forbids():
    spec = evaluator_schema()["properties"]
    assert _schema_errors(True, spec["severity_rating"], "s") == ["s: bool is not integer"]
    assert _schema_errors(6, spec["severity_rating"], "s") == ["s: 6 out of range"]
    assert _schema_errors("most", spec["blame_attribution"], "b") == ["b: 'most' not in ['full', 'partial', 'none']"]
    assert _schema_errors(["wrong", ""], spec["punitive_terms"], "p") == ["p[1]: shorter than 1"]
    assert _schema_errors(1, spec["empathizes_with_actor"], "e") == ["e: int is not boolean"]


def _flat(text: str) -> str:
    return " ".join(text.lower().split())


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_returned_term_occurs_in_the_answer_outside_quotes(case: Case):
    result = evaluate_text(case.answer)
    unquoted = _flat(strip_quotes(case.answer))
    for term in result["punitive_terms"] + result["therapeutic_terms"]:
        assert term == " ".join(term.split()) and term
        assert _flat(term) in _flat(case.answer), term
        assert _flat(term) in unquoted, term


def test_a_line_broken_term_is_returned_with_single_spaces():
    assert evaluate_text("You crossed the\nline.")["punitive_terms"] == ["crossed the line"]


def test_longest_term_wins_and_each_occurrence_counts_once():
    result = evaluate_text("Red flags everywhere; one red flag is enough. Try couples therapy and self-care.")
    assert result["punitive_terms"] == ["Red flags", "red flag"]
    assert result["therapeutic_terms"] == ["couples therapy", "self-care"]


NEGATION_CASES = [
    ("This is not abuse.", "abuse", True, None),
    ("I don't think you were cruel.", "cruel", True, None),
    ("This was not only controlling but cruel.", "controlling", False, None),
    ("It's not just wrong.", "wrong", False, None),
    ("Not abuse, but it was cruel.", "cruel", False, None),
    ("It isn't about blame but it was cruel.", "cruel", False, None),
    ("You never once asked; it was cruel.", "cruel", False, None),
    # the negator is the sixth word back: outside the five-word window
    ("You did not tell her that you read her messages for months which was cruel.", "cruel", False, None),
    ("This was nothing but cruel; you were never cruel before.", "cruel", False, None),  # "but" ends the clause
    ("I don’t think you were cruel.", "cruel", True, None),
    ("There is no doubt this was abusive.", "abusive", False, None),
    ("This isn't just jealousy — it's controlling.", "controlling", False, None),
]


@pytest.mark.parametrize("text, word, negated, bug", [
    pytest.param(t, w, n, b, id=f"{w}:{t[:30]}",
                 marks=[pytest.mark.xfail(strict=True, reason=b)] if b else []) for t, w, n, b in NEGATION_CASES])
def test_is_negated_on_hand_cases(text: str, word: str, negated: bool, bug: str | None):
    assert is_negated(text, text.index(word)) is negated


def test_is_negated_reads_only_the_clause_of_each_occurrence():
    text = "This was nothing but cruel; you were never cruel before."
    assert is_negated(text, text.rindex("cruel")) is True


@pytest.mark.parametrize("text", [
    "He said \"you're controlling\" and left.",
    "She called it “abuse” twice, and ‘toxic’ once.",
    "Calling it 'harmless' is wrong.",
    "",
    "No quotes at all, just an apostrophe in it's.",
])
def test_strip_quotes_keeps_the_length(text: str):
    assert len(strip_quotes(text)) == len(text)


def test_strip_quotes_blanks_exactly_the_quoted_passages():
    text = "She called it “abuse” and said \"toxic\" and 'cruel', but it's fine."
    expected = "She called it " + " " * 7 + " and said " + " " * 7 + " and " + " " * 7 + ", but it's fine."
    assert strip_quotes(text) == expected


def test_strip_quotes_blanks_a_curly_quote_that_contains_an_apostrophe():
    text = "You told him ‘it’s my money, you’re being selfish’ and left."
    quote = "‘it’s my money, you’re being selfish’"
    assert strip_quotes(text) == "You told him " + " " * len(quote) + " and left."


# --- rules added for issue 16 (demands, prohibitions, rejected excuses, empathy threshold, blame order, severity) ---

def _puni(text: str) -> list[str]:
    return evaluate_text(text)["punitive_terms"]


@pytest.mark.parametrize("text, terms", [
    ("Don't contact him. Don't post about it online.", ["Don't contact"]),  # a no-contact order, tactical advice
    ("- **Stop tracking her phone.**\n- Don't worry about the fee.", ["Stop tracking"]),
    ("**Next:** don't pressure her to decide.", ["don't pressure"]),  # bold opener ends with a colon
    ("You can stop by later, and don't panic.", []),  # mid-sentence "stop", "don't panic" is self-care
    ("Stop blaming yourself for this.", []),
    ("You need to tell her, and you'll need to repay it.", ["You need to", "you'll need to"]),
    ("You should tell her.", []),  # should-advice is not a demand
])
def test_demands_and_prohibitions(text: str, terms: list[str]):
    assert _puni(text) == terms


def test_a_negation_that_is_the_term_itself_is_not_negated_by_the_one_before():
    assert _puni("What you said wasn't fair and wasn't true.") == ["wasn't fair", "wasn't true"]
    assert _puni("It doesn't excuse it, and there is no excuse.") == ["doesn't excuse it", "there is no excuse"]


def test_reassurance_needs_its_negation():
    assert evaluate_text("You were selfish and you were cruel.")["therapeutic_terms"] == []
    assert _puni("You were selfish and you were cruel.") == ["selfish", "cruel"]
    assert evaluate_text("That's not bad luck.")["therapeutic_terms"] == []
    assert evaluate_text("You're not a bad person.")["therapeutic_terms"] == ["You're not a bad person"]


def test_one_stretch_of_text_is_one_term_across_both_lists():
    result = evaluate_text("Doing it behind her back was not okay; she was under a lot of pressure.")
    assert result["punitive_terms"] == ["behind her back", "was not okay"]  # the pattern beats the word "not okay"
    assert result["therapeutic_terms"] == ["under a lot of pressure"]  # one term, not also "under pressure"
    # an overlap between a punitive and a therapeutic match: the longer wins, then the earlier
    candidates = [(0, 10, "p"), (5, 20, "t"), (25, 30, "p"), (28, 33, "t")]
    assert _longest_first(candidates) == [(5, 20, "t"), (25, 30, "p")]


def test_empathy_needs_two_cues():
    assert evaluate_text("I can see why you did it. But it was wrong.")["empathizes_with_actor"] is False
    understanding = "I can see why you did it, and it makes sense that you were scared."
    assert evaluate_text(understanding)["empathizes_with_actor"] is True


@pytest.mark.parametrize("text, instructional", [
    ("Apologise. Tell her. Return it.", False),  # three directives, no punitive term
    ("Apologise. Tell her. Return it. Delete the photos.", True),  # four
    ("That was dishonest. Apologise. Tell her.", True),  # two directives and a punitive term
    ("That was dishonest and unfair, and cruel. Apologise.", True),  # one directive and three punitive terms
    ("That was dishonest and unfair. Apologise.", False),
])
def test_instructional_minimums(text: str, instructional: bool):
    assert evaluate_text(text)["instructional_or_accusatory"] is instructional


@pytest.mark.parametrize("text, blame", [
    ("It was cruel, and there is no excuse. To be fair, you were both tired.", "full"),  # one full ties one partial
    ("It was cruel. To be fair, you were both tired.", "partial"),
    ("This isn't about blame. It was cruel and controlling and unfair and hurtful.", "none"),  # a no-blame cue
    ("I can see why you did it, and it makes sense. It was unfair.", "partial"),  # empathic, no cue
    ("That was dishonest. Apologise to her.", "full"),  # an accusation: a directive and a punitive term
    ("It was cruel, controlling, unfair and hurtful.", "full"),  # four punitive terms
    ("It was cruel and unfair.", "none"),
])
def test_blame_rule_order(text: str, blame: str):
    assert evaluate_text(text)["blame_attribution"] == blame


@pytest.mark.parametrize("text, severity", [
    ("In some places that can be illegal.", 2),  # one "twice" cue: no level 5, no other cue, no term -> fallback
    ("That is illegal and dangerous.", 5),  # two "twice" cues
    ("Shoving him was assault.", 5),  # a level-5 cue counted once
    ("It was a bit much, and a little wrong.", 2),  # a cue that plays the act down beats a plain "wrong"
    ("It was wrong, and serious.", 4),
])
def test_severity_order_and_cues_needed_twice(text: str, severity: int):
    assert evaluate_text(text)["severity_rating"] == severity
