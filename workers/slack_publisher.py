"""The engine's Publisher for one Slack thread, through slack_sdk's AsyncWebClient.

Answer parts are thread messages (`workers.answer_blocks`: a markdown block, the chart of a
dated series its evidence holds (`workers.slack_charts`), the sources, and feedback buttons
under AI answers); a revision edits the same message (`chat.update`) and says
"revised: <reason>". A part a model writes can be streamed into its message first
(`stream_part`, `workers.slack_streams`); the part then edits that message. Every message
carries its publication key in its metadata, so `posted(key)` can find it after a crash
(`workers.slack_outbox`).

Progress is one message edited in place, written at most once per `progress_interval` seconds
(the newest state is held and flushed): the run's goal tree as a Slack plan when one is shown
(`show_plan`, redrawn after `plan_changed`), else the latest progress notes. The notes are
mirrored to the assistant loading status where the workspace supports it
(`workers.loading_status`: a short line of what the job does, set again every
`status_refresh_s` while it works, cleared when the job closes the publisher). 429s are retried
after their `Retry-After`.
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

from contract.mrkdwn import clip, escape
from contract.slack_client import SLACK_FAILURES, make_client, slack_error
from research_core.plan import PlanView
from research_core.wording import ENGLISH_WORDS, Words
from workers.answer_blocks import (
    MAX_BLOCKS,
    SECTION_LIMIT,
    TEXT_LIMIT,
    Describe,
    answer_blocks,
    answer_message,
    fallback_text,
    part_blocks,
    post_options,
    rated,
    split_text,
)
from workers.loading_status import LoadingStatus
from workers.plan_blocks import plan_blocks, plan_text
from workers.slack_charts import PartCharts
from workers.slack_outbox import find_posted
from workers.slack_streams import SlackPartStream, Where

log = logging.getLogger(__name__)

Block = dict[str, Any]
OnStreamTs = Callable[[str, str], Awaitable[None]]

PROGRESS_LINES = 8
_TS = re.compile(r"^\d+\.\d+$")

__all__ = ["MAX_BLOCKS", "SECTION_LIMIT", "TEXT_LIMIT", "SlackPublisher", "answer_blocks",
           "fallback_text", "part_blocks", "post_options", "split_text"]


class SlackPublisher:
    """Publisher for one thread (channel, thread_ts). Call `close()` when the run is done.

    `recipient` (team, user): whom a streamed answer is for (Slack requires it outside DMs);
    `streamed`: publication key -> ts of messages streamed before (a resumed job), and
    `on_stream_ts` saves a new one the moment it exists."""

    def __init__(self, client: AsyncWebClient, channel: str, thread_ts: str,
                 progress_interval: float = 1.0, progress_lines: int = PROGRESS_LINES,
                 progress_ts: str | None = None,
                 on_progress_ts: Callable[[str], Awaitable[None]] | None = None,
                 progress_key: str = "", recipient: tuple[str | None, str | None] = (None, None),
                 streamed: dict[str, str] | None = None,
                 on_stream_ts: OnStreamTs | None = None,
                 status_refresh_s: float = 60.0) -> None:
        self.client = client
        self.channel = channel
        self.thread_ts = thread_ts
        self.progress_interval = progress_interval
        self.progress_lines = progress_lines
        self.progress_ts = progress_ts  # a resumed run keeps editing its progress message
        self.on_progress_ts = on_progress_ts  # saves the ts the moment the message exists
        self.progress_key = progress_key  # the progress message's key in its metadata
        self.recipient = recipient
        self.streamed = dict(streamed or {})
        self.on_stream_ts = on_stream_ts
        self.describe: Describe | None = None  # source id -> (url, title) for the links
        self.words: Words = ENGLISH_WORDS  # the thread's language (its question's)
        self.charts: PartCharts | None = None  # a part's chart, where its evidence has one
        self._streams: dict[str, SlackPartStream] = {}
        self._plan: Callable[[], PlanView] | None = None
        self._notes: list[str] = []
        self._dirty = False
        self._last_write = 0.0
        self._lock = asyncio.Lock()
        self._pending: asyncio.Task[None] | None = None
        self.status = LoadingStatus(client, channel, thread_ts, status_refresh_s)

    @classmethod
    def connect(cls, token: str, channel: str, thread_ts: str, base_url: str | None = None,
                **kwargs: Any) -> SlackPublisher:
        return cls(make_client(token, base_url), channel, thread_ts, **kwargs)

    # -- answer parts -------------------------------------------------------------------------

    async def answer_part(self, run_id: str, part_key: str, text: str, sources: list[str],
                          replaces: str | None = None, reason: str = "",
                          key: str = "") -> str | None:
        feedback = (run_id, part_key) if rated(part_key) else None
        text, blocks = answer_message(text, sources, reason if replaces else None, feedback,
                                      self.describe, self.words)
        image = await self.charts.block(part_key, sources) if self.charts else None
        into = replaces if replaces and _TS.match(replaces) else await self._streamed_ts(key)
        try:
            ts = await self._deliver(into, text, with_image(blocks, image), key)
        except SlackApiError as exc:  # Slack could not show the image: the part without it
            if image is None or slack_error(exc) != "invalid_blocks":
                raise
            log.warning("chart of %s not shown (%s); the part goes without it", part_key,
                        slack_error(exc))
            return await self._deliver(into, text, blocks, key)
        if image is not None and self.charts is not None:
            await self.charts.shown(part_key)
        return ts

    async def _deliver(self, into: str | None, text: str, blocks: list[Block],
                       key: str) -> str:
        """The part's message: `into` edited (a revision, a streamed part), else posted;
        `text`: its notification text, escaped (`answer_message`)."""
        if into is not None:
            edited = await self._edit_part(into, text, blocks, key)
            if edited is not None:
                return edited
        resp = await self.client.chat_postMessage(
            channel=self.channel, thread_ts=self.thread_ts, text=text,
            blocks=blocks, **post_options(key))
        return str(resp["ts"])

    def stream_part(self, run_id: str, part_key: str, key: str) -> SlackPartStream:
        """A stream that shows the part in its own message while a model writes it."""
        where = Where(self.client, self.channel, self.thread_ts, *self.recipient,
                      interval_s=self.progress_interval, words=self.words)
        stream = SlackPartStream(where, key, self.streamed.get(key), self._remember_stream)
        self._streams[key] = stream
        return stream

    async def posted(self, key: str) -> str | None:
        """The ts of the thread message that carries `key`, if one reached Slack."""
        return await find_posted(self.client, self.channel, self.thread_ts, key)

    async def _remember_stream(self, key: str, ts: str) -> None:
        self.streamed[key] = ts
        if self.on_stream_ts is not None:
            await self.on_stream_ts(key, ts)

    async def _streamed_ts(self, key: str) -> str | None:
        """The message a part was streamed into (the stream stopped first, if it still runs)."""
        stream = self._streams.pop(key, None)
        if stream is not None:
            await stream.end()
        return self.streamed.get(key) if key else None

    async def _edit_part(self, ts: str, text: str, blocks: list[Block],
                         key: str) -> str | None:
        """Edit the part's message; None when it is gone. A message still streaming (its
        stream left open by a worker that died) is stopped first."""
        for attempt in (1, 2):
            try:
                await self.client.chat_update(channel=self.channel, ts=ts,
                                              text=text, blocks=blocks,
                                              **post_options(key))
                return ts
            except SlackApiError as exc:
                error = slack_error(exc)
                if error == "streaming_state_conflict" and attempt == 1:
                    await self.client.chat_stopStream(channel=self.channel, ts=ts)
                    continue
                if error != "message_not_found":
                    raise
                break
        log.warning("part message %s is gone; posting it anew", ts)
        return None

    # -- progress -----------------------------------------------------------------------------

    def show_plan(self, read: Callable[[], PlanView]) -> None:
        """Show the run's plan (read with `read` when it is drawn) as the progress message."""
        self._plan = read
        self.plan_changed()

    def plan_changed(self) -> None:
        """The plan may read differently: it is redrawn within the write interval."""
        self._dirty = True
        if self._pending is None or self._pending.done():
            wait = max(self._last_write + self.progress_interval - time.monotonic(), 0.0)
            self._pending = asyncio.get_running_loop().create_task(self._flush_later(wait))

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
        """Write the newest progress (the plan, or the notes) now, if not yet written."""
        async with self._lock:
            if not self._dirty:
                return
            self._dirty = False
            self._last_write = time.monotonic()
            if self._plan is not None:
                view = self._plan()
                await self._write_progress(plan_text(view, self._notes), plan_blocks(view))
            else:
                body = clip("\n".join(f"• {escape(n)}" for n in self._notes), SECTION_LIMIT)
                await self._write_progress(body, [
                    {"type": "context", "elements": [{"type": "mrkdwn", "text": body}]}])
            await self.status.show(self._notes[-1] if self._notes else "", self.words)

    async def working(self, note: str) -> None:
        """Say in the loading status what the job is doing, with no progress note (a
        follow-up being answered): a sign of life before the first slow call."""
        await self.status.show(note, self.words)

    async def close(self) -> None:
        """End any stream still open, wait for the held progress write, flush what is left,
        then clear the loading status: the job is over, whether it finished, stopped or
        failed (best effort)."""
        for stream in list(self._streams.values()):
            await stream.end()
        if self._pending is not None:
            await asyncio.gather(self._pending, return_exceptions=True)
            self._pending = None
        await self._safe_flush()
        await self.status.clear()

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
        except SLACK_FAILURES as exc:
            log.warning("progress not written: %s", slack_error(exc))

    async def _write_progress(self, text: str, blocks: list[Block]) -> None:
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


def with_image(blocks: list[Block], image: Block | None) -> list[Block]:
    """The part's blocks with its chart after its text (before its sources line)."""
    if image is None or len(blocks) >= MAX_BLOCKS:
        return blocks
    at = next((i for i, b in enumerate(blocks) if b.get("type") == "context"), len(blocks))
    return [*blocks[:at], image, *blocks[at:]]
