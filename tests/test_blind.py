"""Masking of gender markers (gama_utils.judge.blind): hand-written answers and their hand-masked forms."""

from __future__ import annotations

import re

import pytest

from gama_utils.judge.blind import gender_markers, mask_gender

# An independent list of gender markers, written for this test (not taken from blind.py).
ENGLISH_MARKERS = re.compile(
    r"\b(?:he|she|him|her|his|hers|himself|herself|man|woman|men|women|boyfriends?|girlfriends?|"
    r"husbands?|wife|wives|guys?|gals?|lady|ladies|gentlem[ae]n|mothers?|fathers?|moms?|dads?|mum|"
    r"sons?|daughters?|brothers?|sisters?|sir|madam|ma['’]am|mrs?|ms|miss|males?|females?|masculine|"
    r"feminine|manly|womanly|boys?|girls?|kings?|queens?|fianc[ée]e?)\b",
    re.IGNORECASE,
)
CHINESE_MARKERS = re.compile(r"她|男|女|丈夫|妻子|老公|老婆|先生|太太")


def markers_left(text: str) -> list[str]:
    """Gender markers found by the test's own lists (他 counts unless part of 其他)."""
    found = ENGLISH_MARKERS.findall(text) + CHINESE_MARKERS.findall(text)
    return found + re.findall("他", text.replace("其他", ""))


# (original answer, the masked answer written out by hand)
CASES = [
    pytest.param(
        "I am a man. You should apologise to your girlfriend today. She felt unsafe when you read "
        "her messages, and her trust matters. Give her time, and don't pressure her.",
        "I am a person. You should apologise to your partner today. They felt unsafe when you read "
        "their messages, and their trust matters. Give them time, and don't pressure them.",
        id="male-actor advice",
    ),
    pytest.param(
        "I am a woman. It sounds like you were overwhelmed. Your boyfriend may feel hurt that you "
        "checked his phone; talk to him calmly, and ask him how he feels. He deserves honesty, and "
        "so do you.",
        "I am a person. It sounds like you were overwhelmed. Your partner may feel hurt that you "
        "checked their phone; talk to them calmly, and ask them how they feel. They deserve honesty, "
        "and so do you.",
        id="female-actor advice",
    ),
    pytest.param(
        'Your husband said, "I just want to be heard." He isn\'t wrong. His wife\'s anger is real, '
        "but his reaction is his responsibility, not yours.",
        'Your spouse said, "I just want to be heard." They aren\'t wrong. Their spouse\'s anger is real, '
        "but their reaction is their responsibility, not yours.",
        id="quotes and possessives",
    ),
    pytest.param(
        "As a woman, you might ask: is her husband really the problem? Her husband's career matters "
        "to her too. She's been patient, and she'd probably welcome an apology.",
        "As a person, you might ask: is their spouse really the problem? Their spouse's career matters "
        "to them too. They've been patient, and they'd probably welcome an apology.",
        id="her husband, contractions",
    ),
    pytest.param(
        "When Mrs. Lee told her manager, the therapist advised a calmer approach. Mr Chen, a male "
        "colleague, agreed. Is he right? The choice is his.",
        "When Mx. Lee told their manager, the therapist advised a calmer approach. Mx Chen, a "
        "colleague, agreed. Are they right? The choice is theirs.",
        id="titles and male colleague",
    ),
    pytest.param(
        "As a man, your anger at the female driver was understandable, but she was not the "
        "shepherd of your schedule. Sir, other people and humans make mistakes; he should "
        "breathe.",
        "As a person, your anger at the driver was understandable, but they were not the "
        "shepherd of your schedule. Friend, other people and humans make mistakes; they should "
        "breathe.",
        id="female adjective, sir",
    ),
    pytest.param(
        "HE IS ACCUSING HER. Your brother and your mother should stay out of it; your son and "
        "daughter need calm. Let her decide, and respect herself and himself.",
        "THEY ARE ACCUSING THEM. Your sibling and your parent should stay out of it; your child and "
        "child need calm. Let them decide, and respect themselves and themselves.",
        id="capitals and family",
    ),
    pytest.param(
        "I'm a man and my ex-wife's father-in-law thinks I am wrong. The women at work and the men "
        "at the gym agree with her. Maybe she has a point: mankind's oldest lesson is that others "
        "matter.",
        "I'm a person and my ex-spouse's parent-in-law thinks I am wrong. The people at work and the "
        "people at the gym agree with them. Maybe they have a point: mankind's oldest lesson is that "
        "others matter.",
        id="hyphens, plurals, mankind",
    ),
    pytest.param(
        "我是女性。我翻看了男朋友的手机，他很生气。其他人说她应该道歉。你丈夫的感受也很重要。",
        "我是一个人。我翻看了伴侣的手机，TA很生气。其他人说TA应该道歉。你伴侣的感受也很重要。",
        id="Chinese",
    ),
    pytest.param(
        "我是男性，作为男性我不该推她。一位女性同事劝我和妻子好好谈谈，王女士也同意。",
        "我是一个人，作为一个人我不该推TA。一位同事劝我和伴侣好好谈谈，王某也同意。",
        id="Chinese titles",
    ),
]


@pytest.mark.parametrize("answer, expected", CASES)
def test_masked_answer_matches_hand_masking(answer: str, expected: str) -> None:
    assert markers_left(answer), "each case must contain markers to begin with"
    masked = mask_gender(answer)
    assert masked == expected
    assert markers_left(masked) == []
    assert gender_markers(masked) == []


@pytest.mark.parametrize("answer, expected", CASES)
def test_gender_markers_lists_what_the_independent_list_finds(answer: str, expected: str) -> None:
    ours = [m.lower() for m in gender_markers(answer)]
    theirs = [m.lower() for m in markers_left(answer)]
    # blind.py reports contractions whole ("she's"); the test's list sees the pronoun inside.
    ours = [re.sub(r"['’](s|d|ll)$", "", m) for m in ours]
    for marker in theirs:
        if marker != "他":
            assert any(marker in o for o in ours), (marker, ours)


@pytest.mark.parametrize("word", ["therapist", "manager", "human", "shepherd", "others", "hermit",
                                  "Herald", "mankind", "sheriff", "mention", "Thereafter", "ashes", "heartache"])
def test_words_containing_gendered_strings_survive(word: str) -> None:
    text = f"The {word} stayed."
    assert mask_gender(text) == text
    assert gender_markers(text) == []


def test_her_heuristic_hand_cases() -> None:
    assert mask_gender("I love her.") == "I love them."
    assert mask_gender("her own plan") == "their own plan"
    assert mask_gender("make her feel safe") == "make them feel safe"
    assert mask_gender("talk to her about it") == "talk to them about it"
    assert mask_gender("show her respect") == "show them respect"
    assert mask_gender("respect her boundaries") == "respect their boundaries"
    assert mask_gender("his or her choice; he/she decides") == "their choice; they decide"


def test_chinese_other_words_with_ta_character_survive() -> None:
    text = "其他同事弹吉他，也尊重他人。"
    assert mask_gender(text) == text
    assert gender_markers(text) == []


def test_masking_is_idempotent_and_arms_become_equal() -> None:
    male = "I am a man. Your girlfriend says she is hurt; give her space and respect her choices."
    female = "I am a woman. Your boyfriend says he is hurt; give him space and respect his choices."
    assert mask_gender(male) == mask_gender(female)
    assert mask_gender(mask_gender(male)) == mask_gender(male)


def test_agreement_titles_and_questions_hand_cases() -> None:
    assert mask_gender("She was upset, was she?") == "They were upset, were they?"
    assert mask_gender("Why does he care, and does she know?") == "Why do they care, and do they know?"
    assert mask_gender("The issue is he refuses.") == "The issue is they refuse."
    assert mask_gender("He has MS and Ms Lee knows.") == "They have MS and Mx Lee knows."
    assert mask_gender("I miss her. Miss Kim? Mr. Park?") == "I miss them. Mx Kim? Mx. Park?"
    assert mask_gender("A woman's right; the men's room.") == "A person's right; the people's room."


@pytest.mark.parametrize("text", ["He2 said so.", "O'Her plan", "HIS car", "Mrs.Smith came", "she’d left",
                                  "the wife's car", "Ma’am, please", "my fiancée stayed", "王女士", "he_said"])
def test_the_prefilter_lets_through_every_text_masking_changes(text: str) -> None:
    """The one-pass trigger search may pass more texts than masking changes, never fewer."""
    from gama_utils.judge import blind
    assert blind._masked(text) == text or blind._may_hold_markers(text)
    assert not blind._may_hold_markers("The therapist and the manager stayed.")
