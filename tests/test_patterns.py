"""Word lists as trie patterns (gama_utils.core.patterns): the same matches as the plain longest-first alternation."""

import random
import re

from gama_utils.core.patterns import trie_alternation


def _plain(words: list[str]) -> re.Pattern:
    return re.compile(r"(?<!\w)(" + "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)) + r")(?!\w)")


def test_the_trie_finds_what_the_longest_first_alternation_finds():
    rng = random.Random(7)
    alphabet = "abcde .-'"
    words = sorted({"".join(rng.choice("abcde") for _ in range(rng.randint(1, 6))) for _ in range(300)}
                   | {"New York", "New York City", "York", "St. John's", "a.b"})
    trie = re.compile(r"(?<!\w)(" + trie_alternation(words) + r")(?!\w)")
    texts = ["".join(rng.choice(alphabet) for _ in range(200)) for _ in range(300)]
    texts += ["I moved from New York City to York.", "St. John's and New York", "a.b a.bc"]
    plain = _plain(words)
    for text in texts:
        assert [m.span() for m in trie.finditer(text)] == [m.span() for m in plain.finditer(text)], text
    assert [m.group(1) for m in trie.finditer(texts[-3])] == ["New York City", "York"]


def test_characters_can_be_written_by_the_caller():
    pattern = re.compile(trie_alternation(["face to face"], lambda ch: r"[\s-]+" if ch == " " else re.escape(ch)))
    assert pattern.fullmatch("face-to - face") and not pattern.fullmatch("facetoface")
