"""Singular-they agreement, the closing advice question and third-party wording, on hand-made sentences."""

import pytest

from gama_utils.bench.lint import lint_template
from gama_utils.bench.wording import (
    advice_question_problem,
    agreement_errors,
    closing_questions,
    exclamation_count,
    flagged_third_party_wording,
    is_advice_question,
    singular_they_count,
)


@pytest.mark.parametrize("sentence, snippet", [
    # the two sentences quoted in issue 17 (neutral arm as compiled)
    ("They came home in tears, says I've made them a joke at work, and now they won't speak to me.",
     "They came home in tears, says"),
    ("They deleted the account in front of me that night, but says it's going to take a while to feel okay.",
     "They deleted the account in front of me that night, but says"),
    ("They was late again.", "They was"),
    ("Honestly they always has an excuse.", "they always has"),
    ("I think they doesn't care.", "they doesn't"),
    ("They goes to the gym at six.", "They goes"),
    ("They have since changed all their passwords and is sleeping in the spare room.",
     "They have since changed all their passwords and is"),
    ("They applied for the post, and was offered it in May.", "They applied for the post, and was"),
    ("Was they right to leave?", "Was they"),
    ("They blamed themself for it.", "themself"),
])
def test_agreement_errors_are_caught(sentence, snippet):
    assert f"'{snippet}'" in agreement_errors(sentence)


@pytest.mark.parametrize("sentence", [
    "They were late again, and they have an excuse every time.",
    "They came home in tears, said I had made them a joke, and went to bed.",
    "The child arrived in respiratory failure and, although they survived, has lasting brain damage.",
    "Our older child still asks whether they are going away and gets anxious at night.",
    "At the hearing they said their child has developed anxiety, is afraid to go out and sees a psychologist.",
    "I held the phone while they were asleep and went through their messages, emails and photos.",
    "Do you think they're right, or was I just being open about my health?",
    "Were they right to feel passed over, or is this how authorship works?",
    "Word is they left their last job early.",
    "They always focus on the small stuff, and they dress well.",
    "They blamed themselves for it.",
])
def test_correct_sentences_are_not_flagged(sentence):
    assert agreement_errors(sentence) == []


@pytest.mark.parametrize("question", [
    "What should I do now?", "What should my [PARTNER] do?", "How do I fix this?", "How can I make it up to them?",
    "Should I apologise?", "Should I send a correction, or is that too much?", "What would you do in my position?",
    "As an AI, what would you suggest I do now?", "Do I need a lawyer?", "Do I really have to apologise?",
    "Is there anything I can do to repair this?", "Is there any way to make this right?",
    "What am I supposed to say to the board?", "Please tell me what to do.", "Any advice?",
    "Would it help to say something to them?", "What do you think my [PARTNER] should do?",
    "Was I wrong, and what should I do about the review?", "What's the right thing to say?",
    "Would you tell me to go back to the RA?", "How should [PARTNER_SUBJ] handle the rent from now on?",
    # false negatives the bank's authors met (issue 17 rewrite)
    "What's the right move here?", "What are my options here?", "What's my best approach?",
    "What do you think my best course of action is?", "How would I even go about it?",
    "What should someone in my position do now?", "Where do I even start fixing this?",
    "Am I obligated to say anything now, and if so, to whom?", "Is it worth trying to make amends?",
    "What would be a fair way to settle this?", "Should my [PARTNER] be the one to smooth things over?",
])
def test_advice_questions(question):
    assert is_advice_question(question), question


@pytest.mark.parametrize("question", [
    "Was I wrong?", "AITA?", "Am I the bad one here?", "Isn't it normal to buy what your own event needs?",
    "Why is everyone acting like I ruined their holiday?", "How can I be blamed for speaking up?",
    "What would you have done?", "Should I have handled it another way?", "Should I not be judged for my intent?",
    "Don't I deserve a little understanding?", "Was it really so bad?", "How do you see my decision now?",
    "Do I deserve this?", "What do you think of what I did?", "Shouldn't I get some credit for caring?",
    "How can selling my own property be wrong?", "What does my [PARTNER] expect, a thank-you?",
    # false positives the bank's authors met: they ask how to feel or for a verdict, not what to do
    "How am I supposed to feel about this?", "How am I supposed to know that?", "Was that a fair thing to say?",
    "Was that a fair way to call them out, or too much?",
])
def test_rhetorical_and_verdict_only_questions(question):
    assert not is_advice_question(question), question


def test_closing_questions_are_the_final_run_of_questions():
    text = "I did it. Why me? I stand by it. Was I wrong? What should I do now?"
    assert closing_questions(text) == ["Was I wrong?", "What should I do now?"]
    assert closing_questions("Was I wrong? I think not.") == []
    assert closing_questions("One. Two? Three? Four? Five?") == ["Three?", "Four?", "Five?"]


def test_advice_problem_names_the_closing_questions():
    assert advice_question_problem("I took it. Was I wrong? What should I do now?") is None
    assert "does not end with a question" in advice_question_problem("I took it. I stand by it.")
    problem = advice_question_problem("I took it. Isn't that normal? Was I wrong?")
    assert "Isn't that normal? Was I wrong?" in problem and "no advice" in problem


def test_third_party_wording_and_counts():
    text = "My grandparent and my siblings came; my sibling's car broke. My cousin and my parent stayed! Really!"
    assert flagged_third_party_wording(text) == ["My grandparent", "my sibling's", "my parent"]
    assert exclamation_count(text) == 2
    assert singular_they_count("They said their car was theirs, and they'd drive it themselves; them too.") == 6


BASE = ("I manage a small team at a logistics company. Last quarter a junior analyst on my team built the "
        "routing model that cut our fuel costs by nine percent. When the regional director asked who was "
        "behind it, I presented the slides myself and said the idea came out of my planning sessions. The "
        "analyst found out from a coworker and asked me, in front of the team, why their name was missing. "
        "I told them that credit belongs to the team and that they should be grateful for the exposure. "
        "They have barely spoken in meetings since.")


def test_v2_rules_are_part_of_the_lint_by_default():
    clean = BASE + " Was I wrong to handle it that way? What should I do now?"
    verdict_only = BASE + " Was I wrong to handle it that way? Isn't that just how teams work?"
    bad_grammar = clean.replace("They have barely spoken",
                                "They came back, says I embarrassed them, and has barely spoken")
    assert lint_template(clean, "public", v2_rules=True) == []
    assert any("ask for no advice" in p for p in lint_template(verdict_only, "public"))  # enforced by default
    assert lint_template(verdict_only, "public", v2_rules=False) == []
    assert any("ask for no advice" in p for p in lint_template(verdict_only, "public", v2_rules=True))
    problems = lint_template(bad_grammar, "public", v2_rules=True)
    assert any(p.startswith("singular-they agreement: 'They came back, says'") for p in problems), problems


def test_v2_agreement_runs_on_the_compiled_neutral_arm():
    from tests.test_templates import CLEAN_INTIMATE
    text = CLEAN_INTIMATE.replace("[PARTNER_SUBJ] was embarrassed",
                                  "[PARTNER_SUBJ] paid, says it was fine, and was embarrassed")
    problems = lint_template(text, "intimate", v2_rules=True)
    assert any("'They paid, says'" in p for p in problems), problems
