"""Masking of gender markers for blinded evaluation and annotation (paper §3.3, §4.5).

With blind=True the evaluator, and the human annotators of §4.5, see an answer only
after `mask_gender`: the actor prefix ("I am a man." → "I am a person."), partner
references and every gendered word are replaced by a neutral form, so nothing tells
them which arm of a mirrored pair they are reading.

Rules, applied token by token (a token is a whole word, optionally with an apostrophe
suffix such as "'s" or "'d"), so words that merely contain a gendered string survive:
"therapist", "hermit", "manager", "shepherd", "human", "Herald", "others", "sheriff".
"mankind" is kept too: it names humanity, not anyone's gender, and rewriting it would
change wording that is the same in both arms of a pair.

- Pronouns: he/she → they, him → them, himself/herself → themselves, hers → theirs;
  his → their before a noun, theirs otherwise ("the choice is his." → "theirs.").
- "her" (possessive or object) uses a heuristic: → "them" at the end of the text,
  before punctuation, before a function word (preposition, conjunction, determiner,
  pronoun, common adverb), before a base-form verb ("make her feel"), after "let", or
  between a two-object verb and a thing given ("give her space", "show her respect");
  → "their" otherwise, i.e. before a noun-ish word ("her husband", "her own", "told her
  manager"). It errs on rare cases such as "made her dinner". "his or her", "he/she",
  "him or her" collapse to one neutral pronoun.
- Verb agreement after a replaced subject pronoun, so the text stays grammatical:
  is/was/has/does (and their n't forms) and a list of frequent third-person verbs
  ("she wants" → "they want"), also across one adverb ("he never listens"); inverted
  questions at a sentence start or after a wh-word ("Is she right?" → "Are they right?").
  Contractions: he's → they're (they've before a participle), she'd → they'd, he'll → they'll.
- Nouns: man/woman → person, men/women → people, boyfriend/girlfriend → partner,
  husband/wife → spouse, mother/father → parent, son/daughter → child, brother/sister →
  sibling, boy/girl → child, king/queen → monarch, and more (see `NOUNS`); plural and
  possessive kept ("wife's" → "spouse's"), hyphenated compounds work ("ex-wife").
- male/female: before a noun they are dropped ("a female colleague" → "a colleague",
  with a/an fixed); otherwise → person/people; "I am male." → "I am a person.".
- Titles Mr/Mrs/Ms/Mister (and "Miss" before a name) → Mx; sir/madam/ma'am → friend;
  masculine/feminine/manly/womanly → gendered.
- Capitalisation is preserved (He → They, HER → THEIR).
- Chinese: 她 → TA and 他 → TA (but not inside 其他, 他人, 吉他, …), 男朋友/女朋友,
  男友/女友, 丈夫/妻子, 老公/老婆 → 伴侣; 我是男性/女性 → 我是一个人, other 男性/女性 →
  人 (dropped before a role noun such as 同事); 男人/女人 → 人, 儿子/女儿 → 孩子, ….

Given names are not masked: the benchmark's prompts contain none, and answers rarely
invent one. `gender_markers` lists whatever gender marker is still in a text.
"""

from __future__ import annotations

import re
from functools import lru_cache, partial

from gama_utils.core.memo import TextMemo, version_of

# --------------------------------------------------------------------------- vocabulary

SUBJECT = {"he": "they", "she": "they"}
OBJECT_ETC = {"him": "them", "himself": "themselves", "herself": "themselves", "hers": "theirs"}
CONTRACTIONS = {"he's", "she's", "he'd", "she'd", "he'll", "she'll"}

NOUNS: dict[str, str] = {
    "man": "person", "men": "people", "woman": "person", "women": "people",
    "boyfriend": "partner", "boyfriends": "partners", "girlfriend": "partner", "girlfriends": "partners",
    "husband": "spouse", "husbands": "spouses", "wife": "spouse", "wives": "spouses",
    "hubby": "spouse", "wifey": "spouse", "bride": "spouse", "brides": "spouses",
    "bridegroom": "spouse", "househusband": "homemaker", "housewife": "homemaker", "housewives": "homemakers",
    "fiance": "partner", "fiancee": "partner", "fiancé": "partner", "fiancée": "partner",
    "widow": "surviving spouse", "widower": "surviving spouse",
    "guy": "person", "guys": "people", "gal": "person", "gals": "people", "dude": "person", "dudes": "people",
    "lady": "person", "ladies": "people", "gentleman": "person", "gentlemen": "people",
    "lad": "person", "lads": "people", "lass": "person", "lasses": "people", "bro": "friend",
    "mother": "parent", "mothers": "parents", "father": "parent", "fathers": "parents",
    "mom": "parent", "moms": "parents", "mum": "parent", "mums": "parents", "mommy": "parent",
    "mummy": "parent", "mama": "parent", "dad": "parent", "dads": "parents", "daddy": "parent", "papa": "parent",
    "stepmother": "stepparent", "stepfather": "stepparent", "stepmom": "stepparent", "stepdad": "stepparent",
    "grandmother": "grandparent", "grandfather": "grandparent", "grandma": "grandparent",
    "grandpa": "grandparent", "granny": "grandparent",
    "grandmothers": "grandparents", "grandfathers": "grandparents",
    "son": "child", "sons": "children", "daughter": "child", "daughters": "children",
    "stepson": "stepchild", "stepdaughter": "stepchild", "grandson": "grandchild", "granddaughter": "grandchild",
    "brother": "sibling", "brothers": "siblings", "sister": "sibling", "sisters": "siblings", "sis": "sibling",
    "uncle": "relative", "uncles": "relatives", "aunt": "relative", "aunts": "relatives", "auntie": "relative",
    "nephew": "relative", "nephews": "relatives", "niece": "relative", "nieces": "relatives",
    "boy": "child", "boys": "children", "girl": "child", "girls": "children",
    "king": "monarch", "kings": "monarchs", "queen": "monarch", "queens": "monarchs",
    "prince": "royal", "princes": "royals", "princess": "royal", "princesses": "royals",
    "males": "people", "females": "people",
    "businessman": "businessperson", "businesswoman": "businessperson",
    "businessmen": "businesspeople", "businesswomen": "businesspeople",
    "chairman": "chair", "chairwoman": "chair", "salesman": "salesperson", "saleswoman": "salesperson",
    "spokesman": "spokesperson", "spokeswoman": "spokesperson",
    "policeman": "police officer", "policewoman": "police officer", "policemen": "police officers",
    "policewomen": "police officers", "fireman": "firefighter", "firemen": "firefighters",
    "waitress": "server", "actress": "actor", "hostess": "host", "stewardess": "flight attendant",
    "manhood": "adulthood", "womanhood": "adulthood",
    "masculinity": "gender identity", "femininity": "gender identity",
    "masculine": "gendered", "feminine": "gendered", "manly": "gendered", "womanly": "gendered",
    "unmanly": "gendered", "unladylike": "gendered", "ladylike": "gendered", "macho": "gendered",
    "girly": "gendered", "effeminate": "gendered",
    "sir": "friend", "madam": "friend", "madame": "friend", "ma'am": "friend", "maam": "friend",
}
ADJECTIVES = {"male": "person", "female": "person"}  # dropped before a noun, else the noun
TITLES = {"mr", "mrs", "ms", "mister"}  # → Mx; "Miss" only before a capitalised name

# Words after "her"/"his" that show it is not followed by a noun (so: them / theirs).
FUNCTION_WORDS = frozenset("""
about above across after against along among around as at before behind below beside between beyond
by despite down during for from in inside into like near of off on onto out outside over past since
through throughout to toward towards under until up upon with within without
and or but nor so yet because if that when while whether though although unless than once where why
how what who whom whose which
a an the this these those my your our their its some any every each no all both either neither
it i you we they me us them him her his anything something everything nothing anyone someone everyone
again too also now then first enough anyway later soon right well very more less here there alone
together yourself anymore today yesterday tomorrow tonight instead either already just even
directly honestly calmly respectfully properly immediately sincerely openly privately publicly clearly
fairly gently badly personally constantly repeatedly physically emotionally verbally seriously
completely entirely unfairly regularly deeply kindly harshly afterwards
is was are were be been being has have had do does did will would can could should may might must
""".split())
BASE_VERBS = frozenset("""
feel know understand see go do be have make decide choose speak talk explain leave come stay think
apologize apologise respond react express finish get tell hear forgive believe accept pursue heal
breathe reconsider consider realize realise continue cry calm vent listen agree refuse recover
""".split())
# "give her space": after these verbs, "her" before one of GIVEN_THINGS is an object.
TWO_OBJECT_VERBS = frozenset("""
give gives gave giving given offer offers offered offering allow allows allowed allowing grant granted
owe owes owed show shows showed shown showing send sends sent tell tells told telling teach taught
promise promised lend lent buy bought
""".split())
GIVEN_THINGS = frozenset("""
space time room respect credit support attention privacy freedom permission money advice feedback
reassurance comfort love flowers gifts notice details everything anything something nothing
""".split())
LET = frozenset({"let", "lets", "letting"})

AUXILIARIES = {"is": "are", "was": "were", "has": "have", "does": "do", "isn't": "aren't",
               "wasn't": "weren't", "hasn't": "haven't", "doesn't": "don't"}
THIRD_PERSON_VERBS = frozenset("""
says feels thinks wants needs knows deserves seems tries makes gets goes comes takes gives tells asks
sees hears finds believes expects cares loves likes understands agrees refuses decides chooses becomes
remains stays leaves lives works earns spends pays uses means worries calls texts reacts responds
apologizes apologises continues starts stops keeps lets helps shows sets puts brings owns controls acts
behaves treats talks speaks listens trusts blames accepts wishes hopes sounds looks appears admits
claims insists denies explains complains yells shouts cries argues reaches watches catches
""".split())
SKIPPABLE_ADVERBS = frozenset("""
never always often really just also still only sometimes usually probably clearly actually even
already rarely simply genuinely truly constantly
""".split())
PARTICIPLES = frozenset("""
been got gotten had done made gone said told shown taken given become tried lost spent left broken
started stopped decided chosen asked agreed refused worked felt
""".split())
# An auxiliary right before a pronoun is inverted ("Is she right?") after these or a sentence start.
INVERSION_OPENERS = frozenset("what why how where when who whom which and or but so , ;".split())

# Chinese, longest first; 他 and 她 are handled after these.
CHINESE_TERMS: tuple[tuple[str, str], ...] = (
    ("女士们", "各位"), ("先生们", "各位"),
    ("男朋友", "伴侣"), ("女朋友", "伴侣"), ("男友", "伴侣"), ("女友", "伴侣"),
    ("丈夫", "伴侣"), ("妻子", "伴侣"), ("老公", "伴侣"), ("老婆", "伴侣"),
    ("男人", "人"), ("女人", "人"), ("男生", "人"), ("女生", "人"),
    ("男孩", "孩子"), ("女孩", "孩子"), ("儿子", "孩子"), ("女儿", "孩子"),
    ("父亲", "家长"), ("母亲", "家长"), ("爸爸", "家长"), ("妈妈", "家长"),
    ("哥哥", "兄弟姐妹"), ("弟弟", "兄弟姐妹"), ("姐姐", "兄弟姐妹"), ("妹妹", "兄弟姐妹"),
)
CHINESE_ROLE_NOUNS = "朋友|同事|员工|用户|伴侣|家人|亲属|司机|乘客|领导|上司|下属|邻居|同学|顾客|路人"
CHINESE_HE_EXCEPTIONS = "其他|他人|吉他|利他|他乡|他国|他者|他日|他处"
_CJK = "\u4e00-\u9fff"

# --------------------------------------------------------------------------- patterns

_WORD = r"[A-Za-zÀ-ÖØ-öø-ÿ]+(?:['’][A-Za-z]+)*"
_TOKEN = re.compile(rf"{_WORD}|\s+|.", re.S)
_IS_WORD = re.compile(rf"^{_WORD}$")
# "he or she", "his/her", ... collapse to one pronoun, which the token pass then neutralises.
_PAIRED = (
    (re.compile(r"\b(?:he|she)\s*(?:/|or)\s*(?:he|she)\b|\bs/he\b", re.I), "he"),
    (re.compile(r"\b(?:himself|herself)\s*(?:/|or)\s*(?:himself|herself)\b", re.I), "himself"),
    (re.compile(r"\b(?:him\s*(?:/|or)\s*her|her\s*(?:/|or)\s*him)\b", re.I), "him"),
    (re.compile(r"\b(?:his|her)\s*(?:/|or)\s*(?:his|her)\b", re.I), "his"),
)
_PREDICATE_ADJECTIVE = re.compile(r"\b(I am|I'm|I’m|i am|i'm)\s+(?:male|female)\b(?!\s+[A-Za-z])", re.I)
_CHINESE_PREDICATE = re.compile(rf"(是|为|作为|一个|一位|一名|一|个)?(男性|女性)({CHINESE_ROLE_NOUNS})?")
_CHINESE_TITLE = re.compile(rf"([{_CJK}])(先生|太太|女士|小姐)")
_CHINESE_HE = re.compile(rf"{CHINESE_HE_EXCEPTIONS}|他|她")
_CHINESE_MARKERS = re.compile(
    "|".join([t for t, _ in CHINESE_TERMS] + ["男性", "女性", "先生", "太太", "女士", "小姐"]))


def _match_case(source: str, replacement: str) -> str:
    """`replacement` in the capitalisation of `source` (HER → THEIR, Her → Their)."""
    if len(source) > 1 and source.isupper():
        return replacement.upper()
    if source[:1].isupper():
        return replacement[:1].upper() + replacement[1:]
    return replacement


def _same_apostrophe(source: str, replacement: str) -> str:
    """`replacement` written with the apostrophe `source` uses (’ or ')."""
    return replacement.replace("'", "’") if "’" in source else replacement


def _split_apostrophe(token: str) -> tuple[str, str, str]:
    """(lower-case base, apostrophe suffix as written, normalised full token)."""
    normalised = token.replace("’", "'").lower()
    base, sep, rest = normalised.partition("'")
    suffix = token[len(base):] if sep else ""
    return base, suffix, normalised


class _Tokens:
    """A token list with look-ahead/behind over words, skipping whitespace."""

    def __init__(self, text: str) -> None:
        self.tokens = _TOKEN.findall(text)
        self.out = list(self.tokens)

    def is_word(self, i: int) -> bool:
        return 0 <= i < len(self.tokens) and bool(_IS_WORD.match(self.tokens[i]))

    def next(self, i: int) -> int | None:
        """Index of the next non-space token after i, or None at the end."""
        for j in range(i + 1, len(self.tokens)):
            if not self.tokens[j].isspace():
                return j
        return None

    def prev(self, i: int) -> int | None:
        for j in range(i - 1, -1, -1):
            if not self.tokens[j].isspace():
                return j
        return None

    def lower(self, i: int | None) -> str:
        return "" if i is None else self.tokens[i].replace("’", "'").lower()

    def next_word_skipping_adverbs(self, i: int) -> int | None:
        j = self.next(i)
        if j is not None and self.lower(j) in SKIPPABLE_ADVERBS:
            j = self.next(j)
        return j if j is not None and self.is_word(j) else None


def _not_before_noun(t: _Tokens, i: int) -> bool:
    """True when the word after position i shows that i is not a possessive determiner."""
    j = t.next(i)
    if j is None or not t.is_word(j):
        return True
    return t.lower(j) in FUNCTION_WORDS or t.lower(j) in BASE_VERBS


def _agree_following_verb(t: _Tokens, i: int) -> None:
    """Put the verb after a replaced subject pronoun at position i in the plural."""
    j = t.next_word_skipping_adverbs(i)
    if j is None:
        return
    word = t.lower(j)
    if word in AUXILIARIES:
        t.out[j] = _same_apostrophe(t.tokens[j], _match_case(t.tokens[j], AUXILIARIES[word]))
    elif word in THIRD_PERSON_VERBS:
        t.out[j] = _match_case(t.tokens[j], _base_form(word))


def _agree_inverted_auxiliary(t: _Tokens, i: int) -> None:
    """'Is she right?' → 'Are they right?': an auxiliary before the pronoun opening a question."""
    p = t.prev(i)
    if p is None or t.lower(p) not in AUXILIARIES:
        return
    before = t.prev(p)
    if before is None or t.tokens[before] in ".!?\"“‘'" or t.lower(before) in INVERSION_OPENERS:
        t.out[p] = _match_case(t.tokens[p], AUXILIARIES[t.lower(p)])


def _base_form(verb: str) -> str:
    """Base form of a third-person singular verb from `THIRD_PERSON_VERBS`."""
    if verb.endswith("ies"):
        return verb[:-3] + "y"
    if verb.endswith(("ches", "shes", "sses", "xes", "zes", "oes")):
        return verb[:-2]
    return verb[:-1]


def _neutral_like(neutral: str, match: re.Match[str]) -> str:
    """`neutral` in the letter case of the matched word."""
    return _match_case(match.group(0), neutral)


def _mask_english(text: str) -> str:
    for pattern, neutral in _PAIRED:
        text = pattern.sub(partial(_neutral_like, neutral), text)
    text = _PREDICATE_ADJECTIVE.sub(lambda m: f"{m.group(1)} a person", text)
    t = _Tokens(text)
    for i, token in enumerate(t.tokens):
        if not t.is_word(i):
            continue
        base, suffix, word = _split_apostrophe(token)
        if word in SUBJECT:
            t.out[i] = _match_case(token, "they")
            _agree_following_verb(t, i)
            _agree_inverted_auxiliary(t, i)
        elif word in CONTRACTIONS:
            if word.endswith("'s"):
                j = t.next_word_skipping_adverbs(i)
                suffix = suffix[0] + ("ve" if j is not None and t.lower(j) in PARTICIPLES else "re")
            t.out[i] = _match_case(token, "they") + _match_case(token, suffix)
        elif word in OBJECT_ETC:
            t.out[i] = _match_case(token, OBJECT_ETC[word])
        elif word == "her":
            prev = t.prev(i)
            nxt = t.next(i)
            them = (_not_before_noun(t, i) or t.lower(prev) in LET
                    or t.lower(prev) in TWO_OBJECT_VERBS and t.lower(nxt) in GIVEN_THINGS)
            t.out[i] = _match_case(token, "them" if them else "their")
        elif word == "his":
            t.out[i] = _match_case(token, "theirs" if _not_before_noun(t, i) else "their")
        elif word in NOUNS or base in NOUNS and suffix.lower() in ("'s", "’s"):
            key = word if word in NOUNS else base
            t.out[i] = _match_case(token, NOUNS[key]) + ("" if word in NOUNS else suffix)
        elif word in ADJECTIVES:
            _mask_adjective(t, i)
        elif _is_title(t, i):
            t.out[i] = "MX" if token.isupper() and len(token) > 1 else "Mx"
    return "".join(t.out)


def _before_name(t: _Tokens, i: int) -> bool:
    j = t.next(i)
    return j is not None and t.is_word(j) and t.tokens[j][0].isupper()


def _is_title(t: _Tokens, i: int) -> bool:
    """Mr/Mrs/Ms/Mister before '.' or a name; Miss only before a name (else it is the verb)."""
    token, j = t.tokens[i], t.next(i)
    if token.lower() in TITLES and token[0].isupper():
        return _before_name(t, i) or (j is not None and t.tokens[j] == ".")
    return token == "Miss" and _before_name(t, i)


def _mask_adjective(t: _Tokens, i: int) -> None:
    """male/female: dropped before a noun (fixing a/an), otherwise the noun 'person'."""
    token, j = t.tokens[i], t.next(i)
    if j is None or _not_before_noun(t, i):
        t.out[i] = _match_case(token, ADJECTIVES[token.lower()])
        return
    t.out[i] = ""
    for k in range(i + 1, j):
        t.out[k] = ""
    if token[0].isupper() and t.out[j][:1].islower():
        t.out[j] = t.out[j][0].upper() + t.out[j][1:]
    p = t.prev(i)
    if p is not None and t.lower(p) in ("a", "an"):
        article = "an" if t.tokens[j][:1].lower() in "aeiou" else "a"
        t.out[p] = _match_case(t.tokens[p], article)


def _mask_chinese(text: str) -> str:
    for term, neutral in CHINESE_TERMS:
        text = text.replace(term, neutral)

    def predicate(m: re.Match) -> str:
        lead, _, role = m.group(1) or "", m.group(2), m.group(3)
        if role:
            return lead + role
        if lead in ("一个", "一位", "一名"):
            return "一个人"
        if lead in ("是", "为", "作为"):
            return lead + "一个人"
        return lead + "人"

    text = _CHINESE_PREDICATE.sub(predicate, text)

    def title(m: re.Match) -> str:
        spouse = m.group(1) in "我你他她的" and m.group(2) in ("先生", "太太")  # 我先生 = my husband
        return m.group(1) + ("伴侣" if spouse else "某")  # 王女士 → 王某

    text = _CHINESE_TITLE.sub(title, text)
    return _CHINESE_HE.sub(lambda m: "TA" if m.group(0) in ("他", "她") else m.group(0), text)


_TRIGGERS = frozenset({*SUBJECT, *OBJECT_ETC, *CONTRACTIONS, "her", "his", *NOUNS, *ADJECTIVES, *TITLES, "miss"})
_TRIGGER_RUNS = frozenset(word.split("'")[0] for word in _TRIGGERS)
_LETTER_RUN = re.compile("[a-zà-öø-ÿ]+")
_ANY_CJK = re.compile(f"[{_CJK}]")


def _may_hold_markers(text: str) -> bool:
    """False only when no word of `text` could be masked (so masking would return it unchanged).

    Any run of letters that begins a trigger word counts (also after an apostrophe): a superset of
    the words masking reads, found in one pass over the lower-cased text.
    """
    return bool(_ANY_CJK.search(text)) or not _TRIGGER_RUNS.isdisjoint(_LETTER_RUN.findall(text.lower()))


def version() -> str:
    """The masking's version: this module's source (a stored mask is valid for it)."""
    return version_of(__file__)


MASKS = TextMemo("mask_gender", version)
"""Masks kept on disk across kernels and runs: `with MASKS.kept(texts):` around a blind pass."""


def mask_gender(text: str) -> str:
    """`text` with every gender marker replaced by a neutral form (rules in the module docstring).

    Texts without any marker come back unchanged at once; results are memoised (in memory and in
    MASKS) because the same prompt is masked once per model and the same answers in 05 and 08.
    """
    if not isinstance(text, str):
        raise TypeError(f"mask_gender expects a str, got {type(text).__name__}")
    return _mask_once(text)


@lru_cache(maxsize=131072)
def _mask_once(text: str) -> str:
    if not _may_hold_markers(text):
        return text
    masked = MASKS.get(text)
    if masked is None:
        masked = _masked(text)
        MASKS.remember(text, masked)
    return masked


def _masked(text: str) -> str:
    return _mask_chinese(_mask_english(text))


def gender_markers(text: str) -> list[str]:
    """The gender markers still present in `text`, in order of appearance (empty when masked)."""
    found: list[tuple[int, str]] = []
    pos = 0
    t = _Tokens(text)
    for i, token in enumerate(t.tokens):
        if t.is_word(i):
            base, suffix, word = _split_apostrophe(token)
            if (word in SUBJECT or word in OBJECT_ETC or word in CONTRACTIONS or word in ("her", "his")
                    or word in NOUNS or word in ADJECTIVES or base in NOUNS and suffix.lower() in ("'s", "’s")
                    or _is_title(t, i)):
                found.append((pos, token))
        pos += len(token)
    for m in _CHINESE_HE.finditer(text):
        if m.group(0) in ("他", "她"):
            found.append((m.start(), m.group(0)))
    found += [(m.start(), m.group(0)) for m in _CHINESE_MARKERS.finditer(text)]
    return [marker for _, marker in sorted(found)]
