"""A finished research as one Markdown document (issue 46): the report, every answer part and
follow-up answer at its latest version, each with its numbered sources, and a link back to the
thread. The same document becomes a Slack canvas (`workers.canvas_export`), a Markdown file in
the thread (`workers.markdown_export`) and `redsearch research … --markdown FILE`.

Each section is the thread's message as the reader saw it: its citations numbered by first use
within it and its sources listed under those numbers (`contract.cited_text`, which the
thread's messages use too), a revision's note under it. Everything in it comes from models and
sources, so it is escaped for Markdown (`contract.markdown`); the only live links are the ones
built from URLs validated first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from contract import markdown
from contract.cited_text import Describe, describe_evidence, markdown_body, numbered_text, readable
from contract.mrkdwn import one_line
from research_core.delivery.publications import Publication
from research_core.loop.memory.state import RunState
from research_core.loop.report.reporter import Report
from research_core.wording import Words, for_question

CANVAS_CHARS = 1_000_000  # canvases.create takes at most 1 MiB of markdown
TITLE_CHARS = 120
REPORT = "report"
FOLLOWUP_PREFIX = "followup-"
_LINE_END = re.compile(r"(?<=\S)\n(?=\S)")  # a newline inside a paragraph


@dataclass(frozen=True)
class ResearchDocument:
    title: str  # one line of plain text: the question
    body: str  # what a canvas holds under its title
    filename: str  # research-<as of>-<run id>.md

    @property
    def markdown(self) -> str:
        """The document as a file: its title as the heading, then its body."""
        return f"# {markdown.escape(self.title)}\n\n{self.body}"


def research_document(state: RunState, thread_link: str = "",
                      report: Report | None = None) -> ResearchDocument | None:
    """The run's document in its question's language; None when it has no report yet (a
    run that publishes none, the naive baseline's, may pass its `report`)."""
    parts = latest_parts(state.publications)
    if report is not None and not any(p.part_key == REPORT for p in parts):
        parts.insert(0, Publication(state.run_id, REPORT, 1, "part", report.render(),
                                    report.cited_source_ids()))
    if not any(p.part_key == REPORT for p in parts):
        return None
    w = for_question(state.question)
    title = one_line(state.question)
    title = title if len(title) <= TITLE_CHARS else title[:TITLE_CHARS - 1] + "…"
    text = "\n\n".join([_about(state, thread_link, w),
                        *_body(parts, describe_evidence(state.evidence), w)]) + "\n"
    return ResearchDocument(title, markdown.clip(text, CANVAS_CHARS),
                            f"research-{state.as_of.isoformat()}-{state.run_id}.md")


def latest_parts(publications: list[Publication]) -> list[Publication]:
    """The latest version of every answer part (report and follow-up answers included), in
    the order they were first published."""
    latest: dict[str, Publication] = {}
    for p in publications:
        if p.kind == "part" and (p.part_key not in latest
                                 or p.version > latest[p.part_key].version):
            latest[p.part_key] = p
    return list(latest.values())


def _about(state: RunState, thread_link: str, w: Words) -> str:
    facts = [w("Researched as of {date}", date=state.as_of.isoformat()),
             w("run {run_id}", run_id=state.run_id)]
    line = "_" + markdown.escape(" · ".join(facts)) + "_"
    back = markdown.link(thread_link, w("Open the thread in Slack")) if thread_link else None
    return f"{line} · {back}" if back else line


def _body(parts: list[Publication], describe: Describe, w: Words) -> list[str]:
    report = [p for p in parts if p.part_key == REPORT]
    answers = [p for p in parts if p.part_key.startswith(FOLLOWUP_PREFIX)]
    found = [p for p in parts if p not in report and p not in answers]
    out = [f"## {w('Report')}", *(section(p, describe, w) for p in report)]
    for heading, group in ((w("Answer parts"), found), (w("Follow-up answers"), answers)):
        if group:
            out += ["---", f"## {heading}", "\n\n---\n\n".join(section(p, describe, w)
                                                            for p in group)]
    return out


def section(part: Publication, describe: Describe | None, w: Words) -> str:
    """One message of the thread: its text, its sources numbered as it cites them, and on a
    revision its note."""
    numbered = numbered_text(part.text, part.sources, describe)
    out = [hard_breaks(markdown_body(numbered, describe).strip())]
    if numbered.sources:
        out.append(f"**{markdown.escape(w('Sources:'))}**\n" + "\n".join(
            f"{n}. {source_line(s, describe)}" for n, s in enumerate(numbered.sources, 1)))
    if part.replaces:
        note = readable(part.reason or w("updated"), numbered, describe, w)
        out.append("_" + markdown.escape(w("revised: {note}", note=note)) + "_")
    return "\n\n".join(out)


def hard_breaks(text: str) -> str:
    """Each line of a paragraph on a line of its own, as the thread shows it (Markdown joins
    the lines of a paragraph otherwise): a hard break (two spaces) before each newline."""
    return _LINE_END.sub("  \n", text)


def source_line(source: str, describe: Describe | None) -> str:
    """A source as the list names it: a link to its page (its title the label), or its
    title and address, or its id, escaped."""
    known = describe(source) if describe else None
    if known is None:
        return markdown.link(source, source) or markdown.escape(source)
    url, label = known
    return markdown.link(url, label or source) or markdown.escape(f"{label or source} ({url})")
