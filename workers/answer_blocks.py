"""Answer parts as Slack messages: the text in a `markdown` block where Slack's limits allow
(12,000 characters of markdown per message; beyond, mrkdwn sections of at most 3,000 cut at
paragraphs), then a context line with the sources as links and, on a revision, "revised:
<reason>"; under the report and follow-up answers, a row of feedback buttons.

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
    `describe`, names) a URL it validated, else escaped text."""
    known = describe(source) if describe else None
    if known is not None:
        return link(known[0], known[1] or source) or escape(source)
    return link(source) or escape(source)


def sources_context(sources: list[str], revised: str | None = None,
                    describe: Describe | None = None) -> Block:
    labels = [source_label(s, describe) for s in sources]
    line = "Sources: " + (" · ".join(labels) if labels else "none")
    elements = [{"type": "mrkdwn", "text": clip(line, SECTION_LIMIT)}]
    if revised is not None:
        elements.append({"type": "mrkdwn", "text": f"_revised: {escape(revised or 'updated')}_"})
    return {"type": "context", "elements": elements}


def part_blocks(text: str, sources: list[str], revised: str | None = None,
                room: int = 1, describe: Describe | None = None) -> list[Block]:
    """Sections of the part's text (within Slack's limits, escaped: the text comes from models
    and sources), then its context line(s); `room`: blocks left for what follows them."""
    chunks = split_text(escape(text))
    if len(chunks) > MAX_BLOCKS - room:
        chunks = chunks[:MAX_BLOCKS - room]
        chunks[-1] = clip(chunks[-1], SECTION_LIMIT - 1) + "…"
    blocks: list[Block] = [{"type": "section", "text": {"type": "mrkdwn", "text": c}}
                           for c in chunks]
    return [*blocks, sources_context(sources, revised, describe)]


def answer_blocks(text: str, sources: list[str], revised: str | None = None,
                  feedback: tuple[str, str] | None = None,
                  describe: Describe | None = None) -> list[Block]:
    """The part as a `markdown` block when it fits (else mrkdwn sections), its sources and,
    for an AI answer (`feedback` = run id, part key), the feedback buttons."""
    escaped = markdown.escape(text.strip())
    if escaped and len(escaped) <= MARKDOWN_LIMIT:
        blocks = [{"type": "markdown", "text": escaped},
                  sources_context(sources, revised, describe)]
    else:
        blocks = part_blocks(text, sources, revised, room=2 if feedback else 1,
                             describe=describe)
    return [*blocks, feedback_row(*feedback)] if feedback else blocks


def rated(part_key: str) -> bool:
    """Whether a part is an AI answer that gets feedback buttons."""
    return part_key == "report" or part_key.startswith("followup-")


def fallback_text(text: str) -> str:
    """The message's `text` (notifications, clients without blocks), escaped like the blocks."""
    return clip(escape(text), TEXT_LIMIT)


def post_options(key: str = "") -> dict[str, Any]:
    """No parsing of names or links; the publication key in the message metadata."""
    return {**NO_PARSE, **({"metadata": metadata(key)} if key else {})}
