"""What a question is about, so that a source kept for its words but about something else
stays out of the answer: of the things the question names, the one nearly every kept source
is about ("剪毛机" for a question on shearing-machine makers' expansion). An article on
wool-scouring plants' expansion, kept for its "龙头企业" and "扩产", names shearing machines
once, in passing."""

from __future__ import annotations

import re

from research_core.loop.memory.pool import Line
from research_core.loop.planning import asked, subquestions
from research_core.text.terms import has_cjk

SUBJECT_SOURCES = 2  # sources that must be about a thing before it is the subject
SUBJECT_SHARE = 0.75  # the share of the sources that must be about it
SUBJECT_MENTIONS = 2  # mentions in a source's text that make it about the subject


def on_subject(question: str, pool: list[Line], context: list[Line] | None = None
               ) -> list[Line]:
    """The lines of the sources about what the question is about (`subject_of`, read off
    `context`, default the pool: the run's other evidence where the pool is one section's)."""
    thing = subject_of(question, pool if context is None else context + pool)
    if thing is None:
        return pool
    about = {sid for sid, text in _source_texts(pool).items() if _about(text, thing)}
    return [ln for ln in pool if ln.source_id in about]


def on_names(question: str, pool: list[Line], context: list[Line] | None = None) -> list[Line]:
    """The lines of the sources that name a place or body the question names (issue 25: a
    distractor about another country is not cited). Only names two sources of the run state
    count, and a source is left out only where it is written in the name's script (a Chinese
    page may give a Latin name in Chinese)."""
    run = pool if context is None else context + pool
    known = asked.known_names(question, _source_texts(run, fold=False).values(),
                                 SUBJECT_SOURCES)
    if not known:
        return pool
    away = {sid for sid, text in _source_texts(pool).items()
            if not asked.names_any(text, known)}
    return [ln for ln in pool if ln.source_id not in away]


def silent_on(pool: list[Line], thing: str) -> set[str]:
    """The sources, written in the thing's script, that never name it, in their title,
    publisher or text (an anode brief in a copper-foil answer, kept for its "加工费")."""
    return {sid for sid, text in _source_texts(pool).items()
            if thing not in text and has_cjk(text) == has_cjk(thing)}


def subject_of(question: str, pool: list[Line]) -> str | None:
    """Of the things the question names (not its measures: "prices" is no subject), the one
    the most sources are about but not all
    ("剪毛机" for a question on shearing-machine makers' expansion; not the city every source
    names),
    the first the question names among equals. A source is about a thing its title names or
    its text names twice: an article on wool-scouring plants' expansion, kept for its
    "龙头企业" and "扩产", names shearing machines once, in passing. None when no thing is clearly
    the subject (fewer than two sources, or than three in four, are about it: a question on
    "upstream wool supplies" has sources on fleece, scoured wool and tops)."""
    sources = _source_texts(pool)
    measures = subquestions.measures_in(question)
    counts = {t: sum(_about(text, t) for text in sources.values())
              for t in asked.named(question) if t.rstrip("s") not in measures
              and not _modifies(question, t, measures)}
    telling = {t: n for t, n in counts.items() if n < len(sources)}
    most = max(telling.values(), default=0)
    if most < SUBJECT_SOURCES or most < SUBJECT_SHARE * len(sources):
        return None
    return next(t for t, n in telling.items() if n == most)


def _modifies(question: str, word: str, measures: list[str]) -> bool:
    """Whether an English word stands right before a measure the question names, as the
    measure's modifier ("export" of "export revenue"): it says which measure, not what the
    sources are about."""
    if not measures or has_cjk(word):
        return False
    after = re.compile(rf"\b{re.escape(word)}\s+(?:{'|'.join(map(re.escape, measures))})",
                       re.IGNORECASE)
    return after.search(question) is not None


def _source_texts(pool: list[Line], fold: bool = True) -> dict[str, str]:
    """Each source's title and publisher (a ministry's name says whose ministry it is), a line
    break, then the text of its lines (each once), lowercased unless not `fold`."""
    lines: dict[str, dict[str, None]] = {}
    titles: dict[str, str] = {}
    for ln in pool:
        titles.setdefault(ln.source_id, f"{ln.evidence.title} {ln.evidence.publisher}".strip())
        lines.setdefault(ln.source_id, {})[ln.text] = None
    joined = {sid: f"{titles[sid]}\n{' '.join(texts)}" for sid, texts in lines.items()}
    return {sid: text.casefold() for sid, text in joined.items()} if fold else joined


def _about(text: str, thing: str) -> bool:
    title, _, body = text.partition("\n")
    return thing in title or body.count(thing) >= SUBJECT_MENTIONS
