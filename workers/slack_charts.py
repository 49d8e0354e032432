"""Charts in answer parts: the series a part's evidence holds
(`research_core.loop.publishing.series`, read through `ChartFor`), drawn (`workers.chart_image`),
uploaded with slack_sdk's `files_upload_v2` (files.getUploadURLExternal, the upload,
files.completeUploadExternal; kept private to the app, not shared as a message of its own) and
shown in the part's own message by
an `image` block (`slack_file`), whose alt text states the series and its sources (a
preliminary or revised point said so) and whose title is what the series measures and its
unit (`Series.title`), not the question; all in the thread's language. A series of fewer than
three points is no chart.

One chart per part, and one part per series (a series another part of the run shows already
is not shown again): a revision whose series is the same keeps the file; one whose series
changed uploads the new chart, and once the message shows it the old file is deleted (the part
never shows two images). The file of each part is kept per run (`known`, saved through
`on_file`), so a later job of the run (a follow-up, a resumed job) replaces it too. A workspace
that refuses uploads (an app installed without files:write) gets its parts without charts,
said once in the log.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from slack_sdk.errors import SlackRequestError
from slack_sdk.web.async_client import AsyncWebClient

from contract.slack_client import SLACK_FAILURES, slack_error
from research_core.loop.publishing.series import MIN_POINTS, Series
from research_core.wording import ENGLISH_WORDS, Words
from workers.chart_image import draw

log = logging.getLogger(__name__)

Block = dict[str, Any]
# part key, its sources -> the series to chart (None: no chart), with source id -> title
ChartFor = Callable[[str, list[str]], "tuple[Series, dict[str, str]] | None"]
OnFile = Callable[[str, str], Awaitable[None]]  # part key, "<digest> <file id>"
ALT_CHARS = 1_000  # files.getUploadURLExternal's alt_txt
TITLE_CHARS = 200
_NO_UPLOADS = {"missing_scope", "not_allowed_token_type", "unknown_method", "not_allowed",
               "method_deprecated", "invalid_auth"}
_FAILURES = (*SLACK_FAILURES, SlackRequestError)


class PartCharts:
    def __init__(self, client: AsyncWebClient, chart_for: ChartFor,
                 known: dict[str, str] | None = None, on_file: OnFile | None = None,
                 w: Words = ENGLISH_WORDS) -> None:
        self.client = client
        self.chart_for = chart_for
        self.w = w  # the thread's language
        self.known = dict(known or {})  # part key -> "<digest> <file id>"
        self.on_file = on_file
        self._retired: dict[str, str] = {}  # part key -> the file the new one replaces
        self._refused = False

    async def block(self, part_key: str, sources: list[str]) -> Block | None:
        """The image block of the part's chart, uploading it when it is new or changed;
        None when the part has no series to chart (or uploads are refused)."""
        found = self.chart_for(part_key, sources)
        if found is None or self._refused or len(found[0].points) < MIN_POINTS:
            return None  # no series, no uploads, or too few points to be a chart
        series, titles = found
        if self._elsewhere(part_key, series.digest()):
            return None  # another part of the run shows this very series already
        alt = _cut(series.describe(titles, self.w), ALT_CHARS)
        digest, _, file_id = self.known.get(part_key, "").partition(" ")
        if digest != series.digest() or not file_id:
            uploaded = await self._upload(part_key, series, titles, alt)
            if uploaded is None:
                return None
            if file_id:
                self._retired[part_key] = file_id
            file_id = uploaded
            await self._remember(part_key, f"{series.digest()} {file_id}")
        return {"type": "image", "slack_file": {"id": file_id}, "alt_text": alt,
                "title": {"type": "plain_text", "text": _cut(series.title_in(self.w),
                                                             TITLE_CHARS)}}

    def _elsewhere(self, part_key: str, digest: str) -> bool:
        return any(key != part_key and value.split(" ", 1)[0] == digest
                   for key, value in self.known.items())

    async def shown(self, part_key: str) -> None:
        """The part's message shows its new chart: the file it replaced is deleted."""
        old = self._retired.pop(part_key, None)
        if old is None:
            return
        try:
            await self.client.files_delete(file=old)
        except _FAILURES as exc:
            log.info("replaced chart %s not deleted: %s", old, _error(exc))

    async def _upload(self, part_key: str, series: Series, titles: dict[str, str],
                      alt: str) -> str | None:
        png = await draw(series, titles, self.w)
        try:
            done = await self.client.files_upload_v2(
                filename=f"chart-{part_key[:40]}.png", content=png, alt_txt=alt,
                title=_cut(series.title_in(self.w), TITLE_CHARS))
        except _FAILURES as exc:
            why = _error(exc)
            if why in _NO_UPLOADS:
                self._refused = True
                log.warning("charts are not uploaded to this workspace (%s): parts are "
                            "posted without them", why)
            else:
                log.warning("chart of %s not uploaded: %s", part_key, why)
            return None
        file = done.get("file") or {}
        return str(file.get("id") or "") or None

    async def _remember(self, part_key: str, value: str) -> None:
        self.known[part_key] = value
        if self.on_file is not None:
            await self.on_file(part_key, value)


def _cut(text: str, limit: int) -> str:
    """`text`, or as many of its whole words as fit `limit` with an ellipsis (a Slack
    field's limit; the chart's own caption is never cut)."""
    if len(text) <= limit:
        return text
    room = text[:limit - 1]
    kept = room.rsplit(" ", 1)[0] if " " in room else room
    return kept.rstrip(" ;,") + "…"


def _error(exc: Exception) -> str:
    return str(exc)[:200] if isinstance(exc, SlackRequestError) else slack_error(exc)
