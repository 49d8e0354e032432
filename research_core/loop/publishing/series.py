"""The dated series an answer part can show as a chart: at least three values of one measure,
each for its own month, quarter or half, in one unit, read from the part's kept evidence.

Every point is a figure as a source writes it, for the period its sentence names clearly
(`research_core.text.dated.dated_figures`: the one figure and period grammar), with its
unit (a figure written without one, "to 474,000 units from 515,000", takes the unit of the
figure before it in its sentence when the two are close enough to be one measure; one written
before the thing the part is about, "214,000 heat pumps", counts units of it). Points
are one measure only when their sentences speak of one thing as the conflict detector
compares them (the same words, the same places and bodies; not a high against an average);
months, quarters and halves are never mixed, nor units. Where two sources give a period
different figures, the more credible (then the later) one's is plotted, as the answer
prefers it. No series from fewer than three periods: no chart then. Drawing it is the
channel's business (workers/chart_image.py); this module imports nothing to draw with.

What a chart needs besides the values (issue 44, item 4) is read here too: which periods
are missing between two points (`Point.step`: a line is not drawn across them), what the
series measures as its sources name it (`Series.title`: "Heat pump sales (units, by
month)", not the question), and a point its own sentence calls preliminary or revised
(`Point.status`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from research_core.loop.memory.evidence import Evidence
from research_core.loop.memory.pool import Line, lines_of
from research_core.text import measures
from research_core.text.conflicts import SAME_MEASURE_RATIO, names_in, unit_of
from research_core.text.dated import dated_figures
from research_core.text.figure_status import statuses
from research_core.text.figures import Figure
from research_core.text.periods import MONTH_NAMES, states_span
from research_core.text.terms import content_terms, has_cjk

MIN_POINTS = 3
COUNTED = "units"  # a figure followed by the thing asked about counts that thing
MAX_POINTS = 24
MAX_SPREAD = 20.0  # the largest value of a series at most this many times its smallest
GRAIN = {"Q": "quarter", "H": "half year"}
SHARED_TERMS = 1  # content words two sentences share (not time words, not the unit)
MEASURE_TERMS = 6  # a measure's name, as a source writes it, holds at most this many words
PER_YEAR = {"Q": 4, "H": 2}  # periods of a grain in a year (months: 12)
_TIME_TEXT = """quarter quarters half year years month months first second third fourth q1 q2 q3
    q4 h1 h2 week weeks 季度 月 年 上半年 下半年"""
_TIME_WORDS = frozenset(m for name in MONTH_NAMES for m in (name, name[:3])) | frozenset(
    _TIME_TEXT.split())


@dataclass(frozen=True)
class Point:
    period: str  # "2026-Q1", "2026-H1", "2026-09"
    value: float
    written: str  # the figure as the source writes it ("474,000")
    source_id: str
    status: str = ""  # "preliminary" or "revised" where its sentence says so, else ""

    @property
    def step(self) -> int:
        """The period's place in its grain's run of periods: two points are next to each
        other, with no period missing between them, when their steps differ by one."""
        year, part = self.period.split("-")
        per_year = PER_YEAR.get(part[0], 12)
        return int(year) * per_year + int(part.lstrip("QH")) - 1

    @property
    def shown(self) -> str:
        """The figure as written, with its status: "222,000 (preliminary)"."""
        return f"{self.written} ({self.status})" if self.status else self.written

    @property
    def label(self) -> str:
        """"Q1 2026", "H1 2026", "Sep 2026"."""
        year, part = self.period.split("-")
        if part[0] in "QH":
            return f"{part} {year}"
        return f"{MONTH_NAMES[int(part) - 1][:3].capitalize()} {year}"


@dataclass(frozen=True)
class Series:
    about: str  # what the part answers ("How did heat pump sales move in 2026?")
    unit: str  # "units", "元/吨", or a magnitude word in brackets ("(million)")
    grain: str  # "month", "quarter" or "half year"
    points: tuple[Point, ...]
    measure: str = ""  # what it measures, as a source says it ("Heat pump sales")

    @property
    def title(self) -> str:
        """What the series measures and in what: "Heat pump sales (units, by month)"; the
        unit alone where its sources name no measure the question names."""
        unit = f"{self.unit_label}, by {self.grain}"
        return f"{self.measure} ({unit})" if self.measure else unit[:1].upper() + unit[1:]

    @property
    def sources(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.source_id for p in self.points))

    @property
    def unit_label(self) -> str:
        return self.unit.strip("()")

    def digest(self) -> str:
        """Changes when the series changes (a revision re-draws its chart then only; two
        parts with the same series show it once)."""
        shown = "|".join(f"{p.period}={p.value}{p.status}@{p.source_id}" for p in self.points)
        return hashlib.sha256(f"{self.unit}|{self.grain}|{shown}".encode()).hexdigest()[:16]

    def describe(self, titles: dict[str, str]) -> str:
        """The chart in words (its alt text): the series, point by point, and its sources
        (`titles`: source id -> title)."""
        values = "; ".join(f"{p.label}: {p.shown}" for p in self.points)
        sources = "; ".join(titles.get(s) or s for s in self.sources)
        return (f"Chart: {self.unit_label} by {self.grain}, for “{self.about}”. {values}. "
                f"Sources: {sources}.")


@dataclass(frozen=True)
class _Candidate:
    line: Line
    figure: Figure
    period: str
    at: int
    status: str = ""

    @property
    def unit(self) -> str:
        return unit_of(self.figure)


def series_of(items: list[Evidence], about: str) -> Series | None:
    """The longest dated series of one measure that `items` (a part's kept evidence) state,
    or None when none has three periods."""
    return longest(every_series(items, about))


def longest(found: list[Series]) -> Series | None:
    """The series of most periods (then of most sources); None when there is none."""
    return max(found, key=lambda s: (len(s.points), len(s.sources)), default=None)


def every_series(items: list[Evidence], about: str) -> list[Series]:
    """Every dated series of one measure, of three periods or more, that `items` state."""
    groups: dict[tuple[str, str], list[_Candidate]] = {}
    asked = set(content_terms(about))
    for candidate in _candidates(lines_of(items)):
        grain = _grain(candidate.period)
        unit = COUNTED if candidate.unit in asked else candidate.unit  # "214,000 heat pumps"
        if unit and unit != "(none)":
            groups.setdefault((unit, grain), []).append(candidate)
    found = [s for (unit, grain), group in groups.items()
             for s in _series(group, about, unit, grain)]
    return [s for s in found if len(s.points) >= MIN_POINTS]


def _candidates(lines: list[Line]) -> list[_Candidate]:
    out = []
    for line in lines:
        if states_span(line.text):  # a total over a span: no value of one period
            continue
        dated = dated_figures(line.text, line.published)
        said = statuses(line.text, dated)
        for period, figure, at in dated:
            out.append(_Candidate(line, _with_unit(figure, at, dated), period, at,
                                  said.get(at, "")))
    return out


def _with_unit(figure: Figure, at: int, dated: list[tuple[str, Figure, int]]) -> Figure:
    """A figure written without a unit takes the one of the figure before it in its
    sentence when the two are close enough to be one measure ("474,000 units from 515,000")."""
    if figure.unit:
        return figure
    before = [f for _, f, where in dated if where < at and f.unit]
    if before and _close(before[-1].amount, figure.amount):
        return Figure(figure.text, figure.value, figure.percent, figure.mantissa,
                      before[-1].unit)
    return figure


def _series(group: list[_Candidate], about: str, unit: str, grain: str) -> list[Series]:
    """The group's candidates split into measures: each joins the first measure one of whose
    sentences speaks of the same thing; one point per period, the preferred source's."""
    measures_found: list[list[_Candidate]] = []
    for candidate in sorted(group, key=_preference):
        home = next((m for m in measures_found
                     if any(_one_measure(c, candidate) for c in m)), None)
        if home is None:
            measures_found.append([candidate])
        elif all(c.period != candidate.period for c in home):
            home.append(candidate)
    return [s for m in measures_found if (s := _as_series(m, about, unit, grain)) is not None]


def _as_series(found: list[_Candidate], about: str, unit: str, grain: str) -> Series | None:
    values = [c.figure.amount for c in found]
    if min(values) <= 0 or max(values) / min(values) > MAX_SPREAD:
        return None  # not one measure's values (a total beside a part of it, say)
    points = sorted((Point(c.period, c.figure.amount, c.figure.text, c.line.source_id,
                           c.status) for c in found), key=lambda p: _order(p.period))
    return Series(about, unit, grain, tuple(points[-MAX_POINTS:]), _measure(found, about))


def _measure(found: list[_Candidate], about: str) -> str:
    """What the series measures, as a source writes it ("Heat pump sales"): the words of
    `about` that half its points or more are said under (in their sentence or the page
    title above it), else the words all its sentences share, as the first of its sentences
    (then page titles) that holds them all writes them, from the first to the last; "" when
    none holds them in a stretch short enough to be a name."""
    texts = list(dict.fromkeys(c.line.text for c in found))
    said = [" ".join((c.line.text, *c.line.about)) for c in found]
    wanted = [t for t in sorted(_about(about), key=about.casefold().find)
              if 2 * sum(bool(_find(text, t)) for text in said) >= len(found)]
    if not wanted and len(texts) > 1:
        wanted = [t for t in _about(texts[0]) if all(_find(x, t) for x in texts)]
    heads = [h for c in found for h in c.line.about if h]
    return next((s for text in (*texts, *heads) if (s := _stretch(text, wanted))), "")


def _stretch(text: str, words: list[str]) -> str:
    """The stretch of `text` from the first to the last of `words` where it holds them all
    and is no longer than a name, its first letter a capital; "" otherwise."""
    found = [_find(text, w) for w in words]
    if not words or not all(found):
        return ""
    low = min(m.start() for m in found if m)
    high = max(m.end() for m in found if m)
    stretch = text[low:high].strip()
    return stretch[:1].upper() + stretch[1:] if len(content_terms(stretch)) <= MEASURE_TERMS \
        else ""


def _find(text: str, word: str) -> re.Match[str] | None:
    """The first place `text` writes `word` (a plural as its singular: "pumps", "pump")."""
    if has_cjk(word):
        return re.search(re.escape(word), text)
    stem = word[:-1] if len(word) > 4 and word.endswith("s") else word
    return re.search(rf"(?<!\w){re.escape(stem)}s?(?!\w)", text, re.I)


def _one_measure(seed: _Candidate, other: _Candidate) -> bool:
    """Two figures of one measure: in one sentence (one unit, one grain), or in two that name
    the same places and bodies, share what they are about (a content word besides time
    words and units) and do not set a period's high or low against an average."""
    a, b = seed.line, other.line
    if a.text == b.text:
        return True
    shared = (_about(a.text) & _about(b.text)) - {seed.figure.unit, other.figure.unit}
    return len(shared) >= SHARED_TERMS and _same_places(a, b) and measures.one_measure(
        a.text, seed.at, b.text, other.at, (a.about, b.about))


def _same_places(a: Line, b: Line) -> bool:
    """Sentences that name places or bodies name one in common (Vestmark's installations are
    not Europe's sales); the names of months and quarters are no places."""
    mine, theirs = _places(a), _places(b)
    if not (mine and theirs):
        return True
    return any(n in b.text.casefold() for n in mine) or any(n in a.text.casefold()
                                                             for n in theirs)


def _places(line: Line) -> set[str]:
    return {n for n in names_in(line) if not set(n.split()) <= _TIME_WORDS
            and not any(w.split("-")[0] in _TIME_WORDS for w in n.split())}


def _about(text: str) -> set[str]:
    return {t for t in content_terms(text) if t not in _TIME_WORDS and not t[:1].isdigit()}


def _preference(c: _Candidate) -> tuple[float, float]:
    """The more credible source first, then the later one."""
    published = c.line.published.toordinal() if c.line.published else 0
    return -c.line.credibility, -published


def _close(a: float, b: float) -> bool:
    low, high = sorted((a, b))
    return low > 0 and high / low <= SAME_MEASURE_RATIO


def _grain(period: str) -> str:
    part = period.split("-")[1]
    return GRAIN.get(part[0], "month")


def _order(period: str) -> tuple[int, int]:
    year, part = period.split("-")
    return int(year), int(part[1:]) if part[0] in "QH" else int(part)
