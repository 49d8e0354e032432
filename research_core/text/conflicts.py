"""The one detector of conflicting figures: where two sources give different figures for the
same measure and period. Sentences from different sources that name the same period, speak of
the same thing (most of the words of one occur in the other, and they name the same things),
and state close figures in the same unit, none of them shared. The more credible source is
preferred, or at equal credibility the later one, and the reason is said. A sentence of a third
source that states both figures (a reconciliation, a correction) explains it. Percentages are
left out: two rates in two texts are too often rates of different things.

The answer, its parts, the memory's open doubts, the progress log and the plan all read
conflicts from here, over plain records (`Said`: a sentence with its source id, publish date,
credibility and publisher), so that none of them reports a conflict another would not."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations, pairwise
from typing import Generic, Protocol, TypeVar

from research_core.text import measures
from research_core.text.dated import a_year, aside, period_of, places_of, year_before
from research_core.text.figures import Figure, figures_in, rounding_of
from research_core.text.periods import named
from research_core.text.sentences import sentences
from research_core.text.terms import TEXTS_CACHED, function_words, has_cjk, nouns, overlap

SAME_TOPIC = 0.4
SAME_MEASURE_RATIO = 1.6  # two versions of one figure differ by less than this factor
MAX_SHOWN = 4
_NUMBERS = re.compile(r"\d+(?:[.,]\d+)*")


class Said(Protocol):
    """What the detector reads of one sentence of a source."""

    @property
    def text(self) -> str: ...

    @property
    def source_id(self) -> str: ...

    @property
    def published(self) -> dt.date | None: ...

    @property
    def credibility(self) -> float: ...

    @property
    def publisher(self) -> str: ...

    @property
    def about(self) -> tuple[str, ...]: ...  # what it stands under, nearest first


@dataclass(frozen=True)
class Statement:
    """A plain `Said`: one sentence of one source."""

    text: str
    source_id: str
    published: dt.date | None = None
    credibility: float = 0.0
    publisher: str = ""
    about: tuple[str, ...] = ()


S = TypeVar("S", bound=Said)


@dataclass(frozen=True)
class Disagreement(Generic[S]):
    period: str
    unit: str  # the unit, or a magnitude word in brackets ("(million)") where none stands
    first: tuple[S, Figure]  # the preferred source and its figure
    second: tuple[S, Figure]
    reason: str  # why the first is preferred: "credibility", "later" or "" (neither)
    explained_by: S | None = None

    @property
    def shown_unit(self) -> str:
        """The unit as written after a figure: "" for a magnitude stand-in (the figure as
        written holds its "million" already)."""
        return "" if self.unit.startswith("(") else self.unit


def find(lines: Sequence[S], clashes: Sequence[Disagreement[S]] | None = None
         ) -> list[Disagreement[S]]:
    """The disagreements among the lines, one per source pair (the first of `every`'s, which
    the caller may hold already as `clashes`), most credible first."""
    found: dict[tuple[str, ...], Disagreement[S]] = {}
    for d in every(lines) if clashes is None else clashes:
        found.setdefault(tuple(sorted((d.first[0].source_id, d.second[0].source_id))), d)
    ranked = sorted((_explained(d, lines) for d in found.values()),
                    key=lambda d: -d.first[0].credibility)
    return ranked[:MAX_SHOWN]


def settled(d: Disagreement[S]) -> bool:
    """Whether the preference ends the question: a more credible source's figure, or a body's
    later figure for what it published earlier (its own revision). Two equally credible
    bodies, or two undated sources, leave a doubt."""
    (first, _), (second, _) = d.first, d.second
    return d.reason == "credibility" or (
        d.reason == "later" and bool(first.publisher) and first.publisher == second.publisher)


def every(lines: Sequence[S]) -> list[Disagreement[S]]:
    """Every pair of sentences of two sources that disagree (not one per source pair): what
    a correction corrects, figure by figure."""
    return [d for a, b in combinations(lines, 2) if a.source_id != b.source_id
            and (d := _clash(a, b)) is not None]


def _clash(a: S, b: S) -> Disagreement[S] | None:
    """Clause by clause: a correction says the new figure and the old one in one sentence
    ("restated … to 209,000 units; the 214,000 units first published were corrected")."""
    if not same_measure(a, b):
        return None
    others = [(clause, _stated(clause, b.published)) for clause in _clauses(b.text)]
    for clause_a in _clauses(a.text):
        mine = _stated(clause_a, a.published)
        for clause_b, theirs in others:
            found = _figures_clash(_corrected(clause_a, a, mine, theirs, b),
                                   _corrected(clause_b, b, theirs, mine, a))
            if found is not None and measures.one_measure(
                    a.text, _at(a.text, clause_a, found[2]), b.text,
                    _at(b.text, clause_b, found[3]), (a.about, b.about)):
                period, unit, x, y = found
                return _ordered(period, unit, (a, x), (b, y))
    return None


def _corrected(clause: str, line: Said, mine: _Stated, theirs: _Stated, other: Said
               ) -> _Stated:
    """A correcting clause's own figures: one that says it corrects ("由原公布的1.86万元/吨
    更正为1.74万元/吨", "revised from 214,000 to 209,000") and is not older than the other
    sentence states the figure it corrects beside its own; the figure the other sentence
    states too is the corrected one, left out, so that the new figure meets the old."""
    if not CUE.search(clause) or _older(line, other):
        return mine
    out: _Stated = {}
    for key, figures in mine.items():
        old = {f.value for f in theirs.get(key, [])}
        own = [f for f in figures if f.value not in old]
        out[key] = own if own and len(own) < len(figures) else figures
    return out


def _older(line: Said, other: Said) -> bool:
    return bool(line.published and other.published and line.published < other.published)


def _at(text: str, clause: str, figure: Figure) -> int:
    """Where in `text` the figure of its `clause` is written."""
    start = text.find(clause)
    return max(start, 0) + max(clause.find(figure.text), 0)


def _clauses(text: str) -> list[str]:
    return sentences(text) or [text]


_Stated = dict[tuple[str, str], list[Figure]]


def _figures_clash(mine: _Stated, theirs: _Stated) -> tuple[str, str, Figure, Figure] | None:
    """The period, unit and figures where two clauses give different figures, none shared."""
    for (period, unit) in sorted(set(mine) & set(theirs)):
        if unit == "(none)":
            continue
        if not {f.value for f in mine[period, unit]}.isdisjoint(
                f.value for f in theirs[period, unit]):
            continue
        close = _close_pair(mine[period, unit], theirs[period, unit])
        if close is not None:
            return period, unit, close[0], close[1]
    return None


def _close_pair(mine: list[Figure], theirs: list[Figure]) -> tuple[Figure, Figure] | None:
    """Two figures near enough to be two versions of one measure (1.86 and 1.74 万元/吨);
    figures far apart (a fee of 1.86 and a price of 10.55 万元/吨) measure different things,
    and so do two figures in two units that share a magnitude word."""
    for x in mine:
        for y in theirs:
            if x.unit and y.unit and x.unit != y.unit:
                continue  # tonnes and a price per tonne, both in 万: compared by magnitude only
            if versions(x, y):
                return x, y
    return None


def versions(x: Figure, y: Figure) -> bool:
    """Whether two figures may be two versions of one measure: within SAME_MEASURE_RATIO of
    each other, neither the other rounded ("11,600" is 11,637 rounded, no other version)."""
    if rounding_of(x, y):
        return False
    low, high = sorted((x.amount, y.amount))
    return low > 0 and high / low <= SAME_MEASURE_RATIO


def _stated(text: str, published: dt.date | None) -> _Stated:
    """The text's figures (no percentages, no years) by (period, unit) and by (period,
    magnitude word): "2.84 million in" and "2.61 million trips" compare by their magnitude,
    "612,000 units" and "571,000 units" by their unit. Each figure's period is the one named
    nearest to it with no other figure between them (the digits of a period's own name,
    the "11" of "2025年11月", are no figure), a quarter, a half or a month: a whole year is
    too coarse to say that two figures measure the same thing. In Chinese the time comes
    before what happened in it, so a figure takes the period named before it, and a figure
    with none before it has none. A correction's new figure, after the old one in the same
    unit, is of the old one's period."""
    periods = [(start, end, key) for start, end, key in named(text, published) if "-" in key]
    out: _Stated = {}
    if not periods:
        return out
    found = [f for f in figures_in(text) if not f.percent and not a_year(f)]
    kept = [(f, at) for f, at in zip(found, places_of(text, found), strict=True)
            if not _a_grade(text, at + len(f.text), f)]
    figures, places = [f for f, _ in kept], [at for _, at in kept]
    inside = {at for at in places if any(start <= at < end for start, end, _ in periods)}
    starts = [(start, key) for start, _, key in periods]
    before = has_cjk(text)
    spans = _span_starts(text, periods)
    correcting = CUE.search(text) is not None
    last: dict[str, str] = {}  # a correction's period by unit, for its new figure
    for figure, at in zip(figures, places, strict=True):
        period = None if at in inside else aside(text, at + len(figure.text), starts) or \
            period_of(at, starts, [p for p in places if p != at and p not in inside], before)
        if period is None and correcting:
            period = last.get(unit_of(figure))  # "由1.86万元/吨更正为1.74万元/吨"
        if period is None or _opens_span(at, starts, spans, period):
            continue
        period = year_before(text, at, at + len(figure.text), period)
        last[unit_of(figure)] = period
        for unit in {figure.unit or _magnitude(figure), _magnitude(figure)}:
            out.setdefault((period, unit), []).append(figure)
    return out


def _a_grade(text: str, end: int, figure: Figure) -> bool:
    """A bare number glued to the letters after it names a grade or a model, not an amount
    ("6μm foil", "5G", "4K"): it stands between no period and its figure."""
    return not figure.unit and figure.value == figure.mantissa and end < len(text) and \
        text[end].isalpha() and not has_cjk(text[end])


_SPAN_JOIN = re.compile(r"\s*(?:and|to|until|through|[-–—~]|至|到|和)\s*", re.I)


def _span_starts(text: str, periods: list[tuple[int, int, str]]) -> set[int]:
    """Where a span of two periods begins ("between November 2025 and September 2026",
    "从2025年11月到2026年9月")."""
    ordered = sorted(periods)
    return {a[0] for a, b in pairwise(ordered)
            if _SPAN_JOIN.fullmatch(text[a[1]:b[0]])}


def _opens_span(at: int, starts: list[tuple[int, str]], spans: set[int], period: str) -> bool:
    """A figure read off the first period of a span that follows it ("rose to €18.90 per kg
    between November 2025 and September 2026"): a change over the span, whose level is the
    span's end, is no figure of its first period."""
    following = min(((start, key) for start, key in starts if start > at), default=None)
    return following is not None and following[0] in spans and following[1] == period


def unit_of(figure: Figure) -> str:
    """What a figure is compared in: its unit, else its magnitude word in brackets
    ("(million)"), else "(none)"."""
    return figure.unit or _magnitude(figure)


def one_unit(a: Figure, b: Figure) -> bool:
    """Whether two figures are in one unit as far as words can tell: a unit word compares
    only with words of its own script ("67,873人" and "61,672 deaths" may state one figure;
    what the sentences say then decides)."""
    mine, theirs = unit_of(a), unit_of(b)
    return mine == theirs or has_cjk(mine) != has_cjk(theirs)


def _magnitude(figure: Figure) -> str:
    """A unitless figure's stand-in unit: its magnitude word ("million", "万"), so that "2.84
    million" and "2.61 million" compare, while a bare "14" compares with nothing."""
    word = _NUMBERS.sub("", figure.text, count=1).strip() if figure.value != figure.mantissa \
        else ""
    return f"({word})" if word else "(none)"


_WORD = r"[A-Z][\w-]{2,}(?:['’]s\b)?"
_CAPITALISED = re.compile(rf"\b{_WORD}(?: {_WORD})*")
_POSSESSIVE = re.compile(r"['’]s$")


def same_measure(a: Said, b: Said) -> bool:
    """Whether two sentences of two sources speak of one thing, as the detector compares
    them: most of the words of one in the other, and the same names (places, bodies)."""
    return max(_topic(a.text, b.text), _topic(b.text, a.text)) >= SAME_TOPIC and \
        same_subject(a, b)


def same_subject(a: Said, b: Said) -> bool:
    """Two sentences about one thing. Two Chinese sentences that name things name at least
    one in common (besides a price or an average, which every line names): one product's
    average and another product's fee in one month are no disagreement, a fee and its
    correction are."""
    mine, theirs = nouns(a.text) - measures.GENERIC, nouns(b.text) - measures.GENERIC
    if mine and theirs and not mine & theirs:
        return False
    return _same_names(a, b)


def _same_names(a: Said, b: Said) -> bool:
    """Two sentences that name places or bodies (not their own publishers) name one in
    common: one firm's capacity and another's, or a country's total and another country's,
    in one quarter are no disagreement (issue 25)."""
    mine, theirs = names_in(a), names_in(b)
    if not (mine and theirs):
        return True
    return any(n in b.text.casefold() for n in mine) or any(
        n in a.text.casefold() for n in theirs)


def names_in(line: Said) -> set[str]:
    """The names a sentence gives: its runs of capitalised words ("Eastwick Port", its first
    word included, leading function words and a possessive's "'s" left off), not its
    publisher's name where the sentence writes that name whole: "the Norland Wool Authority
    said" names no place, "Norland exported" does. A run is one name: "Eastwick Port" and
    "Westford Port" name two ports, not one "Port"."""
    text = line.text
    if line.publisher.strip():
        text = re.sub(re.escape(line.publisher.strip()), " ", text, flags=re.IGNORECASE)
    names = set()
    for run in _CAPITALISED.findall(text):
        words = [_POSSESSIVE.sub("", w).casefold() for w in run.split()]
        while words and words[0] in function_words():
            words.pop(0)
        if words:
            names.add(" ".join(words))
    return names


def _topic(a: str, b: str) -> float:
    return overlap(_wordings(a), _wordings(b))


@lru_cache(maxsize=TEXTS_CACHED)
def _wordings(text: str) -> str:
    """The text without its numbers, once per text (`every` compares each line with each)."""
    return _NUMBERS.sub(" ", text)


def _by_unit(text: str) -> dict[str, list[Figure]]:
    """The text's figures (no percentages, no years) by unit, or by magnitude word where no
    unit stands after them ("2.84 million from …")."""
    units: dict[str, list[Figure]] = {}
    for figure in figures_in(text):
        unit = figure.unit or _magnitude(figure)
        if not figure.percent and not a_year(figure) and unit != "(none)":
            units.setdefault(unit, []).append(figure)
    return units


def _ordered(period: str, unit: str, a: tuple[S, Figure], b: tuple[S, Figure]
             ) -> Disagreement[S]:
    ea, eb = a[0], b[0]
    if abs(ea.credibility - eb.credibility) > 1e-9:
        first, second = (a, b) if ea.credibility > eb.credibility else (b, a)
        return Disagreement(period, unit, first, second, "credibility")
    da, db = ea.published, eb.published
    if da and db and da != db:
        first, second = (b, a) if db > da else (a, b)
        return Disagreement(period, unit, first, second, "later")
    return Disagreement(period, unit, a, b, "")


def _explained(d: Disagreement[S], lines: Sequence[S]) -> Disagreement[S]:
    """The disagreement with a third source's sentence that states both figures, if any."""
    values = {d.first[1].value, d.second[1].value}
    sources = {d.first[0].source_id, d.second[0].source_id}
    for line in lines:
        if line.source_id not in sources and values <= {f.value for f in figures_in(line.text)}:
            return Disagreement(d.period, d.unit, d.first, d.second, d.reason, line)
    return d


_SAYS = r"(?:reported|reports|estimated|estimates|gives|gave|puts|put|counts|counted)"
CUE = re.compile(r"differ|different figures|two (?:figures|numbers)|disagree|discrepan|reconcil|"
                 r"revis|correct|两个数|两组数|whereas|不一致|分歧|差异|更正|修正|下修|上修|"
                 rf"\b{_SAYS}\b[^;]*\bwhile\b[^;]*\b{_SAYS}\b", re.I)


def documented(lines: Sequence[S]) -> list[S]:
    """Sentences that themselves report a disagreement or a correction: a cue ("differ",
    "revised", "更正" …) and two different figures in one unit."""
    return [ln for ln in lines if CUE.search(ln.text)
            and any(len({f.value for f in fs}) >= 2 for fs in _by_unit(ln.text).values())]
