"""What a figure of a Chinese sentence is a figure of: the nouns written before it in its own
clause. Chinese writes the measured thing, then its figure ("细羊毛均价为5.10万元/吨，粗羊毛
均价为3.20万元/吨"), so one sentence can give two products' figures and a sentence-wide
reading would take one for a version of the other. English sentences are left to their names
(`conflicts._same_names`): their nouns are not tagged here. In either language a month's high
or low is another statistic than its average or its close."""

from __future__ import annotations

import re
from collections.abc import Sequence

from research_core.text.terms import has_cjk, nouns

GENERIC = frozenset({"价格", "均价", "价位", "数据", "数字"})  # what every price line names
_BRACKETED = re.compile(r"（[^）]*）|\([^)]*\)")
_CLAUSE_END = re.compile(r"[，,；;：:。！？]")
# reported speech: who said it comes before these, what it measures after them
_ATTRIBUTED = re.compile(r"(?:公布|发布|披露)的|显示|指出|表示")
# the words a period's extremes are named with, in both languages
_HIGH = re.compile(r"最高|高点|峰值|\b(?:high|highest|peak|maximum)\b", re.I)
_LOW = re.compile(r"最低|低点|谷值|\b(?:low|lowest|trough|minimum)\b", re.I)


def described(text: str, at: int, contexts: Sequence[str] = ()) -> frozenset[str]:
    """The nouns that say what the figure written at `at` measures: those written before it
    in its clause (a bracket's aside left out), else before it in the whole text, else those
    of the first of `contexts` (the heading, the title above) that names something. What
    follows a figure is not what it measures ("降至5.10万元/吨，8月起小幅回升")."""
    blanked = _before(text, at)
    for said in (_clause_before(text, at), blanked, *contexts):
        if named := nouns(said) - GENERIC:
            return named
    return frozenset()


def _before(text: str, at: int) -> str:
    return _BRACKETED.sub(lambda m: " " * len(m.group(0)), text)[:max(at, 0)]


def _clause_before(text: str, at: int) -> str:
    """What the figure's clause says before it, a bracket's aside left out, and the body it
    is attributed to left out too ("铜箔分会9月月报公布的6μm加工费均价为…" measures a fee, not
    a body's)."""
    before = _before(text, at)
    ends = [m.end() for m in (*_CLAUSE_END.finditer(before), *_ATTRIBUTED.finditer(before))]
    return before[max(ends) if ends else 0:]


def extreme(text: str, at: int) -> str:
    """"high" or "low" where the figure at `at` is named as its period's high or low, else
    ""."""
    before = _clause_before(text, at)
    return "high" if _HIGH.search(before) else "low" if _LOW.search(before) else ""


def same_thing(mine: frozenset[str], theirs: frozenset[str]) -> bool:
    """Two descriptions of one measured thing: one says no more than the other ("细羊毛" and
    "澳洲细羊毛"); two products that share a grade or a frequency word ("月度 精梳 细羊毛" and
    "月度 精梳 粗羊毛") are two things."""
    return mine <= theirs or theirs <= mine


def one_measure(a: str, at_a: int, b: str, at_b: int,
                contexts: tuple[Sequence[str], Sequence[str]] = ((), ())) -> bool:
    """Whether the figures at `at_a` of `a` and `at_b` of `b` can measure one thing: not a
    high and an average, or a high and a low; a sentence not in Chinese says no more."""
    if extreme(a, at_a) != extreme(b, at_b):
        return False
    if not (has_cjk(a) and has_cjk(b)):
        return True
    return same_thing(described(a, at_a, contexts[0]), described(b, at_b, contexts[1]))
