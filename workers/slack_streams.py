"""An answer part streamed into its Slack message while a model writes it.

The text goes out through Slack's text streaming (`chat_stream`: chat.startStream, then
chat.appendStream as it grows, chat.stopStream when the model stops), escaped for Markdown piece
by piece. Where streaming is not available (an older workspace, a token or app without it, no
recipient to name) the part is posted once and edited as it grows instead, at most once per
`interval_s`; that fallback is chosen automatically and logged once per workspace. A stream
that expires (appends paused too long) carries on as edits of the same message. Text that is
discarded (a rejected attempt) is replaced by a placeholder, and any later attempt edits the
same message: an answer part has one message, whatever happens. Its ts is handed to `on_ts`
the moment it exists, so that the part (or a resumed job) edits that message later.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from slack_sdk.web.async_chat_stream import AsyncChatStream
from slack_sdk.web.async_client import AsyncWebClient

from contract import markdown
from contract.mrkdwn import NO_PARSE
from contract.slack_client import SLACK_FAILURES, slack_error
from research_core.wording import ENGLISH_WORDS, N_, Words
from workers.answer_blocks import MARKDOWN_LIMIT, fallback_text

log = logging.getLogger(__name__)

Block = dict[str, Any]

BUFFER_CHARS = 120  # text held before an append (fewer calls; appends are Tier 4)
UNSUPPORTED = frozenset({"unknown_method", "not_allowed", "not_allowed_token_type",
                         "missing_scope", "method_deprecated", "feature_not_enabled",
                         "missing_recipient_team_id", "missing_recipient_user_id",
                         "team_not_allowed", "invalid_auth"})
WRITING = N_("_writing…_")
REVISING = N_("_checking this answer again…_")
_NO_STREAMING: dict[str, str] = {}  # workspace (API URL) -> why streaming is not used there
_FAILURES = SLACK_FAILURES


@dataclass(frozen=True)
class Where:
    """Where a part is streamed: the thread, and whom the stream is for."""

    client: AsyncWebClient
    channel: str
    thread_ts: str
    team: str | None
    user: str | None
    interval_s: float = 1.0
    words: Words = ENGLISH_WORDS  # the thread's language


class SlackPartStream:
    def __init__(self, where: Where, key: str, ts: str | None,
                 on_ts: Callable[[str, str], Awaitable[None]] | None = None) -> None:
        self.where = where
        self.key = key
        self.ts = ts  # the part's message, once there is one (a resumed job knows it)
        self.on_ts = on_ts
        self._stream: AsyncChatStream | None = None
        self._text = ""
        self._shown = 0.0  # when an edit last showed the text (edit mode)
        self._held = False  # text not shown yet (edit mode)

    @property
    def streaming(self) -> bool:
        return self._stream is not None

    async def write(self, text: str) -> None:
        self._text += text
        if self._stream is None and self.ts is None and _streams(self.where):
            await self._start()
        if self._stream is not None:
            await self._append(text)
        else:
            await self._edit(final=False)

    async def end(self) -> None:
        """The model stopped: the stream is stopped (or the text shown in full)."""
        if self._stream is not None:
            await self._stop()
        elif self._held:
            await self._edit(final=True)

    async def discard(self) -> None:
        """The text written is not the answer: a placeholder until the answer comes."""
        await self.end()
        self._text = ""
        if self.ts is not None:
            said = self.where.words(REVISING)
            await self._show(said, [_context(said)])

    async def _start(self) -> None:
        w = self.where
        try:
            self._stream = await w.client.chat_stream(
                channel=w.channel, thread_ts=w.thread_ts, recipient_team_id=w.team,
                recipient_user_id=w.user, buffer_size=BUFFER_CHARS)
        except _FAILURES as exc:
            self._unavailable(exc)

    async def _append(self, text: str) -> None:
        assert self._stream is not None
        try:
            await self._stream.append(markdown_text=markdown.escape(text))
        except _FAILURES as exc:
            self._stream_failed(exc)
            await self._edit(final=False)
            return
        await self._note_ts()

    async def _stop(self) -> None:
        assert self._stream is not None
        try:
            await self._stream.stop()
        except _FAILURES as exc:
            self._stream_failed(exc)
            await self._edit(final=True)
            return
        await self._note_ts()
        self._stream = None

    async def _note_ts(self) -> None:
        if self.ts is None and self._stream is not None and self._stream.ts:
            self.ts = str(self._stream.ts)
            if self.on_ts is not None:
                await self.on_ts(self.key, self.ts)

    def _stream_failed(self, exc: Exception) -> None:
        """A stream that failed after it began (it expired, say): its message is edited from
        now on; one that never began means streaming is not available here."""
        stream, self._stream = self._stream, None
        if stream is None or not stream.ts:
            self._unavailable(exc)
            return
        self.ts = self.ts or str(stream.ts)
        log.info("stream %s ended early (%s); its message is edited instead", self.key,
                 _error(exc))

    def _unavailable(self, exc: Exception) -> None:
        self._stream = None
        why = _error(exc)
        if why in UNSUPPORTED:
            base = self.where.client.base_url
            if base not in _NO_STREAMING:
                log.warning("text streaming is not available at %s (%s): answers are posted "
                            "and edited as they are written instead", base, why)
            _NO_STREAMING[base] = why
        else:
            log.info("stream %s not started (%s); posting and editing instead", self.key, why)

    async def _edit(self, final: bool) -> None:
        """Edit mode: show the text so far, at most once per interval (always when final)."""
        self._held = True
        if not final and time.monotonic() - self._shown < self.where.interval_s:
            return
        escaped = markdown.clip(markdown.escape(self._text.strip()), MARKDOWN_LIMIT)
        blocks = [{"type": "markdown", "text": escaped}] if escaped else []
        if not final:
            blocks.append(_context(self.where.words(WRITING)))
        if blocks:
            await self._show(self._text, blocks)

    async def _show(self, text: str, blocks: list[Block]) -> None:
        w = self.where
        self._shown, self._held = time.monotonic(), False
        try:
            if self.ts is None:
                resp = await w.client.chat_postMessage(
                    channel=w.channel, thread_ts=w.thread_ts, text=fallback_text(text),
                    blocks=blocks, **NO_PARSE)
                self.ts = str(resp["ts"])
                if self.on_ts is not None:
                    await self.on_ts(self.key, self.ts)
            else:
                await w.client.chat_update(channel=w.channel, ts=self.ts,
                                           text=fallback_text(text), blocks=blocks, **NO_PARSE)
        except _FAILURES as exc:  # best effort: the part itself is published afterwards
            log.warning("streamed text of %s not shown: %s", self.key, _error(exc))


def _streams(where: Where) -> bool:
    """Whether to try streaming: the workspace has not refused it, and the stream can name
    its recipient (Slack requires one outside a DM)."""
    return where.client.base_url not in _NO_STREAMING and bool(where.team and where.user)


def _context(text: str) -> Block:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text}]}


def _error(exc: Exception) -> str:
    return slack_error(exc)
