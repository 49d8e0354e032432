"""A follow-up that asks which period was the highest or the lowest ("which month had the
highest sales?", "哪个月销量最高？") is answered from the dated series the thread's evidence
states, not from the sentence most like the question: the closest sentence to "highest month"
named the weakest months. The series read are those the run's own charts draw
(`series.charted`: a reader who sees December 2025 at 248,000 on the chart above gets that
point) and those of all the thread's kept evidence and, where reading is free, its pages
(`series.every_series`). The answer says which period of the series it is, its figure, and
how many periods the sources give, so that a reader knows the highest of three months from
the highest of a year's twelve; the point's source is cited.

Which series answers is decided by what it measures: a series whose sentences (or the
headings and titles above them) share none of the question's subject words ("sales",
"berth fees", "客运量") is not of what was asked; a question's words in a script that none
of its sentences are written in decide nothing (a Chinese question about English sources).
No series, or one of another grain than the question asks for (months, quarters, halves),
said so, answers nothing here."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from research_core.loop.memory.evidence import Evidence
from research_core.loop.publishing.series import COUNTED, Point, Series, every_series
from research_core.text.asking import Asked
from research_core.text.terms import has_cjk, stem, terms

_WORDS = {False: {"high": "the highest", "low": "the lowest"},
          True: {"high": "最高", "low": "最低"}}
_GRAIN_ZH = {"month": "个月", "quarter": "个季度", "half year": "个半年"}


@dataclass(frozen=True)
class Extreme:
    """The highest or lowest point of the series that answers a question."""

    point: Point
    series: Series
    side: str  # "high" or "low"
    asked_grain: str | None  # the grain the question asks for (None: any)

    @property
    def source_id(self) -> str:
        return self.point.source_id

    def line(self, zh: bool, mark: str) -> str:
        """The bullet that says it, `mark` its source's citation ("[2]")."""
        grain = self.series.grain
        other = _by_other_grain(self.asked_grain, grain, zh) \
            if self.asked_grain not in (None, grain) else ""
        return _said(self.point, self.series, self.side, zh, mark, other)


def extreme_of(asked: Asked, found: Sequence[Series],
               closeness: Sequence[float] = ()) -> Extreme | None:
    """The extreme the question asks for, of the series among `found` that answers it best:
    of the grain asked for (else another, said so), then of most subject words, then closest
    to the question (`closeness`, the embedder's similarity per series: it reads across
    languages, where the words of a Chinese question meet none of an English series), then of
    most periods and sources; None when it asks for no extreme or no series is of what it
    asks."""
    side = asked.extreme
    if side is None:
        return None
    close = list(closeness) or [0.0] * len(found)
    scored = [(score, c, s) for s, c in zip(found, close, strict=True)
              if (score := _relevance(s, asked.subject)) is not None]
    if not scored:
        return None
    grain = asked.grain
    _, _, series = max(scored, key=lambda p: (grain in (None, p[2].grain), p[0], p[1],
                                              len(p[2].points), len(p[2].sources)))
    pick = max if side == "high" else min
    return Extreme(pick(series.points, key=lambda p: p.value), series, side, grain)


def extreme_line(asked: Asked, items: list[Evidence], cite: Callable[[str], str | None],
                 charted: Sequence[Series] = (), about: str = "") -> str | None:
    """The bullet that answers the question from the series the run's charts draw
    (`charted`) and those the items state (read about `about`, else the question) (`cite`: a
    source id's citation mark, None where it cannot be cited); None when it asks for no
    extreme, no series of what it asks is stated, or its point cannot be cited."""
    if asked.extreme is None:
        return None
    found = extreme_of(asked, [*charted, *every_series(items, about or asked.text)])
    mark = cite(found.source_id) if found is not None else None
    return found.line(asked.chinese, mark) if found is not None and mark else None


def described(series: Series) -> str:
    """What a series is about, as the embedder compares it with a question."""
    return " ".join((series.title, series.measure, *series.said[:3]))


def _relevance(series: Series, subject: frozenset[str]) -> int | None:
    """How many of the question's subject words the series' sentences say (a plural as its
    singular; Chinese words as written); None where they could say some and say none."""
    said = " ".join((series.measure, *series.said))
    written = {stem(t) for t in terms(said)}
    chinese, latin = has_cjk(said), any(c.isascii() and c.isalpha() for c in said)
    comparable = [t for t in subject if (chinese if has_cjk(t) else latin)]
    hits = sum(1 for t in comparable if (t in said if has_cjk(t) else stem(t) in written))
    return None if comparable and not hits else hits


def _by_other_grain(asked_grain: str | None, grain: str, zh: bool) -> str:
    """What the answer says when the sources give no series of the grain asked for."""
    if zh:
        asked_zh, given_zh = _GRAIN_ZH[asked_grain or grain][1:], _GRAIN_ZH[grain][1:]
        return f"来源没有按{asked_zh}的序列，以下按{given_zh}："
    return f"The sources give no {asked_grain} by {asked_grain} series; by {grain}: "


def _said(point: Point, series: Series, side: str, zh: bool, mark: str, other: str) -> str:
    n, first, last = len(series.points), series.points[0].label, series.points[-1].label
    unit = "" if series.unit.startswith("(") else series.unit
    if zh:
        first, last = _zh(series.points[0]), _zh(series.points[-1])
        # a count of the thing asked about needs no word in Chinese; a source's own unit
        # in another script stands apart ("12 euros")
        unit = "" if unit == COUNTED else f" {unit}" if unit and not has_cjk(unit) else unit
        return (f"• {other}{_zh(point)}：{point.written}{unit}，为来源给出的{n}"
                f"{_GRAIN_ZH[series.grain]}（{first}至{last}）中{_WORDS[True][side]}。 {mark}")
    return (f"• {other}{point.label}: {point.written} {unit}".rstrip() +
            f", {_WORDS[False][side]} of the {n} {series.grain}s the sources give "
            f"({first} to {last}). {mark}")


def _zh(point: Point) -> str:
    """"2026年8月", "2026年Q3", "2026年H1"."""
    year, part = point.period.split("-")
    return f"{year}年{part}" if part[0] in "QH" else f"{year}年{int(part)}月"
