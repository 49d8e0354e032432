"""The grammar of a steering request ("skip the UK, focus on prices"), in English and Chinese:
where its clauses are cut (punctuation, "and", "but", "then", "also", "instead"), the words
that turn a clause away (skip, drop, not…, 不要) or toward what it names (focus, first,
only…, 重点), the words that say how to steer rather than what about, and the names written
with a capital ("the UK", "US") that a stop-word list would take for function words."""

from __future__ import annotations

import re

_CLAUSES = re.compile(r"[,;.!?\n，；。！？、]|\b(?:and|but|then|also|instead)\b", re.I)
_AWAY = re.compile(r"\b(?:skip|drop|ignore|forget|exclude|excluding|without|not|no|don'?t|"
                   r"stop|leave|less|never)\b|不要|跳过|忽略|别|去掉|不用|不看", re.I)
_TOWARD = re.compile(r"\b(?:focus|prioriti[sz]e|priority|first|more|only|concentrate|instead|"
                     r"rather|mainly|mostly|emphasi[sz]e)\b|重点|关注|优先", re.I)
_NAME = re.compile(r"\b[A-Z][A-Za-z]*[A-Z]\b|\b[A-Z][a-z]+\b")
# words that say how to steer, not what about
_CUE_TEXT = """skip drop ignore forget exclude excluding without leave out less never
    stop focus prioritise prioritize priority concentrate first more only please look dig
    instead rather mainly mostly emphasis emphasise emphasize interested care want need
    let's lets rest 重点 关注 优先 先 跳过 忽略 不要 去掉 不用 不看"""
CUES = frozenset(_CUE_TEXT.split())


def request_clauses(text: str) -> list[str]:
    """The request cut into its clauses at punctuation and at "and", "but", "then", "also",
    "instead" (the pieces between, empty ones included)."""
    return [clause or "" for clause in _CLAUSES.split(text)]


def says_away(clause: str) -> bool:
    """Whether the clause turns away from what it names: skip, drop, ignore, not, no…,
    不要, 跳过."""
    return _AWAY.search(clause) is not None


def says_toward(clause: str) -> bool:
    """Whether the clause turns toward what it names: focus, prioritise, first, only,
    mainly…, 重点, 优先."""
    return _TOWARD.search(clause) is not None


def capitalised_names(text: str) -> set[str]:
    """The words written as names (casefolded): all capitals ("UK", "US") or capitalised
    ("Prices")."""
    return {w.casefold() for w in _NAME.findall(text)}
