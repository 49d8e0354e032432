"""The extractive answer, for when the reporter or the summariser falls back: whole sentences
of the kept evidence, each with its citation and each said once.

A report: a lead of 2–4 sentences that answers the question with its key figures and dates, in
time order; one short section per sub-question; the disagreements between sources, with both
figures, both sources and which one is preferred and why; and a closing line naming what the
question asked and the evidence does not cover. A part: the same for one sub-question.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from itertools import combinations

from research_core.loop.answering import ranking
from research_core.loop.answering.budget_fit import Block, fit
from research_core.loop.answering.completion import Reader, completed, page_lines
from research_core.loop.answering.select import Picker
from research_core.loop.memory import labels
from research_core.loop.memory.evidence import Evidence
from research_core.loop.memory.pool import Line, lines_of, quoted
from research_core.loop.planning.asked import not_found
from research_core.protocols import Similarity
from research_core.text import conflicts
from research_core.text.asking import Asked
from research_core.text.conflicts import Disagreement, unit_of, versions
from research_core.text.counts import Counted, counted_apart, short_name, two_counts
from research_core.text.figures import Figure, figures_in
from research_core.text.periods import time_key
from research_core.text.terms import has_cjk
from research_core.wording import CHINESE, ENGLISH, Words

Cite = Callable[[Evidence], str | None]  # the citation mark of an item ("[3]"), None: none
# a model's word on a claim against a passage (True: it holds), None where it gave none
Judge = Callable[[str, str], Awaitable[bool | None]]
LEAD_MOST, SECTION_MOST, PART_MOST = 4, 5, 7
FOLLOW_UP_MOST = 4
SECTION_WEIGHTS = (2.0, 1.0)  # of a section's sub-question and of the whole question
UNBOUNDED = 1_000_000  # no budget: every line the builder chose
MIN_CREDIBILITY = 0.35  # company releases, SEO blogs and forums do not carry the answer
CONFLICTS_MOST = 2  # disagreements shown in one block, the most relevant
NOTES_MOST = 1  # sentences shown that report a disagreement themselves


@dataclass(frozen=True)
class Section:
    question: str
    items: list[Evidence]


async def report(similarity: Similarity, asked: Asked, sections: list[Section],
                 cite: Cite, read: Reader | None = None, said: Sequence[str] = (),
                 budget: int | None = None, published: frozenset[str] = frozenset()) -> str:
    """The whole answer to the question `asked` from the sections' evidence (`read`: page
    bodies that complete cut snippets; `said`: the sentences the published parts said, which
    only the lead may repeat; `published`: the sub-questions whose parts are in the thread
    already, whose sections give only what their parts left out: the reader's budget is
    spent on more of the evidence, issue 42), within `budget` characters."""
    question, zh = asked.text, asked.chinese
    words = labels.ZH if zh else labels.EN
    kept = await completed([e for s in sections for e in s.items], read)
    pool = usable(await _with_pages(kept, read), cite)
    if not pool:
        return words["nothing"]
    picker = Picker(similarity)
    clashes = conflicts.every(pool)
    found = conflicts.find(pool, clashes)
    disputed = await conflict_lines(similarity, [question], pool, cite, zh, found, said)
    picker.remember(disputed)
    outvoted = {d.second[0].text for d in found if _apart(d, pool) is None}
    lead = await _lead(picker, question, [ln for ln in pool if ln.text not in outvoted])
    picker.remember(said)
    blocks = [Block("", [" ".join(_cited(ln, cite) for ln in lead)], whole=True)]
    unanswered: list[str] = []
    told = set(said)
    for section in sections:
        chosen = await picker.pick([section.question, question], pool, SECTION_MOST,
                                   weights=SECTION_WEIGHTS)
        if chosen:
            blocks.append(Block(f"*{section.question}*",
                                [f"• {_cited(ln, cite)}" for ln in chosen]))
        elif _node(section) not in published and not _said_by(section, pool, lead, told):
            unanswered.append(section.question)
    if disputed:
        blocks.append(Block("", [ln for ln in disputed if ln], whole=True))
    used = " ".join(picker.chosen)
    missing = not_found(asked, unanswered, " ".join(ln.text for ln in pool), used)
    if missing:
        blocks.append(Block("", [words["not_found"] + "; ".join(missing) + ("。" if zh else ".")],
                            whole=True))
    text = fit(blocks, budget if budget is not None else UNBOUNDED)
    quoted(pool, text)
    return text


async def part(similarity: Similarity, section: Section, cite: Cite,
               said: list[str], read: Reader | None = None,
               budget: int | None = None, leading: Sequence[Line] = (),
               judge: Judge | None = None) -> str:
    """One sub-question's part: the `leading` lines (a correction's), then its best sentences
    not `said` in other parts, and its conflicts (`judge`: the model that says whether two
    bodies count differently, where one is configured), within `budget` characters."""
    zh = has_cjk(section.question)
    picker = Picker(similarity)
    picker.remember(said)
    kept = await completed(section.items, read)
    pool = usable(await _with_pages(kept, read), cite)
    # the lines that correct the part lead it: taken before the disagreements, which then
    # leave out what they say (a revision once lost its correcting line to a disagreement
    # block that the part's budget then cut)
    first = [ln for ln in leading if await picker.take(ln)]
    disputed = await conflict_lines(similarity, [section.question], pool, cite, zh,
                                    told=[*said, *(ln.text for ln in first)], judge=judge)
    picker.remember(disputed)
    chosen = first + await picker.pick([section.question], pool, PART_MOST - len(first))
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


async def follow_up(similarity: Similarity, asked: Asked, items: list[Evidence],
                    cite: Cite, most: int = FOLLOW_UP_MOST,
                    read: Reader | None = None) -> list[str]:
    """A follow-up's answer from the evidence closest to it (and its pages, where reading is
    free): its best whole sentences as cited bullets, then the disagreements among them; []
    when nothing can be cited."""
    pool = usable(await _with_pages(items, read), cite)
    if not pool:
        return []
    picker = Picker(similarity)
    disputed = await conflict_lines(similarity, [asked.text], pool, cite, asked.chinese)
    picker.remember(disputed)
    chosen = await picker.pick([asked.text], pool, most)
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
    """Up to LEAD_MOST of the sentences that answer the question best, the best supported
    first (their figures stated by other sources too), one a source (the lead is not one
    report's), in time order."""
    chosen = await picker.pick([question], pool, LEAD_MOST, per_source=1, supported=True)
    return sorted(chosen, key=lambda ln: time_key(ln.text, ln.evidence.published))


async def conflict_lines(similarity: Similarity, queries: Sequence[str], pool: list[Line],
                         cite: Cite, zh: bool, found: list[Disagreement[Line]] | None = None,
                         told: Sequence[str] = (), judge: Judge | None = None) -> list[str]:
    """The "where the sources disagree" block (empty when they agree): the CONFLICTS_MOST
    disagreements whose sentences answer the `queries` best, and one sentence that reports a
    disagreement itself; `found`: the pool's disagreements where the caller has them already.
    A disagreement or a note that a published part's sentences (`told`) say already is not
    said again: a thread once showed one correction four times.

    Two figures that a source gives to two bodies side by side (`text.counts`) are two
    counts, not a disagreement: they come first, each as "CHPA and EESB count differently:"
    with each body's figure, citing the sentence that sets them side by side, where the
    model (`judge`, where one is configured) does not find that the sentence says
    otherwise. The block's first line is its
    heading, "" where it begins with such counts."""
    words = labels.ZH if zh else labels.EN
    found = [d for d in (conflicts.find(pool) if found is None else found) if not _told(d, told)]
    counted: list[Counted[Line]] = []
    disputed: list[Disagreement[Line]] = []
    for d in found:
        apart = _apart(d, pool)
        if apart is not None and await _counts_hold(apart, d.first[1], d.second[1], judge):
            counted.append(apart)
        else:
            disputed.append(d)
    found = await _most_relevant(similarity, queries, disputed)
    shown = {d.explained_by.text for d in found if d.explained_by}
    notes: list[Line] = []
    for ln in conflicts.documented(pool):
        if ln.text in shown or any(ln.text in t for t in told):
            continue
        apart_note = await _note_apart(ln, pool, judge)
        if apart_note is not None:
            counted.append(apart_note)
        else:
            notes.append(ln)
    notes = notes[:NOTES_MOST]
    counts = _count_lines([c for c in counted if not _counts_told(c, told)], cite, zh)
    out = list(counts)
    if found or notes:
        out.append(f"*{words['conflicts']}*")
    for d in found:
        out.append("• " + labels.disagreement(d, cite, zh))
        if d.explained_by:
            out.append(f"  {words['explained']}{_cited(d.explained_by, cite)}")
    out += [f"• {_cited(ln, cite)}" for ln in notes]
    if not out:
        return []
    return [*([""] if counts else []), *out, ""]


def _apart(d: Disagreement[Line], pool: Sequence[Line]) -> Counted[Line] | None:
    """The sentence that gives a disagreement's two figures to its two bodies, if any: two
    bodies' counts, not one body's two versions."""
    return two_counts(*d.first, *d.second, pool)


async def _note_apart(note: Line, pool: Sequence[Line], judge: Judge | None
                      ) -> Counted[Line] | None:
    """A sentence that reports two figures of one measure, given to two bodies, as two
    counts where the pool's sources bear that out (and the model, where one is configured,
    agrees); None where it reports a disagreement."""
    for x, y in _pairs(figures_in(note.text)):
        apart = counted_apart(x, y, [note, *pool])
        if apart is not None and await _counts_hold(apart, x, y, judge):
            return apart
    return None


def _pairs(figures: list[Figure]) -> list[tuple[Figure, Figure]]:
    """Two different figures of one unit, close enough to be two versions of one measure."""
    kept = [f for f in figures if not f.percent and unit_of(f) != "(none)"]
    return [(x, y) for x, y in combinations(kept, 2) if unit_of(x) == unit_of(y)
            and x.key != y.key and versions(x, y)]


async def _counts_hold(apart: Counted[Line], x: Figure, y: Figure, judge: Judge | None) -> bool:
    """Whether the model, asked, finds that the passage says the two bodies' figures count
    different things; True where no model answers (the code's measure stands)."""
    if judge is None:
        return True
    first, second = (short_name(b) for b in apart.bodies)
    claim = (f"{first}'s figure and {second}'s figure ({x.text} and {y.text}) count different "
             "things (another definition or scope), so they do not contradict each other.")
    verdict = await judge(claim, apart.passage.text)
    return verdict is not False


def _count_lines(counted: Sequence[Counted[Line]], cite: Cite, zh: bool) -> list[str]:
    """One line per two bodies' counts, at most CONFLICTS_MOST, citing the sentence that
    sets them side by side: "• CHPA and EESB count differently: CHPA 571,000 units, EESB
    612,000 units [n]"."""
    w = Words(CHINESE if zh else ENGLISH)
    out: list[str] = []
    seen: set[tuple[str, ...]] = set()
    for apart in counted:
        x, y = (_written(f, zh) for f in apart.figures)
        if (key := (*apart.bodies, x, y)) in seen or len(out) >= CONFLICTS_MOST:
            continue
        seen.add(key)
        first, second = (short_name(b) for b in apart.bodies)
        said = w("{first} and {second} count differently: {first} {x}, {second} {y}",
                 first=first, second=second, x=x, y=y)
        out.append(f"• {said} {cite(apart.passage.evidence) or ''}".rstrip())
    return out


def _counts_told(apart: Counted[Line], told: Sequence[str]) -> bool:
    """Whether a published part's sentence says the two counts: both figures, both bodies."""
    names = [short_name(b) for b in apart.bodies]
    return any(all(f.text in t for f in apart.figures) and all(n in t for n in names)
               for t in told)


def _written(figure: Figure, zh: bool) -> str:
    """A figure with its unit, as its language writes them ("571,000 units", "150.8万包")."""
    if not figure.unit:
        return figure.text
    return f"{figure.text}{'' if zh or has_cjk(figure.unit) else ' '}{figure.unit}"


async def _most_relevant(similarity: Similarity, queries: Sequence[str],
                         found: list[Disagreement[Line]]) -> list[Disagreement[Line]]:
    """The CONFLICTS_MOST disagreements whose two sentences answer the queries best: a
    disagreement the question does not ask about takes the reader's budget from one it does."""
    if len(found) <= CONFLICTS_MOST:
        return found
    lines = [ln for d in found for ln in (d.first[0], d.second[0])]
    scores = await ranking.relevance(similarity, queries, lines)
    order = sorted(range(len(found)), key=lambda i: -(scores[2 * i] + scores[2 * i + 1]))
    return [found[i] for i in sorted(order[:CONFLICTS_MOST])]


def _told(d: Disagreement[Line], told: Sequence[str]) -> bool:
    """Whether one of the sentences states the disagreement: its period and both figures."""
    return any(d.period in t and d.first[1].text in t and d.second[1].text in t for t in told)


def _cited(line: Line, cite: Cite) -> str:
    """The line with its source's mark (a second mark for a more credible source that
    states its figures too earned no group on suites written after it, issue 42)."""
    return f"{line.text} {cite(line.evidence) or ''}".strip()


def _said_by(section: Section, pool: list[Line], lead: list[Line], told: set[str]) -> bool:
    """Whether the lead or a published part says one of the section's own lines."""
    return any(ln.evidence.node_id == _node(section) and (ln in lead or ln.text in told)
               for ln in pool)


def _node(section: Section) -> str:
    return section.items[0].node_id if section.items else ""
