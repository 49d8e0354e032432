"""The dated series an answer part can show as a chart: at least three values of one measure,
each for its own month, quarter or half, in one unit, read from the part's kept evidence.

Every point is a figure as a source writes it, for the period its sentence names clearly
(`research_core.text.dated.dated_figures`: the one figure and period grammar), with its
unit (a figure written without one, "to 474,000 units from 515,000", takes the unit of the
figure before it in its sentence when the two are close enough, month for month, to be one
measure, and always where it stands in a bracket after its period's name, "January
(158,000)"; a count is of the noun written after it, `text.figures.counted`, and one of the
thing the part is about, "248,000 residential heat pumps", counts units of it). Points
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

A follow-up in the run's thread reads the series its parts chart (`charted`, `part_series`:
what `workers.run_view` draws) and those of all its kept evidence (`every_series`, `joined`),
so that "which month was highest?" is answered from them (`extremes`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from research_core.delivery.publications import Publication
from research_core.loop.memory.evidence import Evidence
from research_core.loop.memory.pool import Line, lines_of
from research_core.loop.memory.state import RunState
from research_core.text import measures
from research_core.text.conflicts import SAME_MEASURE_RATIO, names_in, unit_of
from research_core.text.dated import bracketed, dated_figures
from research_core.text.figure_status import statuses
from research_core.text.figures import Figure, counted, figures_in
from research_core.text.periods import MONTH_NAMES, states_span
from research_core.text.terms import content_terms, has_cjk, stem
from research_core.wording import ENGLISH_WORDS, N_, Words

MIN_POINTS = 3
COUNTED = "units"  # a figure followed by the thing asked about counts that thing
MAX_POINTS = 24
MAX_SPREAD = 20.0  # the largest value of a series at most this many times its smallest
GRAIN = {"Q": N_("quarter"), "H": N_("half year")}  # else N_("month")
MONTHS = (N_("Jan"), N_("Feb"), N_("Mar"), N_("Apr"), N_("May"), N_("Jun"), N_("Jul"),
          N_("Aug"), N_("Sep"), N_("Oct"), N_("Nov"), N_("Dec"))
PERIOD_LABELS = {"Q": N_("Q{n} {year}"), "H1": N_("H1 {year}"), "H2": N_("H2 {year}")}
STATUSES = (N_("preliminary"), N_("revised"))  # a point's (`figure_status`), shown translated
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
        return self.shown_in(ENGLISH_WORDS)

    def shown_in(self, w: Words) -> str:
        """`shown`, its status in the language of `w`."""
        return f"{self.written} ({w(self.status)})" if self.status else self.written

    @property
    def label(self) -> str:
        """"Q1 2026", "H1 2026", "Sep 2026"."""
        return self.label_in(ENGLISH_WORDS)

    def label_in(self, w: Words) -> str:
        """`label` in the language of `w` ("2026年第1季度", "2026年9月")."""
        year, part = self.period.split("-")
        if part[0] == "Q":
            return w(PERIOD_LABELS["Q"], n=part[1:], year=year)
        if part[0] == "H":
            return w(PERIOD_LABELS[part], year=year)
        return w("{month} {year}", month=w(MONTHS[int(part) - 1]), year=year)


@dataclass(frozen=True)
class Series:
    about: str  # what the part answers ("How did heat pump sales move in 2026?")
    unit: str  # "units", "元/吨", or a magnitude word in brackets ("(million)")
    grain: str  # "month", "quarter" or "half year"
    points: tuple[Point, ...]
    measure: str = ""  # what it measures, as a source says it ("Heat pump sales")
    # the sentences its points are read from, and the headings and titles they stand under:
    # what a follow-up's question is matched against (`extremes`)
    said: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @property
    def title(self) -> str:
        """What the series measures and in what: "Heat pump sales (units, by month)"; the
        unit alone where its sources name no measure the question names."""
        return self.title_in(ENGLISH_WORDS)

    def title_in(self, w: Words) -> str:
        """`title` in the language of `w` (the measure as its sources name it)."""
        unit = w("{unit}, by {grain}", unit=self.unit_in(w), grain=w(self.grain))
        return w("{measure} ({unit})", measure=self.measure, unit=unit) if self.measure \
            else unit[:1].upper() + unit[1:]

    def unit_in(self, w: Words) -> str:
        """The unit label, in the language of `w` where it is the count of the thing asked
        about (a source's own unit as it writes it)."""
        return w("units") if self.unit == COUNTED else self.unit_label

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

    def describe(self, titles: dict[str, str], w: Words = ENGLISH_WORDS) -> str:
        """The chart in words (its alt text): the series, point by point, and its sources
        (`titles`: source id -> title), in the language of `w`."""
        values = w("; ").join(f"{p.label_in(w)}: {p.shown_in(w)}" for p in self.points)
        sources = w("; ").join(titles.get(s) or s for s in self.sources)
        return w("Chart: {unit} by {grain}, for “{about}”. {values}. Sources: {sources}.",
                 unit=self.unit_in(w), grain=w(self.grain), about=self.about, values=values,
                 sources=sources)


@dataclass(frozen=True)
class _Candidate:
    line: Line
    figure: Figure
    period: str
    at: int
    unit: str  # what it is compared in: COUNTED, a count's noun, its unit, "(million)"
    status: str = ""


def series_of(items: list[Evidence], about: str) -> Series | None:
    """The longest dated series of one measure that `items` (a part's kept evidence) state,
    or None when none has three periods."""
    return longest(every_series(items, about))


def part_series(state: RunState, part_key: str, sources: Iterable[str]) -> Series | None:
    """The series a part's chart draws: the one `series_of` reads from the kept evidence of
    the part's sources, about the part's sub-question (the run's question for the report and
    for a follow-up's part)."""
    wanted = set(sources)
    items = [e for e in state.kept() if e.source_id in wanted]
    node = state.tree.nodes.get(part_key)
    return series_of(items, node.question if node is not None else state.question)


def charted(state: RunState) -> list[Series]:
    """The series the run's published parts show as charts, each once (a series two parts
    hold is charted once), as their latest versions show them: what a follow-up in the thread
    reads first."""
    latest: dict[str, Publication] = {}
    for p in state.publications:
        if p.kind == "part" and p.version >= latest.get(p.part_key, p).version:
            latest[p.part_key] = p
    found = (part_series(state, p.part_key, p.sources) for p in latest.values())
    return list({s.digest(): s for s in found if s is not None}.values())


def longest(found: list[Series]) -> Series | None:
    """The series of most periods (then of most sources); None when there is none."""
    return max(found, key=lambda s: (len(s.points), len(s.sources)), default=None)


def every_series(items: list[Evidence], about: str, pages: Iterable[Line] = (),
                 joined: bool = False) -> list[Series]:
    """Every dated series of one measure, of three periods or more, that `items` state (and
    the sentences of their `pages`, where a caller has read them). A chart's figure joins the
    first measure one of whose sentences speaks of the same thing; `joined` (a follow-up that
    asks for a period's high or low) makes two measures one where a sentence speaks of the
    things of both, so that a report's January and February, said beside its quarter's sales,
    join its December, said beside its heat pumps sold, through the sales of a third
    sentence."""
    groups: dict[tuple[str, str], list[_Candidate]] = {}
    asked = {stem(t) for t in _about(about)}
    for candidate in _candidates(lines_of(items, pages), asked):
        grain = _grain(candidate.period)
        if candidate.unit and candidate.unit != "(none)":
            groups.setdefault((candidate.unit, grain), []).append(candidate)
    found = [s for (unit, grain), group in groups.items()
             for s in _series(group, about, unit, grain, joined)]
    return [s for s in found if len(s.points) >= MIN_POINTS]


def _candidates(lines: list[Line], asked: set[str]) -> list[_Candidate]:
    out = []
    for line in lines:
        if states_span(line.text):  # a total over a span: no value of one period
            continue
        dated = dated_figures(line.text, line.published)
        said = statuses(line.text, dated)
        units: list[tuple[str, Figure, str]] = []  # (unit, figure, period): those with one
        for period, figure, at in dated:
            unit = _unit(line, figure, at, period, units, asked)
            if not unit.startswith("("):  # a unit word, not "(none)" or "(million)"
                units.append((unit, figure, period))
            out.append(_Candidate(line, figure, period, at, unit, said.get(at, "")))
    return out


def _unit(line: Line, figure: Figure, at: int, period: str,
          before: list[tuple[str, Figure, str]], asked: set[str]) -> str:
    """What a figure is compared in. A count of the thing asked about ("248,000 residential
    heat pumps", "214,000 heat pumps") counts units of it (COUNTED); another count, the noun
    it counts ("passengers"); else its unit, or its magnitude word. A figure written without
    a unit takes the one of the figure before it in its sentence: whatever it is where the
    figure stands in a bracket after its period's name ("474,000 units …; January
    (158,000)"), else where the two are close enough, month for month, to be one measure
    ("474,000 units from 515,000"; a quarter's 474,000 units are 158,000 a month)."""
    noun = counted(line.text, at + len(figure.text))
    if noun and stem(noun) in asked:
        return COUNTED
    if noun or figure.unit:
        return noun or figure.unit
    if not before:
        return unit_of(figure)
    unit, earlier, their_period = before[-1]
    if bracketed(line.text, at, figure, line.published):
        return unit
    if _close(earlier.amount / _months(their_period), figure.amount / _months(period)):
        return unit
    return unit_of(figure)


def _months(period: str) -> int:
    """How many months a period spans: 3 for "2026-Q1", 6 for "2026-H1", 1 for a month."""
    part = period.split("-")[1]
    return 12 // PER_YEAR.get(part[0], 12)


def _series(group: list[_Candidate], about: str, unit: str, grain: str,
            joined: bool) -> list[Series]:
    """The group's candidates split into measures: each joins the first measure one of whose
    sentences speaks of the same thing (`joined`: every such measure, made one); one point
    per period, the preferred source's."""
    measures_found: list[list[_Candidate]] = []
    for candidate in sorted(group, key=_preference):
        homes = [m for m in measures_found
                 if any(_one_measure(c, candidate, joined) for c in m)] \
            if joined else [next((m for m in measures_found
                                  if any(_one_measure(c, candidate) for c in m)), [])]
        home = homes[0] if homes else []
        if len(homes) > 1:  # one measure, at the place of the first
            pooled = sorted((c for m in homes for c in m), key=_preference)
            home.clear()
            for c in pooled:
                if all(c.period != h.period for h in home):
                    home.append(c)
            measures_found = [m for m in measures_found if not any(m is o for o in homes[1:])]
        if not home:
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
    said = tuple(dict.fromkeys(t for c in found for t in (c.line.text, *c.line.about) if t))
    return Series(about, unit, grain, tuple(points[-MAX_POINTS:]), _measure(found, about),
                  said)


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
    and is a name: no longer than one, and stating no figure (a stretch across one,
    "Record of 248,000 residential heat pumps", runs over a clause); its first letter a
    capital; "" otherwise."""
    found = [_find(text, w) for w in words]
    if not words or not all(found):
        return ""
    low = min(m.start() for m in found if m)
    high = max(m.end() for m in found if m)
    stretch = text[low:high].strip()
    if len(content_terms(stretch)) > MEASURE_TERMS or figures_in(stretch):
        return ""
    return stretch[:1].upper() + stretch[1:]


def _find(text: str, word: str) -> re.Match[str] | None:
    """The first place `text` writes `word` (a plural as its singular: "pumps", "pump")."""
    if has_cjk(word):
        return re.search(re.escape(word), text)
    stem = word[:-1] if len(word) > 4 and word.endswith("s") else word
    return re.search(rf"(?<!\w){re.escape(stem)}s?(?!\w)", text, re.I)


def _one_measure(seed: _Candidate, other: _Candidate, joined: bool = False) -> bool:
    """Two figures of one measure: in one sentence (one unit, one grain), or in two that name
    the same places and bodies, share what they are about (a content word besides time
    words and units; `joined`: or stand on one page, which is about one thing: a report's
    "January (158,000)" and its "248,000 residential heat pumps" in December) and do not set
    a period's high or low against an average."""
    a, b = seed.line, other.line
    if a.text == b.text:
        return True
    shared = (_about(a.text) & _about(b.text)) - {seed.figure.unit, other.figure.unit}
    about_one = len(shared) >= SHARED_TERMS or (joined and a.source_id == b.source_id)
    return about_one and _same_places(a, b) and measures.one_measure(
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
    return GRAIN.get(part[0], N_("month"))


def _order(period: str) -> tuple[int, int]:
    year, part = period.split("-")
    return int(year), int(part[1:]) if part[0] in "QH" else int(part)
