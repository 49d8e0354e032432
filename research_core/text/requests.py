"""The grammar of a steering request ("skip the UK, focus on prices"), in English and Chinese:
where its clauses are cut (punctuation, "and", "but", "then", "also", before "instead of"),
the words that turn a clause away (skip, drop, not, rather than…, 不要) or toward what it names
(focus, first, only, look at…, 重点), whether a toward clause narrows the research to what it
names (focus, only, mainly…, 重点, 只) or only orders it (first, prioritise…, 优先), what a
clause names once its cue and function words are cut off ("focus on prices" → "prices"), and
the names written with a capital ("the UK", "US") that a stop-word list would take for
function words.

A clause without a cue of its own goes the way of the one before it, or the other way after a
contrast ("skip the UK but prices", "instead of solar, prices": prices toward). Which
sub-questions a clause's topic names is not decided here: `research_core.loop.review.steering`
matches topics to sub-questions with BM25 and the embedder."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from research_core.text.terms import function_words, segment

# a cut, and a contrast (the cue-less clause after it goes the other way); a clause that
# says "instead of…" or "rather than…" is cut before it and turns away
_CUT = re.compile(r"[,;.!?\n，；。！？、]|\b(?:and|then|also)\b|(?P<contrast>\bbut\b|但是|但|而是)"
                  r"|(?=\b(?:instead of|rather than)\b|而不是)", re.I)
_INSTEAD_OF = re.compile(r"\b(?:instead of|rather than)\b|而不是|不是", re.I)
_AWAY = re.compile(r"\b(?:skip|drop|ignore|forget|exclude|excluding|without|not|no|don'?t|"
                   r"stop|leave|less|never|instead of|rather than)\b|不要|跳过|忽略|别|去掉|不用|"
                   r"不看|不是|不管|而不是", re.I)
_NARROW = re.compile(r"\b(?:focus(?:ed|ing)?|only|solely|exclusively|concentrate|mainly|mostly|"
                     r"emphasi[sz]e)\b|重点|关注|集中|只|仅|主要", re.I)
_TOWARD = re.compile(r"\b(?:prioriti[sz]e|priority|first|more|rather|instead(?! of)|look(?:ing)? "
                     r"(?:at|into)|dig into|what about|how about|cover|include)\b|优先|先|看看|"
                     r"研究一下|补充|而是", re.I)
_NAME = re.compile(r"\b[A-Z][A-Za-z]*[A-Z]\b|\b[A-Z][a-z]+\b")
_CAPITALS = re.compile(r"\b[A-Z]{2,}\b")  # "US", "IT": names, though stop words spell them
_EDGE = re.compile(r"^[\W_]+|[\W_]+$")
# words that say how to steer, not what about
_CUE_TEXT = """skip drop ignore forget exclude excluding without leave out less never
    stop focus focused focusing prioritise prioritize priority concentrate first more only
    solely exclusively please look dig instead rather mainly mostly emphasis emphasise
    emphasize interested care want need let's lets rest cover include research
    重点 关注 优先 先 跳过 忽略 不要 去掉 不用 不看 不是 不管 而是 而不是 只 仅 集中 主要 看看 研究
    一下 补充 请 管"""
CUES = frozenset(_CUE_TEXT.split())

Way = Literal["toward", "away", "plain"]


@dataclass(frozen=True)
class Clause:
    """One clause of a steer: which way it turns, whether it narrows the research to what it
    names (toward only), and what it names ("" when nothing)."""

    way: Way
    narrows: bool
    topic: str


def read_request(text: str) -> list[Clause]:
    """The steer's clauses that name something, in order, each with its way."""
    clauses: list[Clause] = []
    way: Way = "plain"
    narrows = False
    after_instead = False
    for clause, contrast in _pieces(text):
        if not clause.strip():  # nothing between two cuts: its contrast goes on
            after_instead = after_instead or contrast
            continue
        contrast = contrast or after_instead
        after_instead = _INSTEAD_OF.search(clause) is not None
        if says_away(clause):
            way, narrows = "away", False
        elif says_toward(clause):
            way, narrows = "toward", _NARROW.search(clause) is not None
        elif contrast and way != "plain":
            way = "toward" if way == "away" else "away"
            narrows = False
        named = topic_of(clause)
        if named:
            clauses.append(Clause(way, narrows and way == "toward", named))
    return clauses


def _pieces(text: str) -> list[tuple[str, bool]]:
    """The request cut into clauses, each with whether a contrast ("but") opens it."""
    pieces: list[tuple[str, bool]] = []
    start, contrast = 0, False
    for cut in _CUT.finditer(text):
        if cut.start() == cut.end() == start:  # a cut before "instead of" at the start
            continue
        pieces.append((text[start:cut.start()], contrast))
        start, contrast = cut.end(), cut.group("contrast") is not None
    pieces.append((text[start:], contrast))
    return pieces


def request_clauses(text: str) -> list[str]:
    """The request cut into its clauses (the pieces between cuts, empty ones included)."""
    return [clause for clause, _ in _pieces(text)]


def topic_of(clause: str) -> str:
    """What a clause names, as written: its words once the cue and function words at either
    end are cut off ("focus on the cost of installing" → "cost of installing", "重点看价格" →
    "价格"); "" when it names nothing ("first please", "thanks")."""
    words = segment(clause, search_mode=False)
    names = {w.casefold() for w in _CAPITALS.findall(clause)}
    skip = function_words()

    def idle(word: str) -> bool:
        bare = _EDGE.sub("", word.casefold())
        return not bare or bare in CUES or (bare in skip and bare not in names) or \
            _AWAY.fullmatch(bare) is not None or _TOWARD.fullmatch(bare) is not None

    while words and idle(words[0]):
        words.pop(0)
    while words and idle(words[-1]):
        words.pop()
    return "".join(words).strip()


def says_away(clause: str) -> bool:
    """Whether the clause turns away from what it names: skip, drop, ignore, not, no…,
    不要, 跳过."""
    return _AWAY.search(clause) is not None


def says_toward(clause: str) -> bool:
    """Whether the clause turns toward what it names: focus, prioritise, first, only,
    mainly, look at…, 重点, 优先."""
    return _NARROW.search(clause) is not None or _TOWARD.search(clause) is not None


def capitalised_names(text: str) -> set[str]:
    """The words written as names (casefolded): all capitals ("UK", "US") or capitalised
    ("Prices")."""
    return {w.casefold() for w in _NAME.findall(text)}
