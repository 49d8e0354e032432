"""Answer parts as Slack messages: the text in a `markdown` block where Slack's limits allow
(12,000 characters of markdown per message; beyond, mrkdwn sections of at most 3,000 cut at
paragraphs), then a context line with the sources as links and, on a revision, "revised:
<reason>"; under the report and follow-up answers, a row of feedback buttons. A report's own
numbered source list (`Report.render`) becomes that context line, numbered as the text cites
them, so that the sources are listed once, as links.

Everything the text holds comes from models and sources, so it is escaped for the block it goes
in (`contract.markdown` for markdown, `contract.mrkdwn` for mrkdwn) and posted with
`parse: none`; the only live links are the ones built here from URLs validated first. Every
message carries its publication key in its metadata (`workers.slack_outbox`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from contract import markdown
from contract.blocks import feedback_row
from contract.mrkdwn import NO_PARSE, clip, escape, link
from research_core.loop.report.reporter import FLAGGED_HEADING, split_rendered
from workers.slack_outbox import metadata

Block = dict[str, Any]
Describe = Callable[[str], "tuple[str, str] | None"]  # source id -> (url, title), if known

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


def sources_context(sources: list[str], revised: str | None = None,
                    describe: Describe | None = None,
                    numbered: dict[int, str] | None = None) -> Block:
    """The sources line; `numbered` (citation number -> source id): as the text cites them."""
    labels = [f"[{n}] {source_label(sid, describe)}" for n, sid in sorted(numbered.items())] \
        if numbered else [source_label(s, describe) for s in sources]
    line = "Sources: " + (" · ".join(labels) if labels else "none")
    elements = [{"type": "mrkdwn", "text": clip(line, SECTION_LIMIT)}]
    if revised is not None:
        elements.append({"type": "mrkdwn", "text": f"_revised: {escape(revised or 'updated')}_"})
    return {"type": "context", "elements": elements}


def part_blocks(text: str, sources: list[str], revised: str | None = None,
                room: int = 1, describe: Describe | None = None,
                numbered: dict[int, str] | None = None) -> list[Block]:
    """Sections of the part's text (within Slack's limits, escaped: the text comes from models
    and sources), then its context line(s); `room`: blocks left for what follows them."""
    chunks = split_text(escape(text))
    if len(chunks) > MAX_BLOCKS - room:
        chunks = chunks[:MAX_BLOCKS - room]
        chunks[-1] = clip(chunks[-1], SECTION_LIMIT - 1) + "…"
    blocks: list[Block] = [{"type": "section", "text": {"type": "mrkdwn", "text": c}}
                           for c in chunks]
    return [*blocks, sources_context(sources, revised, describe, numbered)]


def answer_blocks(text: str, sources: list[str], revised: str | None = None,
                  feedback: tuple[str, str] | None = None,
                  describe: Describe | None = None) -> list[Block]:
    """The part as a `markdown` block when it fits (else mrkdwn sections), its sources and,
    for an AI answer (`feedback` = run id, part key), the feedback buttons."""
    text, numbered = without_listing(text)
    escaped = markdown.escape(text.strip())
    if escaped and len(escaped) <= MARKDOWN_LIMIT:
        blocks = [{"type": "markdown", "text": escaped},
                  sources_context(sources, revised, describe, numbered)]
    else:
        blocks = part_blocks(text, sources, revised, room=2 if feedback else 1,
                             describe=describe, numbered=numbered)
    return [*blocks, feedback_row(*feedback)] if feedback else blocks


def without_listing(text: str) -> tuple[str, dict[int, str]]:
    """A report's text without its numbered source list (its flagged claims kept), and the
    source id of each number; any other text as it is."""
    body, numbered = split_rendered(text)
    if not numbered:
        return text, {}
    _, found, flagged = text.partition(FLAGGED_HEADING)
    return body + (found + flagged if found else ""), numbered


def rated(part_key: str) -> bool:
    """Whether a part is an AI answer that gets feedback buttons."""
    return part_key == "report" or part_key.startswith("followup-")


def fallback_text(text: str) -> str:
    """The message's `text` (notifications, clients without blocks), escaped like the blocks."""
    return clip(escape(text), TEXT_LIMIT)


def post_options(key: str = "") -> dict[str, Any]:
    """No parsing of names or links; the publication key in the message metadata."""
    return {**NO_PARSE, **({"metadata": metadata(key)} if key else {})}
