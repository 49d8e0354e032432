"""The reporter tier, called once: a cited report written from the evidence list only.

Every citation must resolve to a numbered, stored source; a report whose citations do not
resolve goes back to the model once, then an extractive report is built from the evidence
itself (`research_core.loop.answering.builder`).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from research_core.loop.answering import builder
from research_core.loop.answering.completion import Reader
from research_core.loop.memory.evidence import Evidence
from research_core.loop.memory.memory import Summary
from research_core.loop.report import citing, report_evidence
from research_core.loop.report.citing import CITATION
from research_core.models.gateway import Gateway
from research_core.models.prompts import render
from research_core.protocols import Similarity
from research_core.text.asking import Asked

SOURCES_HEADING = "\n\nSources\n"
FLAGGED_HEADING = "\n\nFlagged claims (not supported by the evidence they cite)\n"
_SOURCE_LINE = re.compile(r"^\[(\d+)\] .*\(([^()\s]+)\)$", re.M)


@dataclass(frozen=True)
class Source:
    number: int
    source_id: str
    title: str
    url: str
    publisher: str
    published: dt.date | None
    source_type: str

    def line(self) -> str:
        date = self.published.isoformat() if self.published else "undated"
        return (f"[{self.number}] {self.title} — {self.publisher}, {date}, {self.url} "
                f"({self.source_id})")


@dataclass(frozen=True)
class ClaimCheck:
    """One claim of the report, checked against the evidence it cites."""

    text: str
    citations: list[int]
    supported: bool
    reason: str
    checked_by: str


@dataclass(frozen=True)
class Report:
    text: str
    sources: list[Source]
    cited: list[int]
    fallback: bool
    claims: list[ClaimCheck] = field(default_factory=list)

    @property
    def flagged(self) -> list[ClaimCheck]:
        return [c for c in self.claims if not c.supported]

    def cited_source_ids(self) -> list[str]:
        by_number = {s.number: s.source_id for s in self.sources}
        return [by_number[n] for n in self.cited]

    def render(self) -> str:
        """The report as published: its text, the cited sources, the flagged claims."""
        used = [s for s in self.sources if s.number in self.cited]
        text = self.text.strip() + SOURCES_HEADING + "\n".join(s.line() for s in used)
        if self.flagged:
            text += FLAGGED_HEADING
            text += "\n".join(f"- {c.text[:200]} — {c.reason}" for c in self.flagged)
        return text


def split_rendered(text: str) -> tuple[str, dict[int, str]]:
    """A published report's own text (without the source list and flags `render` adds) and
    the source id of each citation number; a text `render` did not make comes back whole."""
    body, heading, rest = text.rpartition(SOURCES_HEADING)
    if not heading:
        return text, {}
    listing = rest.split(FLAGGED_HEADING, 1)[0]
    return body, {int(n): sid for n, sid in _SOURCE_LINE.findall(listing)}


def number_sources(evidence: list[Evidence], limit: int) -> tuple[list[Source], list[Evidence]]:
    """Sources numbered from 1 by their best evidence score; the evidence they carry."""
    ranked = sorted(evidence, key=lambda e: -e.score)
    order = list(dict.fromkeys(e.source_id for e in ranked))[:limit]
    first = {sid: next(e for e in ranked if e.source_id == sid) for sid in order}
    sources = [_source(i + 1, first[sid]) for i, sid in enumerate(order)]
    return sources, [e for e in ranked if e.source_id in first]


def _source(number: int, e: Evidence) -> Source:
    return Source(number, e.source_id, e.title, e.url, e.publisher, e.published, e.source_type)


def cited_numbers(text: str) -> list[int]:
    found = [int(n) for group in CITATION.findall(text) for n in group.split(",")]
    return sorted(set(found))


def report_problem(text: str, count: int) -> str | None:
    """Why a report cannot be accepted, or None."""
    return echo_problem(text) or citation_problem(text, count)


def echo_problem(text: str) -> str | None:
    """A report that repeats its prompt or itself is not a report."""
    if "<<<DATA" in text or "DATA>>>" in text or "Use ONLY the numbered sources" in text:
        return "the report repeats the instructions instead of answering"
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if len(lines) >= 4 and len(set(lines)) <= len(lines) // 2:
        return "the report repeats the same lines; write each finding once"
    return None


def citation_problem(text: str, count: int) -> str | None:
    """Why a report's citations do not stand, or None."""
    cited = cited_numbers(text)
    if not cited:
        return "the report cites no source; cite sources like [1]"
    unknown = [n for n in cited if not 1 <= n <= count]
    if unknown:
        return f"citations {unknown} do not exist; only [1]..[{count}] may be cited"
    bare = citing.uncited(text)
    if bare:
        return f"this sentence states figures without a citation: {bare[0][:120]!r}"
    return None


@dataclass(frozen=True)
class Framing:
    """How the report is composed: the applied mode's instructions, and the root facets the
    findings leave uncovered (reported as unknown)."""

    deep: bool = False
    unknowns: list[str] = field(default_factory=list)


async def write_report(gw: Gateway, asked: Asked, as_of: dt.date, summaries: list[Summary],
                       evidence: list[Evidence], limits: tuple[int, int],
                       similarity: Similarity, questions: Mapping[str, str],
                       read: Reader | None = None, framing: Framing | None = None,
                       said: Sequence[str] = (), budget: int | None = None,
                       published: frozenset[str] = frozenset()) -> Report:
    """The final report; `limits` = (characters of its evidence list, max tokens: the
    prompt is bounded however long the run, `report_evidence`); `questions`: each node's
    sub-question, and `read` the pages that complete cut snippets (for the extractive report
    the fallback builds); `framing`: the deep instructions and the unknowns; `said`: what
    the published parts said, `budget` the characters left to the extractive report and
    `published` the sub-questions whose parts are out."""
    framing = framing or Framing()
    sources, found, listing = _evidence_list(summaries, evidence, framing, limits[0])
    numbers = {s.source_id: s.number for s in sources}
    carried = [e for e in sorted(evidence, key=lambda e: -e.score) if e.source_id in numbers]
    messages = render("report", framing.deep, question=asked.text, as_of=as_of.isoformat(),
                      summaries=found, sources=listing)

    async def extractive() -> str:
        return await builder.report(similarity, asked, _sections(carried, questions),
                                    lambda e: f"[{numbers[e.source_id]}]"
                                    if e.source_id in numbers else None, read, said,
                                    budget, published)

    if not sources:
        return Report(text=await extractive(), sources=[], cited=[], fallback=True)
    fell_back = False

    def fallback() -> str:
        nonlocal fell_back
        fell_back = True
        return ""

    stated = {s.number: " ".join(e.text for e in carried if e.source_id == s.source_id)
              for s in sources}
    text = await gw.text("reporter", "report", messages, limits[1], fallback,
                         lambda t: report_problem(citing.mend(t, stated), len(sources)))
    text = await extractive() if fell_back else citing.mend(text, stated)
    cited = [n for n in cited_numbers(text) if 1 <= n <= len(sources)]
    return Report(text=text, sources=sources, cited=cited, fallback=fell_back)


def _evidence_list(summaries: list[Summary], evidence: list[Evidence], framing: Framing,
                   limit_chars: int) -> tuple[list[Source], str, str]:
    """The numbered sources, the findings block and the sources block of the report's
    prompt, together within `limit_chars` (`research_core.loop.report.report_evidence`)."""
    found = report_evidence.findings(summaries, framing.unknowns,
                                     int(limit_chars * report_evidence.FINDINGS_SHARE))
    listed = report_evidence.evidence_list(evidence, limit_chars - len(found))
    sources = [_source(i + 1, entry.best) for i, entry in enumerate(listed)]
    blocks = [report_evidence.block(i + 1, entry) for i, entry in enumerate(listed)]
    return sources, found, "\n".join(blocks) or "(no sources)"


def _sections(carried: list[Evidence], questions: Mapping[str, str]) -> list[builder.Section]:
    """The evidence by sub-question, in the plan's order."""
    by_node: dict[str, list[Evidence]] = {}
    for e in carried:
        by_node.setdefault(e.node_id, []).append(e)
    order = [n for n in questions if n in by_node] + [n for n in by_node if n not in questions]
    return [builder.Section(questions.get(n, "Findings"), by_node[n]) for n in order]

