"""The assistant loading status of a thread ("RED Searcher is checking: …"): one short line
that says what the job is doing now, read off its latest progress note, never a note's
internals (source ids, figures set against each other); cut at a word, within Slack's line;
in the thread's language (a note begins with its kind's words as the catalogue translates
them, `research_core.loop.publishing.progress_notes`).

Slack clears a loading status by itself about two minutes after it was set when no message
follows, so `LoadingStatus` sets it again every `refresh_s` while the job works, and clears
it when the job ends (`clear`), however it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re

from slack_sdk.web.async_client import AsyncWebClient

from contract.slack_client import SLACK_FAILURES, slack_error
from research_core.wording import ENGLISH_WORDS, N_, Words

log = logging.getLogger(__name__)

STATUS_CHARS = 100
_CJK = re.compile(r"[\u3000-\u9fff\uff00-\uffef]")
_UNSUPPORTED = {"missing_scope", "unknown_method", "not_allowed_token_type",
                "method_deprecated", "not_in_channel"}
# a progress note's first words -> what the job is doing while it says that
DOING = ((N_("Conflict on"), N_("weighing sources that disagree")),
         (N_("Still missing"), N_("noting what is still missing")),
         (N_("Deep research requested"), N_("deciding on deep research")),
         (N_("Deep research applied"), N_("researching in depth")),
         (N_("Deep research refused"), N_("researching at standard depth")),
         (N_("Spending cap"), N_("writing the report from what was found")))


def status_line(note: str, w: Words = ENGLISH_WORDS) -> str:
    """The loading status for a progress note: what the job is doing, in a few words, in the
    language of `w` (the note's kind is read in English or in that language)."""
    text = " ".join(note.split())
    for start, doing in DOING:
        if text.startswith((start, w(start))):
            return w(doing)
    return clip_words(text, STATUS_CHARS)


def clip_words(text: str, limit: int) -> str:
    """`text` within `limit` characters, cut after a whole word, or between two Chinese
    characters ("…" marks the cut)."""
    if len(text) <= limit:
        return text
    room = text[:limit - 1]
    ends = [k for k in range(1, len(room) + 1) if text[k].isspace()
            or _CJK.match(text[k - 1]) or _CJK.match(text[k])]
    cut = room[:ends[-1]].rstrip(" ,;:—-(，；：（、") if ends else ""
    return (cut or room) + "…"


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

    async def show(self, note: str, w: Words = ENGLISH_WORDS) -> None:
        """Say what the job is doing (from a progress note, in the thread's language `w`), and
        keep it set."""
        await self._set(status_line(note, w) if note.strip() else "")
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
