"""Answer parts as Slack messages: the text in a `markdown` block where Slack's limits allow
(12,000 characters of markdown per message; beyond, mrkdwn sections of at most 3,000 cut at
paragraphs), then a context line with the sources as links and, on a revision, "revised:
<reason>"; under the report and follow-up answers, a row of feedback buttons. Every citation, by
source id (a part) or by the number of a report's own list (`Report.render`), is renumbered in
the order of first use (`research_core.delivery.numbering`) and links to its source; the
context line lists exactly the cited sources under those numbers, and a revision's note names
its sources the same way (issue 44).

Everything the text holds comes from models and sources, so it is escaped for the block it goes
in (`contract.markdown` for markdown, `contract.mrkdwn` for mrkdwn) and posted with
`parse: none`; the only live links are the ones built here from URLs validated first. Every
message carries its publication key in its metadata (`workers.slack_outbox`).
"""

from __future__ import annotations

from typing import Any

from contract.blocks import feedback_row
from contract.cited_text import Describe as Describe  # the publisher's describer's type
from contract.cited_text import cite_url, markdown_body, numbered_text, readable
from contract.keeping import keep_row
from contract.mrkdwn import NO_PARSE, clip, escape, link
from research_core.delivery import numbering
from research_core.delivery.numbering import Numbered
from research_core.wording import ENGLISH_WORDS, Words
from workers.slack_outbox import metadata

Block = dict[str, Any]

SECTION_LIMIT = 3_000
MARKDOWN_LIMIT = 12_000
MAX_BLOCKS = 50
TEXT_LIMIT = 40_000


def split_text(text: str, limit: int = SECTION_LIMIT) -> list[str]:
    """Chunks of at most `limit` chars, cut at a paragraph, line or space where possible."""
    chunks: list[str] = []
    rest = text.strip()
    while len(rest) > limit:
        window = rest[:limit]
        cut = max(window.rfind("\n\n"), window.rfind("\n"), window.rfind(" "))
        cut = cut if cut > limit // 2 else len(clip(rest, limit))
        chunks.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    if rest or not chunks:
        chunks.append(rest or " ")
    return chunks


def source_label(source: str, describe: Describe | None = None) -> str:
    """A source as the context line shows it: a link the bot built when it is (or, through
    `describe`, names) a URL it validated, else escaped text; a described source whose
    address is no web link (an MCP server's `wiki://…` resource) shows its name and address."""
    known = describe(source) if describe else None
    if known is not None:
        url, label = known
        return link(url, label or source) or escape(f"{label or source} ({url})")
    return link(source) or escape(source)


def mrkdwn_body(numbered: Numbered, describe: Describe | None = None) -> str:
    """The text for mrkdwn sections: escaped, each citation a link `<url|[n]>`."""
    return "".join(escape(p) if isinstance(p, str) else
                   link(cite_url(p.source_id, describe), f"[{p.number}]") or f"[{p.number}]"
                   for p in numbered.pieces)


def sources_context(numbered: Numbered, revised: str | None = None,
                    describe: Describe | None = None,
                    w: Words = ENGLISH_WORDS) -> Block | None:
    """The sources line: exactly the cited sources, numbered as the text cites them, and on a
    revision its note (source ids in it named as the reader sees them); None: neither."""
    labels = [f"[{n}] {source_label(s, describe)}" for n, s in
              enumerate(numbered.sources, start=1)]
    elements = [{"type": "mrkdwn", "text": clip(w("Sources:") + " " + " · ".join(labels),
                                                 SECTION_LIMIT)}] if labels else []
    if revised is not None:
        note = readable(revised or w("updated"), numbered, describe, w)
        elements.append({"type": "mrkdwn", "text": "_" + w("revised: {note}",
                                                          note=escape(note)) + "_"})
    return {"type": "context", "elements": elements} if elements else None


def part_blocks(text: str, sources: list[str], revised: str | None = None,
                room: int = 1, describe: Describe | None = None,
                w: Words = ENGLISH_WORDS) -> list[Block]:
    """Sections of the part's text (within Slack's limits, escaped: the text comes from models
    and sources), then its context line(s); `room`: blocks left for what follows them."""
    return _sections(numbered_text(text, sources, describe), revised, room, describe, w)


def _sections(numbered: Numbered, revised: str | None, room: int,
              describe: Describe | None, w: Words) -> list[Block]:
    chunks = split_text(mrkdwn_body(numbered, describe))
    if len(chunks) > MAX_BLOCKS - room:
        chunks = chunks[:MAX_BLOCKS - room]
        chunks[-1] = clip(chunks[-1], SECTION_LIMIT - 1) + "…"
    blocks: list[Block] = [{"type": "section", "text": {"type": "mrkdwn", "text": c}}
                           for c in chunks]
    context = sources_context(numbered, revised, describe, w)
    return [*blocks, context] if context else blocks


def answer_message(text: str, sources: list[str], revised: str | None = None,
                   feedback: tuple[str, str] | None = None, describe: Describe | None = None,
                   w: Words = ENGLISH_WORDS) -> tuple[str, list[Block]]:
    """The part's message: its `text` (notifications, clients without blocks: numbered,
    escaped) and its blocks, a `markdown` block when it fits (else mrkdwn sections), its
    sources and, for an AI answer (`feedback` = run id, part key), the feedback buttons, and
    above them under the report "Save as canvas" and "Export as Markdown"
    (`contract.keeping`). The citations are numbered once for both."""
    numbered = numbered_text(text, sources, describe)
    body = markdown_body(numbered, describe).strip()
    rows = [keep_row(feedback[0], w)] if feedback and feedback[1] == "report" else []
    rows += [feedback_row(*feedback, w)] if feedback else []
    if body and len(body) <= MARKDOWN_LIMIT:
        context = sources_context(numbered, revised, describe, w)
        blocks = [{"type": "markdown", "text": body}, *([context] if context else [])]
    else:
        blocks = _sections(numbered, revised, 1 + len(rows), describe, w)
    blocks = [*blocks, *rows]
    return fallback_text(numbering.plain(numbered)), blocks


def answer_blocks(text: str, sources: list[str], revised: str | None = None,
                  feedback: tuple[str, str] | None = None,
                  describe: Describe | None = None, w: Words = ENGLISH_WORDS) -> list[Block]:
    """The blocks of `answer_message`."""
    return answer_message(text, sources, revised, feedback, describe, w)[1]


def rated(part_key: str) -> bool:
    """Whether a part is an AI answer that gets feedback buttons."""
    return part_key == "report" or part_key.startswith("followup-")


def fallback_text(text: str) -> str:
    """The message's `text` (notifications, clients without blocks), escaped like the blocks."""
    return clip(escape(text), TEXT_LIMIT)


def post_options(key: str = "") -> dict[str, Any]:
    """No parsing of names or links; the publication key in the message metadata."""
    return {**NO_PARSE, **({"metadata": metadata(key)} if key else {})}
