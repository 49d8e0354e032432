"""The extractive answer, for when the reporter or the summariser falls back: whole sentences
of the kept evidence, each with its citation and each said once.

A report: a lead of 2–4 sentences that answers the question with its key figures and dates, in
time order; one short section per sub-question; the disagreements between sources, with both
figures, both sources and which one is preferred and why; and a closing line naming what the
question asked and the evidence does not cover. A part: the same for one sub-question.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from research_core.loop.answering.budget_fit import Block, fit
from research_core.loop.answering.completion import Reader, completed, page_lines
from research_core.loop.answering.select import Picker, states_measure
from research_core.loop.memory import labels
from research_core.loop.memory.evidence import Evidence
from research_core.loop.memory.pool import Line, lines_of, quoted
from research_core.loop.planning import asked, subquestions
from research_core.protocols import Similarity
from research_core.text import conflicts
from research_core.text.conflicts import Disagreement
from research_core.text.periods import latest_stated, time_key
from research_core.text.terms import has_cjk

Cite = Callable[[Evidence], str | None]  # the citation mark of an item ("[3]"), None: none
LEAD_MOST, SECTION_MOST, PART_MOST = 4, 5, 7
FOLLOW_UP_MOST = 4
LEAD_FLOOR = 0.5
COMMON_SHARE = 0.6  # a thing more of a section's lines name than this tells none apart
THINGS_MOST = 3
MEASURED_ENOUGH = 2
UNBOUNDED = 1_000_000  # no budget: every line the builder chose
MIN_CREDIBILITY = 0.35  # company releases, SEO blogs and forums do not carry the answer


@dataclass(frozen=True)
class Section:
    question: str
    items: list[Evidence]


async def report(similarity: Similarity, question: str, sections: list[Section],
                 cite: Cite, read: Reader | None = None, said: Sequence[str] = (),
                 budget: int | None = None, published: frozenset[str] = frozenset()) -> str:
    """The whole answer to `question` from the sections' evidence (`read`: page bodies that
    complete cut snippets; `said`: the sentences the published parts said, which only the
    lead may repeat; `published`: the sub-questions whose parts are in the thread already,
    which get no section again), within `budget` characters."""
    zh = has_cjk(question)
    words = labels.ZH if zh else labels.EN
    kept = await completed([e for s in sections for e in s.items], read)
    pool = usable(await _with_pages(kept, read), cite)
    if not pool:
        return words["nothing"]
    picker = Picker(similarity)
    clashes = conflicts.every(pool)
    found = conflicts.find(pool, clashes)
    disputed = conflict_lines(pool, cite, zh, found, said)
    picker.remember(disputed)
    outvoted = {d.second[0].text for d in found}
    lead = await _lead(picker, question, [ln for ln in pool if ln.text not in outvoted])
    picker.remember(said)
    blocks = [Block("", [" ".join(_cited(ln, cite) for ln in lead)], whole=True)]
    unanswered: list[str] = []
    on_topic = _on_point(question, pool, len(pool))
    told = set(said)
    for section in sections:
        if _node(section) in published:
            continue
        chosen = await _section(picker, section.question, on_topic, SECTION_MOST)
        if chosen:
            blocks.append(Block(f"*{section.question}*",
                                [f"• {_cited(ln, cite)}" for ln in chosen]))
        elif not any(ln.evidence.node_id == _node(section) and (ln in lead or ln.text in told)
                     for ln in pool):
            unanswered.append(section.question)
    if disputed:
        blocks.append(Block(disputed[0], [ln for ln in disputed[1:] if ln], whole=True))
    used = " ".join(picker.chosen)
    missing = asked.not_found(question, unanswered, " ".join(ln.text for ln in pool), used)
    if missing:
        blocks.append(Block("", [words["not_found"] + "; ".join(missing) + ("。" if zh else ".")],
                            whole=True))
    text = fit(blocks, budget if budget is not None else UNBOUNDED)
    quoted(pool, text)
    return text


async def part(similarity: Similarity, section: Section, cite: Cite,
               said: list[str], read: Reader | None = None,
               budget: int | None = None) -> str:
    """One sub-question's part: its best sentences not `said` in other parts and its
    conflicts, within `budget` characters."""
    zh = has_cjk(section.question)
    picker = Picker(similarity)
    picker.remember(said)
    kept = await completed(section.items, read)
    pool = usable(await _with_pages(kept, read), cite)
    pool = _on_point(section.question, pool, len(pool))  # not a line about something else
    disputed = conflict_lines(pool, cite, zh, told=said)
    picker.remember(disputed)
    chosen = await _section(picker, section.question, pool, PART_MOST)
    bullets = [f"• {_cited(ln, cite)}" for ln in chosen]
    if not chosen:
        bullets = [(labels.ZH if zh else labels.EN)["part_not_found"]]
    blocks = [Block(f"*{section.question}*", bullets)]
    if disputed:
        blocks.append(Block("", [ln for ln in disputed if ln], whole=True))
    # a part says something: its first line even where the share it was given is smaller
    text = fit(blocks, budget if budget is not None else UNBOUNDED) or \
        fit([Block(blocks[0].header, blocks[0].lines[:1])], UNBOUNDED)
    quoted(pool, text)
    return text


async def follow_up(similarity: Similarity, question: str, items: list[Evidence],
                    cite: Cite, most: int = FOLLOW_UP_MOST,
                    read: Reader | None = None) -> list[str]:
    """A follow-up's answer from the evidence closest to it (and its pages, where reading is
    free): its best whole sentences as cited bullets, then the disagreements among them; []
    when nothing can be cited."""
    pool = usable(await _with_pages(items, read), cite)
    if not pool:
        return []
    picker = Picker(similarity)
    disputed = conflict_lines(pool, cite, has_cjk(question))
    picker.remember(disputed)
    chosen = await _section(picker, question, _on_point(question, pool, len(pool)), most)
    out = [*(f"• {_cited(ln, cite)}" for ln in chosen), *(c for c in disputed if c)]
    quoted(pool, "\n".join(out))
    return out


async def _with_pages(items: list[Evidence], read: Reader | None) -> list[Line]:
    """The items' sentences, then the other sentences of their pages where reading is free."""
    return lines_of(items, await page_lines(items, read))


def usable(lines: list[Line], cite: Cite) -> list[Line]:
    """Lines that can be cited, from sources credible and recent enough to carry an answer
    (a filter on the period the question names, "the past year", earned no group on suites
    written after it and was deleted, issue 42)."""
    return [ln for ln in lines if cite(ln.evidence) is not None and ln.evidence.recency > 0
            and ln.evidence.credibility >= MIN_CREDIBILITY]


async def _lead(picker: Picker, question: str, pool: list[Line]) -> list[Line]:
    """2–4 sentences with figures that answer the question, in time order."""
    pool = _on_point(question, pool)
    with_figures = [ln for ln in pool if labels.has_figures(ln.text)] or pool
    # one sentence a source (the lead is not one report's), none far below the best
    chosen = await picker.pick(question, _measured(question, with_figures), LEAD_MOST,
                               figures_first=True, per_source=1)
    if len(chosen) < 2:
        chosen += await picker.pick(question, pool, 2 - len(chosen))
    return sorted(chosen, key=lambda ln: time_key(ln.text, ln.evidence.published))


async def _section(picker: Picker, question: str, pool: list[Line], most: int) -> list[Line]:
    """A sub-question's sentences: figures on what it measures first (a why-question's
    reasons first earned no group on suites written after that rule, issue 42)."""
    measured = _measured(question, pool)
    latest = subquestions.asks_latest(question)
    newest = await _newest_first(picker, question, measured) if latest else []
    first = newest + [ln for thing in _telling_things(question, measured)
             for ln in await picker.pick(question, [m for m in measured if states_measure(m.text)
                                                    and thing in m.text.casefold()],
                                         1, figures_first=True, latest=latest)]
    return first + await picker.pick(question, measured, most - len(first),
                                     figures_first=True, latest=latest)


async def _newest_first(picker: Picker, question: str, pool: list[Line]) -> list[Line]:
    """The best line on the newest period among the lines that rank near the best for the
    question (an off-topic line on the newest quarter does not lead)."""
    newest = {id(ln) for ln in _newest(pool)}
    for line in await picker.ranked(question, pool, figures_first=True, latest=True):
        if id(line) in newest and await picker.take(line):
            return [line]
    return []


def _newest(pool: list[Line]) -> list[Line]:
    """The lines that state a measure for the newest month or quarter any line states: a
    question on the latest figures is answered by them first, not by last quarter's."""
    stated = [(latest_stated(ln.text, ln.evidence.published), ln) for ln in pool
              if states_measure(ln.text)]
    newest = max((k for k, _ in stated), default="")
    return [ln for k, ln in stated if newest and k == newest]


def _telling_things(question: str, pool: list[Line]) -> list[str]:
    """The things a question names that set its lines apart ("carbonate", "hydroxide"; not
    the "lithium" nearly every line names): each gets its best line first."""
    share = {t: sum(t in ln.text.casefold() for ln in pool) / max(1, len(pool))
             for t in asked.named(question)}
    return [t for t, s in share.items() if 0 < s < COMMON_SHARE][:THINGS_MOST]


def _measured(question: str, pool: list[Line]) -> list[Line]:
    """The lines that name what the question measures (its "sales", its "价格"): in their own
    text where two lines at least do, else in their text or title; all of them when it names
    no measure or no line names one."""
    wanted = subquestions.measures_in(question)
    if not wanted:
        return pool
    own = [ln for ln in pool if subquestions.names_measure(ln.text, wanted)]
    titled = [ln for ln in pool
              if subquestions.names_measure(f"{ln.evidence.title} {ln.text}", wanted)]
    return own if len(own) >= MEASURED_ENOUGH else titled or pool


def _on_point(question: str, pool: list[Line], enough: int = 2) -> list[Line]:
    """The lines that name the most of what the question names (in their own words or their
    source's title): the best-named `enough` lines and those that name as much, never lines
    that name less than half of it."""
    shares = [asked.named_share(question, f"{ln.evidence.title} {ln.text}") for ln in pool]
    for floor in sorted(set(shares), reverse=True):
        chosen = [ln for ln, s in zip(pool, shares, strict=True) if s >= floor]
        if len(chosen) >= enough or floor <= LEAD_FLOOR:
            return [ln for ln, s in zip(pool, shares, strict=True)
                    if s >= max(floor, LEAD_FLOOR)] or pool
    return pool


def conflict_lines(pool: list[Line], cite: Cite, zh: bool,
                   found: list[Disagreement[Line]] | None = None,
                   told: Sequence[str] = ()) -> list[str]:
    """The "where the sources disagree" block (empty when they agree); `found`: the pool's
    disagreements where the caller has them already. A disagreement or a note that a
    published part's sentences (`told`) say already is not said again: a thread once showed
    one correction four times."""
    words = labels.ZH if zh else labels.EN
    found = [d for d in (conflicts.find(pool) if found is None else found)
             if not _told(d, told)]
    shown = {d.explained_by.text for d in found if d.explained_by}
    notes = [ln for ln in conflicts.documented(pool) if ln.text not in shown
             and not any(ln.text in t for t in told)][:2]
    if not found and not notes:
        return []
    out = [f"*{words['conflicts']}*"]
    for d in found:
        out.append("• " + labels.disagreement(d, cite, zh))
        if d.explained_by:
            out.append(f"  {words['explained']}{_cited(d.explained_by, cite)}")
    out += [f"• {_cited(ln, cite)}" for ln in notes]
    return [*out, ""]


def _told(d: Disagreement[Line], told: Sequence[str]) -> bool:
    """Whether one of the sentences states the disagreement: its period and both figures."""
    return any(d.period in t and d.first[1].text in t and d.second[1].text in t for t in told)


def _cited(line: Line, cite: Cite) -> str:
    """The line with its source's mark (a second mark for a more credible source that
    states its figures too earned no group on suites written after it, issue 42)."""
    return f"{line.text} {cite(line.evidence) or ''}".strip()


def _node(section: Section) -> str:
    return section.items[0].node_id if section.items else ""
