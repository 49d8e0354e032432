"""Where two sources give different figures for the same measure and period: sentences from
different sources that name the same period, speak of the same thing (most of the words of one
occur in the other) and state figures in the same unit, none of them shared. The more credible
source is preferred, or at equal credibility the later one, and the reason is said. A sentence
of a third source that states both figures (a reconciliation, a correction) explains it.
Percentages are left out: two rates in two texts are too often rates of different things."""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import combinations

from research_core.loop.answering.pool import Line
from research_core.text.figures import Figure, figures_in
from research_core.text.periods import spans
from research_core.text.sentences import sentences
from research_core.text.terms import function_words, nouns, overlap

SAME_TOPIC = 0.4
_GENERIC = frozenset({"价格", "均价", "价位", "数据", "数字"})  # what every price line names
SAME_MEASURE_RATIO = 1.6  # two versions of one figure differ by less than this factor
MAX_SHOWN = 4
_NUMBERS = re.compile(r"\d+(?:[.,]\d+)*")


@dataclass(frozen=True)
class Disagreement:
    period: str
    unit: str
    first: tuple[Line, Figure]  # the preferred source and its figure
    second: tuple[Line, Figure]
    reason: str  # why the first is preferred: "credibility", "later" or "" (neither)
    explained_by: Line | None = None


def find(lines: list[Line]) -> list[Disagreement]:
    """The disagreements among the lines, one per source pair, most credible first."""
    found: dict[tuple[str, str], Disagreement] = {}
    for a, b in combinations(lines, 2):
        pair = tuple(sorted((a.source_id, b.source_id)))
        if a.source_id == b.source_id or pair in found:
            continue
        clash = _clash(a, b)
        if clash is not None:
            found[(pair[0], pair[1])] = _explained(clash, lines)
    ranked = sorted(found.values(), key=lambda d: -d.first[0].evidence.credibility)
    return ranked[:MAX_SHOWN]


def _clash(a: Line, b: Line) -> Disagreement | None:
    """Clause by clause: a correction says the new figure and the old one in one sentence
    ("restated … to 209,000 units; the 214,000 units first published were corrected")."""
    if max(_topic(a, b), _topic(b, a)) < SAME_TOPIC or not _same_subject(a, b):
        return None
    for clause_a in _clauses(a):
        for clause_b in _clauses(b):
            found = _figures_clash(clause_a, clause_b)
            if found is not None:
                period, unit, x, y = found
                return _ordered(period, unit, (a, x), (b, y))
    return None


def _clauses(line: Line) -> list[Line]:
    return [Line(text, line.evidence) for text in sentences(line.text)] or [line]


def _figures_clash(a: Line, b: Line) -> tuple[str, str, Figure, Figure] | None:
    """The period, unit and figures where two clauses give different figures, none shared."""
    mine, theirs = _stated(a), _stated(b)
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
    figures far apart (a fee of 1.86 and a price of 10.55 万元/吨) measure different things."""
    for x in mine:
        for y in theirs:
            low, high = sorted((x.amount, y.amount))
            if low > 0 and high / low <= SAME_MEASURE_RATIO:
                return x, y
    return None



def _stated(line: Line) -> dict[tuple[str, str], list[Figure]]:
    """The line's figures (no percentages, no years) by (period, unit) and by (period,
    magnitude word): "2.84 million in" and "2.61 million trips" compare by their magnitude,
    "612,000 units" and "571,000 units" by their unit. Each figure's period is the one named
    nearest to it with no other figure between them, a quarter, a half or a month: a whole
    year is too coarse to say that two figures measure the same thing."""
    named = [(at, key) for at, key in spans(line.text, line.evidence.published) if "-" in key]
    out: dict[tuple[str, str], list[Figure]] = {}
    if not named:
        return out
    figures = [f for f in figures_in(line.text) if not f.percent and not _a_year(f)]
    places = [line.text.find(f.text) for f in figures]
    for figure, at in zip(figures, places, strict=True):
        period = _period_of(at, named, [p for p in places if p != at])
        for unit in {figure.unit or _magnitude(figure), _magnitude(figure)}:
            out.setdefault((period, unit), []).append(figure)
    return out


def _period_of(at: int, named: list[tuple[int, str]], others: list[int]) -> str:
    """The period named nearest to a figure with no other figure between them: in "fell to
    474,000 units from 515,000 in Q1 2025" the quarter is the 515,000's, and the 474,000 takes
    the period named before it."""
    clear = [(p, key) for p, key in named
             if not any(min(p, at) < o < max(p, at) for o in others)]
    return min(clear or named, key=lambda p: abs(p[0] - at))[1]


def _a_year(figure: Figure) -> bool:
    return not figure.unit and len(figure.value) == 4 and figure.value.startswith(("19", "20"))


def _magnitude(figure: Figure) -> str:
    """A unitless figure's stand-in unit: its magnitude word ("million", "万"), so that "2.84
    million" and "2.61 million" compare, while a bare "14" compares with nothing."""
    word = figure.text[len(figure.mantissa):].strip() if figure.value != figure.mantissa else ""
    return f"({word})" if word else "(none)"


_CAPITALISED = re.compile(r"\b[A-Z][\w-]{2,}")


def _same_subject(a: Line, b: Line) -> bool:
    """Two sentences about one thing. Two Chinese sentences that name things name at least
    one in common (besides a price or
    an average, which every line names): a graphite anode's average and a copper-foil fee in
    one month are no disagreement ("人造石墨负极…9月均价2.94万元/吨" against "6μm加工费均价
    1.86万元/吨"), a fee and its correction are."""
    mine, theirs = nouns(a.text) - _GENERIC, nouns(b.text) - _GENERIC
    if mine and theirs and not mine & theirs:
        return False
    return _same_names(a, b)


def _same_names(a: Line, b: Line) -> bool:
    """Two sentences that name places or bodies (not their own publishers) name one in
    common: one firm's capacity and another's, or a country's total and another country's,
    in one quarter are no disagreement (issue 25)."""
    mine, theirs = _names(a), _names(b)
    if not (mine and theirs):
        return True
    return any(n in b.text.casefold() for n in mine) or any(
        n in a.text.casefold() for n in theirs)


def _names(line: Line) -> set[str]:
    """The capitalised words of a sentence (its first included), not function words and
    not its publisher's name."""
    own = set(line.evidence.publisher.casefold().split())
    words = {w.casefold() for w in _CAPITALISED.findall(line.text)}
    return {w for w in words if w not in own and w not in function_words()}


def _topic(a: Line, b: Line) -> float:
    return overlap(_NUMBERS.sub(" ", a.text), _NUMBERS.sub(" ", b.text))


def _by_unit(text: str) -> dict[str, list[Figure]]:
    """The text's figures (no percentages, no years) by unit, or by magnitude word where no
    unit stands after them ("2.84 million from …")."""
    units: dict[str, list[Figure]] = {}
    for figure in figures_in(text):
        unit = figure.unit or _magnitude(figure)
        if not figure.percent and not _a_year(figure) and unit != "(none)":
            units.setdefault(unit, []).append(figure)
    return units


def _ordered(period: str, unit: str, a: tuple[Line, Figure],
             b: tuple[Line, Figure]) -> Disagreement:
    ea, eb = a[0].evidence, b[0].evidence
    if abs(ea.credibility - eb.credibility) > 1e-9:
        first, second = (a, b) if ea.credibility > eb.credibility else (b, a)
        return Disagreement(period, unit, first, second, "credibility")
    da, db = ea.published, eb.published
    if da and db and da != db:
        first, second = (b, a) if db > da else (a, b)
        return Disagreement(period, unit, first, second, "later")
    return Disagreement(period, unit, a, b, "")


def _explained(d: Disagreement, lines: list[Line]) -> Disagreement:
    """The disagreement with a third source's sentence that states both figures, if any."""
    values = {d.first[1].value, d.second[1].value}
    sources = {d.first[0].source_id, d.second[0].source_id}
    for line in lines:
        if line.source_id not in sources and values <= {f.value for f in figures_in(line.text)}:
            return Disagreement(d.period, d.unit, d.first, d.second, d.reason, line)
    return d


_SAYS = r"(?:reported|reports|estimated|estimates|gives|gave|puts|put|counts|counted)"
CUE = re.compile(r"differ|different figures|two (?:figures|numbers)|disagree|discrepan|reconcil|"
                 r"revis|correct|两个数|两组数|whereas|不一致|分歧|差异|口径|更正|修正|下修|上修|"
                 rf"\b{_SAYS}\b[^;]*\bwhile\b[^;]*\b{_SAYS}\b", re.I)


def documented(lines: list[Line]) -> list[Line]:
    """Sentences that themselves report a disagreement or a correction: a cue ("differ",
    "revised", "更正" …) and two different figures in one unit."""
    return [ln for ln in lines if CUE.search(ln.text)
            and any(len({f.value for f in fs}) >= 2 for fs in _by_unit(ln.text).values())]
