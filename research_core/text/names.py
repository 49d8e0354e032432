"""The names a question gives, in English and Chinese: capitalised words inside an English
sentence ("Hungary", "MX450"), and Chinese words jieba tags as names (people, places, bodies,
other); the capitalised words that open its sentences, which may be names or not; and
whether a name is proper, as the texts write it."""

from __future__ import annotations

import re

from research_core.text.clauses import without_mentions
from research_core.text.periods import is_period_code
from research_core.text.terms import function_words, has_cjk, pos_tags

_NAME = re.compile(r"(?<![.?!:]\s)(?<!^)\b[A-Z][\w-]*[A-Z0-9][\w-]*\b|(?<![.?!:]\s)(?<!^)"
                   r"\b[A-Z][a-z][\w-]+\b")
_OPENING = re.compile(r"(?:^|(?<=[.?!:]\s))([A-Z][a-z][\w-]+)\b")
_ZH_NAME_TAGS = ("nr", "ns", "nt", "nz")  # jieba's tags of names: people, places, bodies, other


def names_in(question: str) -> list[str]:
    """The names a question gives: capitalised words inside an English sentence ("Hungary",
    "Firm A" is "Firm"), and Chinese words jieba tags as names."""
    text = without_mentions(question)
    english = [m.group() for m in _NAME.finditer(text) if m.group().casefold()
               not in function_words() and not is_period_code(m.group())]
    chinese = [w for w, flag in pos_tags(text) if flag in _ZH_NAME_TAGS and len(w) >= 2
               and has_cjk(w)] if has_cjk(text) else []
    return list(dict.fromkeys([*english, *chinese]))


def openings(question: str) -> list[str]:
    """The capitalised words that open the question's sentences (casefolded), which may be
    names ("Calvera shipped more …") or not ("Could you …"): only the sources can tell."""
    found = _OPENING.findall(without_mentions(question))
    return [w.casefold() for w in found if w.casefold() not in function_words()
            and not is_period_code(w)]


def is_proper(name: str, texts: list[str]) -> bool:
    """Whether no text writes the name in lower case at the start of a word ("north" of
    "northern", "central" of "central bank"); a Chinese name always is one."""
    if has_cjk(name):
        return True
    lower = re.compile(rf"(?<![\w]){re.escape(name)}")
    return not any(lower.search(t) for t in texts)
