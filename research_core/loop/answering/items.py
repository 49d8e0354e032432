"""Item by item, wherever the kept sources list the things of the question's kind line by line
(issue 25: the evidence decides, not the question's wording): a table's rows read as
sentences, a report's "Label: …" paragraphs — a list of three or more labelled lines with
figures, about the question. Each item gets its latest figure, from the most credible source
that states one, and for a question on how prices moved its high or low; a source on
something no list names gives one line; a sentence already said elsewhere in the answer is
not said again."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

from research_core.loop.answering import subject
from research_core.loop.memory.labels import has_figures
from research_core.loop.memory.pool import Line, label, same_item
from research_core.protocols import Similarity
from research_core.text.figures import figures_in
from research_core.text.periods import latest_stated, periods_in
from research_core.text.terms import has_cjk

MOST_ITEMS = 12
LIST_LINES = 3  # labelled lines of one source that make a list
LIST_MARGIN = 0.06  # how far a list's mean similarity to the question may trail the best's
_SWINGS = re.compile(r"波动|走势|涨跌|起伏|\bswings?\b|\bmove[sd]?\b|\bmovements?\b|"
                     r"\bfluctuat\w*|\bhighs? and lows?\b", re.I)
_EXTREME = re.compile(r"高点|最高|峰值|高位|低点|最低|低位|\bpeak\w*|\bhighs?\b|\blows?\b|"
                      r"\brecord\b", re.I)

Taken = Callable[[Line], Awaitable[bool]]  # records a line as said; False: it repeats one


async def listed(similarity: Similarity, question: str, pool: list[Line],
                 thing: str | None = None) -> list[str]:
    """The items the pool's sources list, each once, in order of first appearance; beyond
    `MOST_ITEMS`, those more sources list (a label with a qualifier before it or a
    specification after it names the same item: "澳洲美利奴羊毛" is "美利奴羊毛"). Only the lists
    about what the question asks (their lines, on average, about as close to it as the
    closest list's): a table of material prices lists no separator projects; and where the
    question has a subject (`thing`, `subject.subject_of`), only the lists about it, where
    one is."""
    lists = on_subject(_lists(question, pool), thing)
    if not lists:
        return []
    closeness = [await _closeness(similarity, question, lines) for lines in lists]
    names = [[label(ln.text) for ln in lines] for lines, close in zip(lists, closeness,
                                                                        strict=True)
             if close >= max(closeness) - LIST_MARGIN]
    found: list[str] = []
    for name in (n for group in names for n in group):
        same = [f for f in found if same_item(f, name)]
        if not same:
            found.append(name)
        elif len(name) < len(same[0]):
            found[found.index(same[0])] = name
    sources = {f: sum(any(same_item(f, n) for n in group) for group in names) for f in found}
    most = sorted(found, key=lambda f: -sources[f])[:MOST_ITEMS]
    return [f for f in found if f in most]


def readable(question: str, lines: list[Line]) -> bool:
    """Whether the asker can read the list's labels: a question not written in Chinese
    characters gets no list whose labels mostly are (its figures still reach the sections);
    Latin-script labels (names, "Hub port throughput") are listed for a Chinese question,
    whose readers read them (measured both ways: dropping Latin-script lists for Chinese
    questions lost the lists of causes and regions those questions asked for)."""
    if has_cjk(question):
        return True
    return sum(has_cjk(label(ln.text)) for ln in lines) * 2 <= len(lines)


def _lists(question: str, pool: list[Line]) -> list[list[Line]]:
    """Each source's labelled lines, where there are enough to make a list the asker reads."""
    by_source: dict[str, list[Line]] = {}
    for line in pool:
        if label(line.text):
            by_source.setdefault(line.source_id, []).append(line)
    return [lines for lines in by_source.values()
            if len(lines) >= LIST_LINES and readable(question, lines)]


def elsewhere(question: str, pool: list[Line], thing: str | None) -> list[Line]:
    """The lines about other things of the subject's kind: those that name an item of a list
    that is not about the question's subject (beside one that is) and do not name the
    subject `thing` ("石墨化加工费：9月均价0.89万元/吨" for a copper-foil question, wherever it
    is written, since a price table lists graphitisation beside the other materials), and
    every line of a source that never names the subject (`subject.silent_on`)."""
    if thing is None:
        return []
    silent = subject.silent_on(pool, thing)
    lists = _lists(question, pool)
    about = on_subject(lists, thing)
    others = {label(ln.text).casefold() for lines in lists if lines not in about for ln in lines}
    return [ln for ln in pool if ln.source_id in silent or (
        thing not in ln.text.casefold() and any(o in ln.text.casefold() for o in others))]


def on_subject(lists: list[list[Line]], thing: str | None) -> list[list[Line]]:
    """The lists about the question's subject `thing`, where one is: a copper-foil question's
    answer lists no prices of the other materials beside the copper-foil tracker's rows. A
    list is about it where its title, its heading or a row names it."""
    about = [lines for lines in lists if thing is not None and _names(lines, thing)]
    return about or lists


def _names(lines: list[Line], thing: str) -> bool:
    what = f"{lines[0].evidence.title} {lines[0].heading}".casefold()
    return thing in what or any(thing in ln.text.casefold() for ln in lines)


async def _closeness(similarity: Similarity, question: str, lines: list[Line]) -> float:
    """How close a list is to the question: its rows on average, and what it is a list of
    (the heading above it, else its page's title), one half each. A table's rows are mostly
    figures, which the embedder reads as little like any question."""
    row = (await similarity.matrix([question], [ln.text for ln in lines]))[0]
    about = lines[0].heading or lines[0].evidence.title
    [[whole]] = await similarity.matrix([question], [about]) if about else [[sum(row) / len(row)]]
    return (sum(row) / len(row) + whole) / 2


async def each(pool: list[Line], items: list[str], take: Taken,
               swings: bool = False) -> list[Line]:
    """One line per item not said yet: a line that lists it (else one that names it with a
    figure), the latest period first, then the more credible source's; with `swings` (the
    question asks how prices moved) also the line that gives its high or low."""
    chosen: list[Line] = []
    labelled = [(ln, label(ln.text)) for ln in pool]  # once, not once an item
    for item in items:
        naming = [ln for ln, name in labelled if same_item(name, item)] or [
            ln for ln in pool if item.casefold() in ln.text.casefold() and has_figures(ln.text)]
        extremes = [ln for ln in pool if swings and _EXTREME.search(ln.text)
                    and has_figures(ln.text) and _about_item(ln, item, items)]
        for group in (naming, extremes):
            for line in sorted(group, key=_latest_first, reverse=True):
                if await take(line):
                    chosen.append(line)
                    break
    return chosen


def unlisted(pool: list[Line], items: list[str], thing: str | None = None
             ) -> list[list[Line]]:
    """The lines with figures of each source that names none of the items, by source; where
    the question has a subject (`thing`), only the lines that name it: a copper-foil
    question's list gets no graphitisation fee from an anode brief."""
    by_source: dict[str, list[Line]] = {}
    for line in pool:
        by_source.setdefault(line.source_id, []).append(line)
    figured = [[ln for ln in lines if has_figures(ln.text)
                and (thing is None or thing in ln.text.casefold())]
               for lines in by_source.values()
               if not any(i.casefold() in ln.text.casefold() for ln in lines for i in items)]
    return [lines for lines in figured if lines]


def moves(text: str) -> bool:
    """A sentence that says how something moved over a span: two periods, two figures with a
    unit ("由2025年3月的5.10万元/吨回升至2026年2月的5.62万元/吨")."""
    amounts = [f for f in figures_in(text) if f.unit and not f.percent]
    return len(periods_in(text)) >= 2 and len(amounts) >= 2


def asks_swings(question: str) -> bool:
    """Whether the question asks how something moved over a span (its highs and lows)."""
    return _SWINGS.search(question) is not None


def _about_item(line: Line, item: str, items: list[str]) -> bool:
    """A line names the item, or its source's title does and the line names no other item."""
    text, title = line.text.casefold(), line.evidence.title.casefold()
    if item.casefold() in text:
        return True
    return item.casefold() in title and not any(
        o.casefold() in text for o in items if not same_item(o, item))


def _latest_first(line: Line) -> tuple[str, int, float]:
    """The latest month or quarter the line gives (one that gives none last; a month before
    the quarter that ends with it: the latest figure, not an average over it), then its
    credibility."""
    when = latest_stated(line.text, line.evidence.published)
    months = {k for k in periods_in(line.text, line.evidence.published)
              if re.fullmatch(r"\d{4}-\d{2}", k)}
    return when or "0000", int(when in months), line.evidence.credibility
