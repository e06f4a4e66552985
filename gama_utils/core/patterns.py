"""Regular expressions built from word lists (the lexicon's terms, the gazetteer's place names).

Python's `re` tries the branches of an alternation one by one at every position, so a list of a
thousand words costs a thousand tries per character. The same list as a prefix trie is tried once
per character and matches the same text: at each position the longest word that fits (a word's
shorter prefix is the trie's optional ending, tried after the longer branches fail).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable


def trie_alternation(words: Iterable[str], char: Callable[[str], str] = re.escape) -> str:
    """One non-capturing pattern matching any of `words`, built as a prefix trie; `char` writes each character."""
    trie: dict = {}
    for word in set(words):
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}
    return "(?:" + _node_pattern(trie, char) + ")"


def _node_pattern(node: dict, char: Callable[[str], str]) -> str:
    branches = [char(ch) + _node_pattern(child, char) for ch, child in sorted(node.items()) if ch]
    if not branches:
        return ""
    body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
    if "" in node:
        return "(?:" + body + ")?" if len(branches) == 1 else body + "?"
    return body
