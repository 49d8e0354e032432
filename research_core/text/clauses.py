"""A question's clauses, in English and Chinese, cut at punctuation and plain coordinators
only (issue 42, item 2): sentence ends, colons, semicolons, commas and dashes, and
"and" / "or" / "but" / "以及" / "并且" / "还有" between words. A piece cut off at a coordinator
that names fewer than two things ("… ridership and punctuality") is one list with its
neighbour, not a clause of its own; which clause asks something the sources can answer is
for the evidence to say (`research_core.loop.planning.decomposition`), not for this grammar.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from research_core.text.terms import content_terms

_MENTION = re.compile(r"<[@#!][^>]*>|(?<![\w/])@[\w.-]+")
_SENTENCE = re.compile(r"(?<=[?？!！。])\s*|\n+|(?<=\.)\s+")
_PUNCTUATION = re.compile(r"\s*(?:[?？!！。;；:：,，]|\.$|\s[—–-]+\s|—+)\s*")
_BRACKETS = re.compile(r"[()（）]")
_COORDINATOR = re.compile(r"(?:^|\s+)(?:and|or|but)\s+|\s*(?:以及|并且|还有|而且)\s*", re.I)
# Interrogatives, English and Chinese: a closed class of the languages' grammar, no field's
# words. A clause that holds one asks the sources something, however little it names.
_ASKING = re.compile(r"^(?:how|what|why|which|who|when|where|whether)\b|"
                     r"什么|怎么|怎样|如何|为什么|为何|多少|哪", re.I)
LIST_TERMS = 2  # a piece naming fewer things is an item of its neighbour's list


@dataclass(frozen=True)
class Reading:
    """A question's clauses that name something or ask something ("why"), in order, and its
    topic: the clause that names the most, one of a sentence that asks ("…?") before others
    (the first of equals)."""

    clauses: tuple[str, ...]
    topic: str


def without_mentions(text: str) -> str:
    """The text without its Slack mentions ("<@U0…>", "@RED") and extra spaces."""
    return " ".join(_MENTION.sub(" ", text).split())


def read(question: str) -> Reading:
    """The question's clauses and its topic; a question that names nothing is its own
    topic."""
    text = without_mentions(question)
    asked: dict[str, bool] = {}
    for sentence in _SENTENCE.split(text):
        for piece in (_balanced(c) for part in _PUNCTUATION.split(sentence)
                      for c in _coordinated(part)):
            if content_terms(piece) or asks(piece):
                asked[piece] = asked.get(piece, False) or sentence.rstrip().endswith(("?", "？"))
    named = [c for c in asked if content_terms(c)]
    if not named:
        return Reading(tuple(asked), text)
    topic = max(named, key=lambda c: (asked[c], len(set(content_terms(c))), -named.index(c)))
    return Reading(tuple(asked), topic)


def asks(clause: str) -> bool:
    """Whether a clause asks something ("how many of those came in the first year", "哪个区
    拖了后腿"), rather than asking the bot for something ("numbers + links pls")."""
    return _ASKING.search(clause.strip()) is not None


def _coordinated(part: str) -> list[str]:
    """A clause cut at its coordinators, a piece naming fewer than `LIST_TERMS` things
    joined back to the piece before it (or after it, when it opens the clause)."""
    pieces = [p.strip() for p in _COORDINATOR.split(part) if p.strip()]
    joined: list[str] = []
    for piece in pieces:
        if joined and (_few(piece) or _few(joined[-1])):
            joined[-1] = _rejoin(part, joined[-1], piece)
        else:
            joined.append(piece)
    return joined


def _balanced(piece: str) -> str:
    """A piece whose brackets a comma cut apart ("data (how much is what") without them."""
    opened = piece.count("(") + piece.count("（")
    closed = piece.count(")") + piece.count("）")
    return piece if opened == closed else " ".join(_BRACKETS.sub(" ", piece).split())


def _few(piece: str) -> bool:
    return len(set(content_terms(piece))) < LIST_TERMS


def _rejoin(part: str, left: str, right: str) -> str:
    """The span of `part` from `left` to `right`, as written (its coordinator kept)."""
    start = part.find(left)
    end = part.find(right, start + len(left))
    return part[start:end + len(right)] if start >= 0 and end >= 0 else f"{left} {right}"
