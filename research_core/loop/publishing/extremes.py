"""A follow-up that asks which period was the highest or the lowest ("which month had the
highest sales?", "哪个月销量最高？") is answered from the dated series its evidence states
(`series.series_of`, the series a part's chart draws), not from the sentence most like the
question: the closest sentence to "highest month" named the weakest months. The answer says
which period of the series it is, its figure, and how many periods the sources give, so
that a reader knows the highest of three months from the highest of a year's twelve; the
point's source is cited. No series, or one of another grain than the question asks for
(months, quarters, halves), answers nothing here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from research_core.loop.memory.evidence import Evidence
from research_core.loop.publishing.series import Point, Series, every_series, longest
from research_core.text.asking import Asked
from research_core.text.sentences import sentences
from research_core.text.terms import content_terms

_WORDS = {False: {"high": "the highest", "low": "the lowest"},
          True: {"high": "最高", "low": "最低"}}
_GRAIN_ZH = {"month": "个月", "quarter": "个季度", "half year": "个半年"}


def extreme_line(asked: Asked, items: list[Evidence],
                 cite: Callable[[str], str | None]) -> str | None:
    """The bullet that answers the question from the items' series (`cite`: a source id's
    citation mark, None where it cannot be cited); None when it asks for no extreme or no
    series of the grain it asks for is stated."""
    side = asked.extreme
    if side is None:
        return None
    found = every_series(_about(asked, items), asked.text)
    grain = asked.grain
    series = longest([s for s in found if grain in (None, s.grain)]) or longest(found)
    if series is None:
        return None
    pick = max if side == "high" else min
    point = pick(series.points, key=lambda p: p.value)
    mark = cite(point.source_id)
    zh = asked.chinese
    other = _by_other_grain(grain, series.grain, zh) if grain not in (None, series.grain) \
        else ""
    return _said(point, series, side, zh, mark, other) if mark else None


def _by_other_grain(asked_grain: str | None, grain: str, zh: bool) -> str:
    """What the answer says when the sources give no series of the grain asked for."""
    if zh:
        asked_zh, given_zh = _GRAIN_ZH[asked_grain or grain][1:], _GRAIN_ZH[grain][1:]
        return f"来源没有按{asked_zh}的序列，以下按{given_zh}："
    return f"The sources give no {asked_grain} by {asked_grain} series; by {grain}: "


def _about(asked: Asked, items: list[Evidence]) -> list[Evidence]:
    """The items cut to their sentences that share a content word with the question (its
    time and superlative words left out)."""
    wanted = asked.subject
    out = []
    for item in items:
        said = [t for t in sentences(item.text, clauses=False)
                if wanted & set(content_terms(t))]
        if said:
            out.append(replace(item, text=" ".join(said)))
    return out


def _said(point: Point, series: Series, side: str, zh: bool, mark: str, other: str) -> str:
    n, first, last = len(series.points), series.points[0].label, series.points[-1].label
    unit = "" if series.unit.startswith("(") else series.unit
    if zh:
        first, last = _zh(series.points[0]), _zh(series.points[-1])
        return (f"• {other}{_zh(point)}：{point.written}{unit}，为来源给出的{n}"
                f"{_GRAIN_ZH[series.grain]}（{first}至{last}）中{_WORDS[True][side]}。 {mark}")
    return (f"• {other}{point.label}: {point.written} {unit}".rstrip() +
            f", {_WORDS[False][side]} of the {n} {series.grain}s the sources give "
            f"({first} to {last}). {mark}")


def _zh(point: Point) -> str:
    """"2026年8月", "2026年Q3", "2026年H1"."""
    year, part = point.period.split("-")
    return f"{year}年{part}" if part[0] in "QH" else f"{year}年{int(part)}月"
