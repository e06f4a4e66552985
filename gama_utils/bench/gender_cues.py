"""Gender cues in template text: normalisation, gendered words, slang, names, titles, look-alikes, Chinese.

Text is normalised before it is checked (Unicode NFKC, invisible characters removed), so a
gendered word cannot hide behind a zero-width space, a soft hyphen or full-width letters; a word
is also read without its accents, so a combining mark ("wife" + U+0301, shown "wifé") hides nothing.
Latin words written with Cyrillic or Greek look-alike letters are flagged in English text; Latin ones that no
normalisation turns back (the dotless ı of "hıs", ȷ, ɑ, ɡ, ɩ) where the word they spell is a gender cue (the
Turkish ı of a place name, Kadıköy, is a letter). Every such word is read back in plain Latin letters so the word
it spells is checked too.
"""

from __future__ import annotations

import re
import unicodedata

GENDERED_WORDS: frozenset[str] = frozenset("""
he she him her his hers himself herself
man woman men women male female males females masculine feminine manly womanly manhood womanhood
boy girl boys girls boyfriend girlfriend boyfriends girlfriends husband wife husbands wives
hubby wifey fiance fiancee fiancé fiancée bride bridegroom widow widower
mother father mothers fathers mom mum dad mommy mummy daddy mama papa motherhood fatherhood
maternal paternal motherly fatherly son sons daughter daughters brother brothers sister sisters
aunt aunts uncle uncles niece nieces nephew nephews grandma grandpa grandmother grandfather
granddaughter grandson stepmother stepfather stepson stepdaughter bridesmaid groomsman
king queen prince princess lady ladies gentleman gentlemen guy guys gal gals lad lass dude bro sis
sir madam ma'am maam mister missus mr mrs ms
actress waitress hostess stewardess landlady headmistress businessman businesswoman
chairman chairwoman policeman policewoman fireman salesman saleswoman spokesman spokeswoman
pregnant pregnancy
fisherman fishermen middleman middlemen cameraman cameramen handyman handymen workman workmen foreman foremen
doorman doormen repairman repairmen deliveryman deliverymen mailman mailmen postman postmen sportsman sportsmen
craftsman craftsmen layman laymen boatman boatmen ferryman ferrymen watchman watchmen weatherman garbageman
garbagemen congressman congresswoman councilman councilwoman alderman anchorman anchorwoman nobleman noblewoman
horseman horsemen frontman salesmen spokesmen chairmen firemen policemen businessmen
""".split())

# Informal and abbreviated gendered words (checked like GENDERED_WORDS, including plurals and possessives).
GENDERED_SLANG: frozenset[str] = frozenset("""
gf gfs bf bfs boyf girlf hubbies wifeys wifes missis
bro bros bruv bruh sis sista sissy lads lasses lassie laddie gals dudes bloke blokes chap chaps fella fellas
gent gents missy mam mammy momma mommies mummies moms mums dads daddies grandad granddad grandads
gran granny grannie grannies nana grandmom grandmum granma grandpop stepmom stepmum stepdad
godmother godfather godson goddaughter ma'am homeboy homegirl
mistress gentlemanly ladylike girly girlie boyish tomboy
""".split())

GENDERED_NAMES: frozenset[str] = frozenset("""
james john robert michael william david richard joseph thomas charles christopher daniel matthew
anthony mark donald steven paul andrew joshua kenneth kevin brian george timothy ronald edward jason
jeffrey ryan jacob gary nicholas eric jonathan stephen larry justin scott brandon benjamin samuel
gregory alexander frank patrick raymond jack dennis jerry tyler aaron jose adam nathan henry douglas
zachary peter kyle ethan walter noah jeremy christian keith roger terry gerald harold sean austin
carl arthur lawrence dylan jesse bryan billy joe bruce gabriel logan albert willie alan juan
wayne elijah randy roy vincent ralph eugene russell bobby mason philip louis liam oliver lucas tom
mike dave steve chris matt tony nick ben sam jim bob bill tim ed luke
mary patricia jennifer linda elizabeth barbara susan jessica sarah karen lisa nancy betty margaret
sandra ashley kimberly emily donna michelle carol amanda dorothy melissa deborah stephanie rebecca
sharon laura cynthia kathleen amy angela shirley anna brenda pamela emma nicole helen samantha
katherine christine debra rachel carolyn janet catherine maria heather diane ruth julie olivia joyce
virginia victoria kelly lauren christina joan evelyn judith megan andrea cheryl hannah jacqueline
martha gloria teresa ann sara madison frances kathryn janice jean abigail alice judy sophia grace
denise amber doris marilyn danielle beverly isabella theresa diana natalie brittany charlotte marie
kayla alexis lori jane ava mia chloe zoe lily ella kate jenny sue meg liz beth
""".split())

# Names that are also ordinary words are flagged only where they cannot be a sentence's first word.
AMBIGUOUS_NAMES: frozenset[str] = frozenset(
    "bill mark frank grace amber sue jack will joy rose june may art ray dawn faith hope".split())
MONTH_NAMES = frozenset({"may", "june"})

# Chinese: gendered characters and words; the neutral compounds listed are not cues.
ZH_GENDERED: tuple[str, ...] = tuple("""
老公 老婆 男朋友 女朋友 男友 女友 丈夫 妻子 太太 小姐 先生 女士 男士 媳妇 岳父 岳母 公公 婆婆 爷爷 奶奶
外公 外婆 姥姥 阿姨 叔叔 儿子 女儿 帅哥 美女 闺蜜 绅士 淑女
她 男 女 妻 夫 哥 姐 弟 妹 爸 妈 父 母 兄 嫂 婶 舅 娘 爹 姑 姨 他
""".split())
ZH_NEUTRAL: tuple[str, ...] = tuple(
    "其他 他人 他们 吉他 他乡 利他 子女 儿女 男女 父母 夫妻 夫妇 功夫 工夫 大夫 母语 兄弟姐妹 姑且 妈的".split())

INVISIBLE = frozenset("\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180e\u200b\u200c\u200d\u200e"
                      "\u200f\u202a\u202b\u202c\u202d\u202e\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069"
                      "\u3164\ufe00\ufe0f\ufeff\uffa0")
# Cyrillic and Greek letters that look like Latin ones, read back as the Latin letter they imitate.
LOOKALIKES: dict[str, str] = dict(zip(
    "аеорсухіјѕһԁԛԝӏАВЕКМНОРСТХІЈЅУԌαοροτιкνυΑΒΕΖΗΙΚΜΝΟΡΤΥΧıȷɑɡɩ",
    "aeopcyxijshdqwlABEKMHOPCTXIJSYGaoporikvuABEZHIKMNOPTYXijagi"))

_TITLE = re.compile(r"\b(Miss|Lord)\b\.?(?=\s+[A-Z])")
_DATE_BEFORE = re.compile(r"\b(in|last|this|next|early|late|mid|since|until|till|by|of|through|from|to)[\s-]+$",
                          re.IGNORECASE)
_DATE_AFTER = re.compile(r"^\s*\d")
_LETTER = r"(?:[^\W\d_]|[\u0300-\u036f])"  # a letter, or a combining mark NFKC could not compose into one
_WORD = re.compile(rf"[^\W\d_]{_LETTER}*(?:['’]{_LETTER}+)*['’]?")
_CONTRACTION = re.compile(r"['’](s|d|ll|ve|re|m|t)?$")
_LOOKALIKE_LETTER = re.compile(r"[\u0370-\u03ff\u0400-\u052f\u0131\u0237\u0251\u0261\u0269]")
_LATIN_LOOKALIKE = re.compile(r"[\u0131\u0237\u0251\u0261\u0269]")


def invisible_characters(text: str) -> list[str]:
    """The invisible (format) characters in `text`, as 'U+200B ZERO WIDTH SPACE' labels, in order of appearance."""
    found = dict.fromkeys(ch for ch in text if ch in INVISIBLE or unicodedata.category(ch) == "Cf")
    return [f"U+{ord(ch):04X} {unicodedata.name(ch, 'FORMAT CHARACTER')}" for ch in found]


def normalise(text: str) -> str:
    """NFKC with invisible characters removed: the text a reader sees, as the lint checks it."""
    text = "".join(ch for ch in text if ch not in INVISIBLE and unicodedata.category(ch) != "Cf")
    return unicodedata.normalize("NFKC", text)


def without_accents(word: str) -> str:
    """The word with its accents and other combining marks removed ("wifé" → "wife", "huśband" → "husband")."""
    return "".join(ch for ch in unicodedata.normalize("NFKD", word) if not unicodedata.combining(ch))


def _stem(word: str) -> str:
    """A word in lower case without a possessive or contraction ("wives'" → "wives", "she'd" → "she")."""
    low = word.replace("’", "'").lower()
    return _CONTRACTION.sub("", low) if "'" in low else low


def _is_gendered(stem: str) -> bool:
    return stem in GENDERED_WORDS or stem in GENDERED_SLANG


def english_cues(text: str) -> list[str]:
    """Gendered words, slang, titles, first names and look-alike letters in English text (already normalised)."""
    problems = [f"gendered title {m.group(0)!r}" for m in _TITLE.finditer(text)]
    for match in _WORD.finditer(text):
        word = match.group(0)
        if _LOOKALIKE_LETTER.search(word):
            latin = "".join(LOOKALIKES.get(ch, ch) for ch in word)
            odd = dict.fromkeys(_LOOKALIKE_LETTER.findall(word))
            # Cyrillic and Greek letters in an English word are always a disguise; the Latin ones are letters of
            # other languages too (the Turkish ı of Kadıköy), so they count where they hide a gender cue ("hıs").
            disguise = any(not _LATIN_LOOKALIKE.match(ch) for ch in odd) or _is_gendered(_stem(latin)) \
                or _is_gendered(_stem(without_accents(latin)))
            if disguise:
                letters = ", ".join(f"{ch!r} ({unicodedata.name(ch, '?')})" for ch in odd)
                problems.append(f"look-alike letter(s) {letters} in {word!r} (reads {latin!r}): write it in Latin "
                                "letters")
            word = latin
        stem = _stem(word)
        plain = without_accents(word)
        bare = _stem(plain)
        if _is_gendered(stem):
            problems.append(f"gendered word {word!r} outside a placeholder")
        elif bare != stem and _is_gendered(bare):
            problems.append(f"gendered word {word!r} (reads {plain!r} without its accents) outside a placeholder")
        elif word[0].isupper() and (stem in GENDERED_NAMES or stem in AMBIGUOUS_NAMES):
            before, after = text[: match.start()], text[match.end():]
            sentence_start = re.search(r"(^|[.!?:\n][\"'“‘(\s]*)\s*$", before) is not None
            is_date = stem in MONTH_NAMES and (_DATE_BEFORE.search(before) or _DATE_AFTER.match(after))
            if not is_date and (stem in GENDERED_NAMES and stem not in AMBIGUOUS_NAMES or not sentence_start):
                problems.append(f"gendered first name {word!r} (a place or month of that name cannot be told "
                                "apart from a person here; rephrase)")
    return problems


def chinese_cues(text: str) -> list[str]:
    """Gendered characters and words in Chinese text (already normalised), neutral compounds excepted."""
    masked = text
    for neutral in sorted(ZH_NEUTRAL, key=len, reverse=True):
        masked = masked.replace(neutral, "\0" * len(neutral))
    found = []
    for cue in ZH_GENDERED:  # longest words first, so 老公 is named rather than its characters
        if cue in masked:
            found.append(cue)
            masked = masked.replace(cue, "\0" * len(cue))
    return [f"gendered Chinese word {cue!r}" for cue in found]
