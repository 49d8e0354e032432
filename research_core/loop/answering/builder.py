"""The extractive answer, for when the reporter or the summariser falls back: whole sentences
of the kept evidence, each with its citation and each said once.

A report: a lead of 2–4 sentences that answers the question with its key figures and dates, in
time order; one short section per sub-question; the disagreements between sources, with both
figures, both sources and which one is preferred and why; and a closing line naming what the
question asked and the evidence does not cover. A part: the same for one sub-question.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from research_core.loop.answering import coverage, disagreements, labels
from research_core.loop.answering.periods import time_key
from research_core.loop.answering.pool import Line, lines_of
from research_core.loop.answering.select import Picker
from research_core.loop.evidence import Evidence
from research_core.protocols import Similarity
from research_core.terms import has_cjk

Cite = Callable[[Evidence], str | None]  # the citation mark of an item ("[3]"), None: none
LEAD_MOST, SECTION_MOST, PART_MOST = 4, 3, 5
MIN_CREDIBILITY = 0.35  # company releases, SEO blogs and forums do not carry the answer


@dataclass(frozen=True)
class Section:
    question: str
    items: list[Evidence]


async def report(similarity: Similarity, question: str, sections: list[Section],
                 cite: Cite) -> str:
    """The whole answer to `question` from the sections' evidence."""
    zh = has_cjk(question)
    words = labels.ZH if zh else labels.EN
    pool = usable(lines_of([e for s in sections for e in s.items]), cite)
    if not pool:
        return words["nothing"]
    picker = Picker(similarity)
    outvoted = {d.second[0].text for d in disagreements.find(pool)}
    lead = await _lead(picker, question, sections, [ln for ln in pool if ln.text not in outvoted])
    out = [" ".join(_cited(ln, cite) for ln in lead), ""]
    unanswered = []
    for section in sections:
        chosen = await picker.pick(section.question, pool, SECTION_MOST)
        if chosen:
            out += [f"*{section.question}*", *(f"• {_cited(ln, cite)}" for ln in chosen), ""]
        elif not any(ln.evidence.node_id == _node(section) for ln in lead):
            unanswered.append(section.question)
    out += conflict_lines(pool, cite, zh)
    used = " ".join(picker.chosen)
    missing = coverage.not_found(question, unanswered, " ".join(ln.text for ln in pool), used)
    if missing:
        out.append(words["not_found"] + "; ".join(missing) + ("。" if zh else "."))
    return "\n".join(out).strip()


async def part(similarity: Similarity, section: Section, cite: Cite,
               said: list[str]) -> str:
    """One sub-question's part: its best sentences not `said` in other parts, its conflicts."""
    zh = has_cjk(section.question)
    picker = Picker(similarity)
    picker.remember(said)
    pool = usable(lines_of(section.items), cite)
    chosen = await picker.pick(section.question, pool, PART_MOST)
    out = [f"*{section.question}*", *(f"• {_cited(ln, cite)}" for ln in chosen)]
    out += conflict_lines(pool, cite, zh)
    if not chosen:
        out.append((labels.ZH if zh else labels.EN)["part_not_found"])
    return "\n".join(ln for ln in out if ln).strip()


def usable(lines: list[Line], cite: Cite) -> list[Line]:
    """Lines that can be cited, from sources credible and recent enough to carry an answer."""
    return [ln for ln in lines if cite(ln.evidence) is not None and ln.evidence.recency > 0
            and ln.evidence.credibility >= MIN_CREDIBILITY]


async def _lead(picker: Picker, question: str, sections: list[Section],
                pool: list[Line]) -> list[Line]:
    """2–4 sentences with figures that answer the question, one per sub-question first."""
    with_figures = [ln for ln in pool if labels.has_figures(ln.text)] or pool
    chosen: list[Line] = []
    for section in sections[:LEAD_MOST]:
        own = [ln for ln in with_figures if ln.evidence.node_id == _node(section)]
        chosen += await picker.pick(f"{question} {section.question}", own or with_figures, 1,
                                    figures_first=True)
    if len(chosen) < 2:
        chosen += await picker.pick(question, with_figures, 2 - len(chosen), figures_first=True)
    return sorted(chosen[:LEAD_MOST], key=lambda ln: time_key(ln.text, ln.evidence.published))


def conflict_lines(pool: list[Line], cite: Cite, zh: bool) -> list[str]:
    """The "where the sources disagree" block (empty when they agree)."""
    words = labels.ZH if zh else labels.EN
    found = disagreements.find(pool)
    shown = {d.explained_by.text for d in found if d.explained_by}
    notes = [ln for ln in disagreements.documented(pool) if ln.text not in shown][:2]
    if not found and not notes:
        return []
    out = [f"*{words['conflicts']}*"]
    for d in found:
        out.append("• " + labels.disagreement(d, cite, zh))
        if d.explained_by:
            out.append(f"  {words['explained']}{_cited(d.explained_by, cite)}")
    out += [f"• {_cited(ln, cite)}" for ln in notes]
    return [*out, ""]


def _cited(line: Line, cite: Cite) -> str:
    mark = cite(line.evidence) or ""
    return f"{line.text} {mark}".strip()


def _node(section: Section) -> str:
    return section.items[0].node_id if section.items else ""
