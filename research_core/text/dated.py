"""Which period each figure of a sentence is for, in the one period grammar
(`research_core.text.periods`): the period named nearest a figure with no other figure between
them, a period in a bracket right after it, or (in English) the one it is said to be for right
after it ("474,000 units in Q1 2026"); a year is no figure, nor the day of a date, and a
figure said to be a year earlier ("from 190,400 units a year earlier", "上年同期为…") is the
same period's of the year before. The conflict detector reads figures this way
(`research_core.text.conflicts`), and so does a chart's series (`dated_figures`, which takes
no guess where the period is not clear)."""

from __future__ import annotations

import datetime as dt
import re

from research_core.text.figures import Figure, figures_in
from research_core.text.periods import MONTH, named
from research_core.text.terms import has_cjk

_ASIDE = re.compile(r"[^，,；;。（(\d]{0,8}?[（(]")  # a unit, then a bracket opens


def dated_figures(text: str, published: dt.date | None) -> list[tuple[str, Figure, int]]:
    """The figures of one sentence (no percentages, no years) whose month, quarter or half
    the sentence names clearly, as the conflict detector reads them, but without its last
    guess: a figure with another figure between it and every period named takes none.
    (period key, figure, where it is written), in order: what a chart of a series plots."""
    periods = [(start, end, key) for start, end, key in named(text, published) if "-" in key]
    if not periods:
        return []
    figures = [f for f in figures_in(text) if not f.percent and not a_year(f)]
    places = places_of(text, figures)
    inside = {at for at in places if any(start <= at < end for start, end, _ in periods)}
    starts = [(start, key) for start, _, key in periods]
    out = []
    for figure, at in zip(figures, places, strict=True):
        if at in inside or at < 0 or a_day(text, at, figure):
            continue
        others = [p for p in places if p != at and p not in inside]
        end = at + len(figure.text)
        period = aside(text, end, starts) or said_for(text, end, starts) or \
            period_of(at, starts, others, has_cjk(text), strict=True)
        if period is not None:
            out.append((year_before(text, at, end, period), figure, at))
    return out


# a figure said to be a year before the period its sentence names: "up 12.4% from 190,400
# units a year earlier", "上年同期为0.47万元/吨" (the languages' own phrases)
_YEAR_EARLIER = re.compile(r"\s*(?:[^\W\d_]+\s+){0,2}?(?:(?:a|one) year (?:earlier|before|ago)|"
                           r"in the same (?:month|quarter|period) (?:of )?(?:a year ago|last "
                           r"year|the previous year))", re.I)
_LAST_YEAR_ZH = re.compile(r"(?:上年|去年|上一年)同期(?:为|是|的)?\s*$")


def year_before(text: str, at: int, end: int, period: str) -> str:
    """`period`, or the same period a year earlier where the text says the figure at
    `at`..`end` is a year earlier."""
    if not (_YEAR_EARLIER.match(text, end) or _LAST_YEAR_ZH.search(text[max(0, at - 8):at])):
        return period
    year, part = period.split("-", 1)
    return f"{int(year) - 1}-{part}" if year.isdigit() else period


_FOR = re.compile(r"\s*(?:[^\W\d_]+\s+){0,2}?(?:in|for|during|over)\s+(?:the\s+)?", re.I)


def said_for(text: str, end: int, starts: list[tuple[int, str]]) -> str | None:
    """The period an English figure is said to be for right after it ("474,000 units in
    Q1 2026", "571,000 for the second quarter of 2026"): its own, whatever is named before."""
    said = _FOR.match(text, end)
    if said is None:
        return None
    return next((key for p, key in starts if p == said.end()), None)


_DAY_AFTER = re.compile(rf"\s*(?:st|nd|rd|th)?\s+(?:of\s+)?{MONTH}\b", re.I)
_DAY_BEFORE = re.compile(rf"\b{MONTH}\.?\s+$", re.I)


def a_day(text: str, at: int, figure: Figure) -> bool:
    """The figure is the day of a date ("1 April 2026", "April 21", "9月1日")."""
    end = at + len(figure.text)
    return bool(_DAY_AFTER.match(text, end) or _DAY_BEFORE.search(text[max(0, at - 12):at])
                or text.startswith("日", end))


def aside(text: str, end: int, starts: list[tuple[int, str]]) -> str | None:
    """The period a bracket right after a figure names ("低点为7.20万元/吨（2025年11月中旬）"):
    the figure's own, wherever other periods stand."""
    bracket = _ASIDE.match(text, end)
    if bracket is None:
        return None
    return next((key for p, key in starts if bracket.end() <= p <= bracket.end() + 1), None)


_OPENS = re.compile(r"\s*[（(]\s*$")
_CLOSES = re.compile(r"\s*(?:[^\W\d_]{1,12}\s*)?[)）]")  # its unit, if any, inside


def bracketed(text: str, at: int, figure: Figure, published: dt.date | None = None) -> bool:
    """The figure at `at` stands alone (with its unit, if any) in a bracket right after the
    name of its period ("January (158,000) and February (150,000) were the weakest months",
    "Q1 (474,000 units)", "1月（15.8万台）"): that period's value of what its sentence measures;
    one written without a unit has the unit of the sentence's measure (a list of periods'
    values names it once)."""
    opening = _OPENS.search(text, 0, max(at, 0))
    if opening is None or not _CLOSES.match(text, at + len(figure.text)):
        return False
    return any(end == opening.start() for _, end, key in named(text, published) if "-" in key)


def places_of(text: str, figures: list[Figure]) -> list[int]:
    """Where each figure is written, in order (a number written twice is found twice)."""
    places, start = [], 0
    for figure in figures:
        at = text.find(figure.text, start)
        places.append(at)
        start = at + len(figure.text) if at >= 0 else start
    return places


def period_of(at: int, named: list[tuple[int, str]], others: list[int], before: bool,
               strict: bool = False) -> str | None:
    """The period named nearest to a figure with no other figure between them: in "fell to
    474,000 units from 515,000 in Q1 2025" the quarter is the 515,000's, and the 474,000 takes
    the period named before it. With `before`, only a period named before the figure: in
    "细羊毛均价为5.10万元/吨，同比（2025年10月为4.80万元/吨）" the month is the 4.80's."""
    clear = [(p, key) for p, key in named
             if not any(min(p, at) < o < max(p, at) for o in others)]
    if before:
        earlier = [(p, key) for p, key in clear if p < at]
        return max(earlier)[1] if earlier else None
    if strict and not clear:
        return None
    return min(clear or named, key=lambda p: abs(p[0] - at))[1]


def a_year(figure: Figure) -> bool:
    return not figure.unit and len(figure.value) == 4 and figure.value.startswith(("19", "20"))
