"""The assistant loading status of a thread ("RED Searcher is checking: …"): one short line
that says what the job is doing now, read off its latest progress note, never a note's
internals (source ids, figures set against each other); cut at a word, within Slack's line.

Slack clears a loading status by itself about two minutes after it was set when no message
follows, so `LoadingStatus` sets it again every `refresh_s` while the job works, and clears
it when the job ends (`clear`), however it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from slack_sdk.web.async_client import AsyncWebClient

from contract.slack_client import SLACK_FAILURES, slack_error

log = logging.getLogger(__name__)

STATUS_CHARS = 100
_UNSUPPORTED = {"missing_scope", "unknown_method", "not_allowed_token_type",
                "method_deprecated", "not_in_channel"}
# a progress note's first words -> what the job is doing while it says that
_DOING = (("Conflict on", "weighing sources that disagree"),
          ("Still missing", "noting what is still missing"),
          ("Deep research requested", "deciding on deep research"),
          ("Deep research applied", "researching in depth"),
          ("Deep research refused", "researching at standard depth"),
          ("Spending cap", "writing the report from what was found"))


def status_line(note: str) -> str:
    """The loading status for a progress note: what the job is doing, in a few words."""
    text = " ".join(note.split())
    for start, doing in _DOING:
        if text.startswith(start):
            return doing
    return clip_words(text, STATUS_CHARS)


def clip_words(text: str, limit: int) -> str:
    """`text` within `limit` characters, cut after a whole word ("…" marks the cut)."""
    if len(text) <= limit:
        return text
    cut = text[:limit - 1].rsplit(" ", 1)[0].rstrip(" ,;:—-(")
    return (cut or text[:limit - 1]) + "…"


class LoadingStatus:
    """The loading status of one thread, kept set while a job works."""

    def __init__(self, client: AsyncWebClient, channel: str, thread_ts: str,
                 refresh_s: float = 60.0) -> None:
        self.client = client
        self.channel = channel
        self.thread_ts = thread_ts
        self.refresh_s = refresh_s
        self.shown = ""
        self._supported = True
        self._refresher: asyncio.Task[None] | None = None

    async def show(self, note: str) -> None:
        """Say what the job is doing (from a progress note), and keep it set."""
        await self._set(status_line(note) if note.strip() else "")
        if self.shown and (self._refresher is None or self._refresher.done()):
            self._refresher = asyncio.get_running_loop().create_task(self._refresh())

    async def clear(self) -> None:
        """The job ended: no more refreshes, and the status is taken away."""
        if self._refresher is not None:
            self._refresher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._refresher
            self._refresher = None
        await self._set("")

    async def _refresh(self) -> None:
        while self.shown and self._supported:
            await asyncio.sleep(self.refresh_s)
            if self.shown:
                await self._set(self.shown)

    async def _set(self, status: str) -> None:
        if not self._supported:
            return
        try:
            await self.client.assistant_threads_setStatus(
                channel_id=self.channel, thread_ts=self.thread_ts, status=status)
        except SLACK_FAILURES as exc:
            error = slack_error(exc)
            if error in _UNSUPPORTED:
                self._supported = False
            log.info("assistant status not set: %s", error)
            return
        self.shown = status
