"""The engine's Publisher for one Slack thread, through slack_sdk's AsyncWebClient.

Answer parts are thread messages in Block Kit (sections of mrkdwn, then a context line with the
sources); a revision edits the same message (`chat.update`) and says "revised: <reason>".
Everything the text holds comes from models and sources, so it is escaped (`contract.mrkdwn`) and
posted with `parse: none`; every message carries its publication key in its metadata, so
`posted(key)` can find it after a crash (`workers.slack_outbox`).
Progress notes are coalesced into one message edited in place, written at most once per
`progress_interval` seconds (the newest text is held and flushed), and mirrored to the assistant
loading status where the workspace supports it (cleared when the job closes the publisher). 429s
are retried after their `Retry-After`.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from contract.mrkdwn import NO_PARSE, clip, escape, link
from contract.slack_client import make_client
from workers.slack_outbox import find_posted, metadata

log = logging.getLogger(__name__)

Block = dict[str, Any]

SECTION_LIMIT = 3_000
MAX_BLOCKS = 50
TEXT_LIMIT = 40_000
STATUS_LIMIT = 150
PROGRESS_LINES = 8
_STATUS_UNSUPPORTED = {"missing_scope", "unknown_method", "not_allowed_token_type",
                       "method_deprecated", "not_in_channel"}
_TS = re.compile(r"^\d+\.\d+$")


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


def source_label(source: str) -> str:
    """A source as the context line shows it: a link the bot built when it is a URL it
    validated, else escaped text."""
    return link(source) or escape(source)


def part_blocks(text: str, sources: list[str], revised: str | None = None) -> list[Block]:
    """Sections of the part's text (within Slack's limits, escaped: the text comes from models
    and sources), then its context line(s)."""
    chunks = split_text(escape(text))
    if len(chunks) > MAX_BLOCKS - 1:
        chunks = chunks[:MAX_BLOCKS - 1]
        chunks[-1] = chunks[-1][:SECTION_LIMIT - 1] + "…"
    blocks: list[Block] = [{"type": "section", "text": {"type": "mrkdwn", "text": c}}
                           for c in chunks]
    line = "Sources: " + (" · ".join(map(source_label, sources)) if sources else "none")
    elements = [{"type": "mrkdwn", "text": line[:SECTION_LIMIT]}]
    if revised is not None:
        elements.append({"type": "mrkdwn", "text": f"_revised: {escape(revised or 'updated')}_"})
    blocks.append({"type": "context", "elements": elements})
    return blocks


def fallback_text(text: str) -> str:
    """The message's `text` (notifications, clients without blocks), escaped like the blocks."""
    return clip(escape(text), TEXT_LIMIT)


def post_options(key: str = "") -> dict[str, Any]:
    """No parsing of names or links; the publication key in the message metadata."""
    return {**NO_PARSE, **({"metadata": metadata(key)} if key else {})}


class SlackPublisher:
    """Publisher for one thread (channel, thread_ts). Call `close()` when the run is done."""

    def __init__(self, client: AsyncWebClient, channel: str, thread_ts: str,
                 progress_interval: float = 1.0, progress_lines: int = PROGRESS_LINES,
                 progress_ts: str | None = None,
                 on_progress_ts: Callable[[str], Awaitable[None]] | None = None,
                 progress_key: str = "") -> None:
        self.client = client
        self.channel = channel
        self.thread_ts = thread_ts
        self.progress_interval = progress_interval
        self.progress_lines = progress_lines
        self.progress_ts = progress_ts  # a resumed run keeps editing its progress message
        self.on_progress_ts = on_progress_ts  # saves the ts the moment the message exists
        self.progress_key = progress_key  # the progress message's key in its metadata
        self._notes: list[str] = []
        self._dirty = False
        self._last_write = 0.0
        self._lock = asyncio.Lock()
        self._pending: asyncio.Task[None] | None = None
        self._status_ok = True

    @classmethod
    def connect(cls, token: str, channel: str, thread_ts: str, base_url: str | None = None,
                **kwargs: Any) -> SlackPublisher:
        return cls(make_client(token, base_url), channel, thread_ts, **kwargs)

    # -- answer parts -------------------------------------------------------------------------

    async def answer_part(self, run_id: str, part_key: str, text: str, sources: list[str],
                          replaces: str | None = None, reason: str = "",
                          key: str = "") -> str | None:
        if replaces and _TS.match(replaces):
            revised = await self._revise(replaces, text, sources, reason, key)
            if revised is not None:
                return revised
        blocks = part_blocks(text, sources, reason if replaces else None)
        resp = await self.client.chat_postMessage(
            channel=self.channel, thread_ts=self.thread_ts, text=fallback_text(text),
            blocks=blocks, **post_options(key))
        return str(resp["ts"])

    async def posted(self, key: str) -> str | None:
        """The ts of the thread message that carries `key`, if one reached Slack."""
        return await find_posted(self.client, self.channel, self.thread_ts, key)

    async def _revise(self, ts: str, text: str, sources: list[str], reason: str,
                      key: str) -> str | None:
        try:
            await self.client.chat_update(channel=self.channel, ts=ts, text=fallback_text(text),
                                          blocks=part_blocks(text, sources, reason),
                                          **post_options(key))
        except SlackApiError as exc:
            if exc.response.get("error") != "message_not_found":
                raise
            log.warning("revision of %s: message gone, posting it anew", ts)
            return None
        return ts

    # -- progress -----------------------------------------------------------------------------

    async def progress(self, run_id: str, text: str) -> None:
        self._notes = [*self._notes, text.strip()][-self.progress_lines:]
        self._dirty = True
        if self._pending is not None and not self._pending.done():
            return  # the held write will carry the newest text
        wait = self._last_write + self.progress_interval - time.monotonic()
        if wait <= 0:
            await self._safe_flush()
        else:
            self._pending = asyncio.create_task(self._flush_later(wait))

    async def flush(self) -> None:
        """Write the newest progress text now, if there is one not yet written."""
        async with self._lock:
            if not self._dirty:
                return
            self._dirty = False
            self._last_write = time.monotonic()
            await self._write_progress("\n".join(f"• {escape(n)}" for n in self._notes))
            await self._set_status(self._notes[-1] if self._notes else "")

    async def close(self) -> None:
        """Wait for the held progress write, flush what is left, then clear the loading
        status: the job is over, whether it finished, stopped or failed (best effort)."""
        if self._pending is not None:
            await asyncio.gather(self._pending, return_exceptions=True)
            self._pending = None
        await self._safe_flush()
        await self._set_status("")

    async def _flush_later(self, delay: float) -> None:
        while True:
            await asyncio.sleep(delay)
            await self._safe_flush()
            if not self._dirty:
                return
            delay = max(self._last_write + self.progress_interval - time.monotonic(), 0.0)

    async def _safe_flush(self) -> None:
        """Progress is best effort: a failed write is logged, never raised into the run."""
        try:
            await self.flush()
        except SlackApiError as exc:
            log.warning("progress note not written: %s", exc.response.get("error"))

    async def _write_progress(self, body: str) -> None:
        text = clip(body, SECTION_LIMIT)
        blocks = [{"type": "context", "elements": [{"type": "mrkdwn", "text": text}]}]
        options = post_options(self.progress_key)
        if self.progress_ts is None and self.progress_key:
            self.progress_ts = await self.posted(self.progress_key)  # posted before a crash
        if self.progress_ts is None:
            resp = await self.client.chat_postMessage(
                channel=self.channel, thread_ts=self.thread_ts, text=text, blocks=blocks,
                **options)
            self.progress_ts = str(resp["ts"])
            if self.on_progress_ts is not None:
                await self.on_progress_ts(self.progress_ts)
        else:
            await self.client.chat_update(channel=self.channel, ts=self.progress_ts,
                                          text=text, blocks=blocks, **options)

    async def _set_status(self, note: str) -> None:
        if not self._status_ok:
            return
        try:
            await self.client.assistant_threads_setStatus(
                channel_id=self.channel, thread_ts=self.thread_ts, status=note[:STATUS_LIMIT])
        except SlackApiError as exc:
            error = exc.response.get("error")
            if error in _STATUS_UNSUPPORTED:
                self._status_ok = False
            log.info("assistant status not set: %s", error)
