"""The workspace's own Slack as a search source for one run (docs/search.md).

A query is Slack's `assistant.search.context` (the Real-time Search API) called with the
action token of the message that asked: Slack answers only what that person may see. Each
message found is a hit citing its permalink, its channel (by name when the app may read it)
and its date; the thread the run answers in is never evidence for itself, nor is any app's
message. A failed search (a refused or expired token, a missing scope, Slack away) costs its
hits: one line in the run log and the worker log, never the run nor the job. The token is a
`Secret` (never shown) held only by this object, which lives as long as the job; its hits are
never cached (`private`), so they reach nobody else.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import re
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from contract.slack_client import SLACK_FAILURES, slack_error
from research_core.protocols import SearchHit, SearchRequest
from research_core.runlog import note
from research_core.search import snippets
from research_core.settings.values import Secret

SLACK_ID_PREFIX = "slack-"
MAX_LIMIT = 20  # Slack answers at most 20 messages a call
CALL_TIMEOUT_S = 15.0
SOURCE_TYPE = "slack_message"
_THREAD = re.compile(r"[?&]thread_ts=([0-9.]+)")


class SlackSearch:
    """`assistant.search.context` as a search backend, for the run answering in `thread_ts`
    of `channel`."""

    name = "slack"
    private = True

    def __init__(self, client: AsyncWebClient, token: Secret, channel: str, thread_ts: str,
                 channel_types: tuple[str, ...]) -> None:
        self.client = client
        self._token = token
        self.channel = channel
        self.thread_ts = thread_ts
        self.channel_types = channel_types
        self._texts: dict[str, str] = {}
        self._names: dict[str, str] = {}

    async def search(self, request: SearchRequest) -> list[SearchHit]:
        try:
            async with asyncio.timeout(CALL_TIMEOUT_S):
                found = await self._messages(request)
        except (*SLACK_FAILURES, ValueError) as exc:
            why = "no answer in time" if isinstance(exc, TimeoutError) else slack_error(exc)
            note("slack-search", f"search {request.query!r} failed: {why}; the workspace's "
                 "messages are left out of it", reason=why)
            return []
        kept = [m for m in found if self._evidence(m)][:request.limit]
        return [await self._hit(m) for m in kept]

    async def read_body(self, source_id: str) -> str | None:
        return self._texts.get(source_id)

    async def _messages(self, request: SearchRequest) -> list[dict[str, Any]]:
        """One call, its arguments in the request's body: slack_sdk's own method puts them in
        the URL, where proxies and access logs would keep the token."""
        window = request.time_range
        arguments = {"query": request.query, "action_token": str(self._token),
                     "channel_types": ",".join(self.channel_types),
                     "content_types": "messages", "include_bots": "false",
                     "limit": min(MAX_LIMIT, request.limit * 2),
                     "after": _epoch(window.since), "before": _epoch(window.until, end=True)}
        response = await self.client.api_call(
            "assistant.search.context", data={k: v for k, v in arguments.items()
                                              if v is not None})
        results = response.get("results")
        messages = results.get("messages") if isinstance(results, dict) else None
        if not isinstance(messages, list):
            raise ValueError("the answer holds no results.messages list")
        return [m for m in messages if isinstance(m, dict)]

    def _evidence(self, message: dict[str, Any]) -> bool:
        """A person's message with text, outside the thread the run answers in."""
        if message.get("is_author_bot") or not str(message.get("content") or "").strip():
            return False
        if str(message.get("channel_id")) != self.channel:
            return True
        ts = str(message.get("message_ts"))
        thread = _THREAD.search(str(message.get("permalink") or ""))
        return self.thread_ts not in (ts, thread.group(1) if thread else None)

    async def _hit(self, message: dict[str, Any]) -> SearchHit:
        channel, ts = str(message.get("channel_id")), str(message.get("message_ts"))
        text = " ".join(str(message.get("content")).split())
        source_id = f"{SLACK_ID_PREFIX}{channel}-{ts}"
        self._texts[source_id] = text
        name = await self._channel_name(channel)
        return SearchHit(source_id=source_id, title=f"Message in #{name}: "
                         f"{snippets.cut(text, 80)}", snippet=snippets.cut(text, 1000),
                         url=str(message.get("permalink") or ""), published=_date(ts),
                         source_type=SOURCE_TYPE, publisher=f"Slack #{name}")

    async def _channel_name(self, channel: str) -> str:
        """The channel's name (conversations.info), else its id."""
        if channel not in self._names:
            try:
                info = await self.client.conversations_info(channel=channel)
                found = info.get("channel")
                name = found.get("name") if isinstance(found, dict) else None
            except SLACK_FAILURES as exc:
                note("slack-search", f"channel {channel}: name not read ({slack_error(exc)})")
                name = None
            self._names[channel] = str(name) if isinstance(name, str) and name else channel
        return self._names[channel]


def _epoch(day: dt.date | None, end: bool = False) -> int | None:
    if day is None:
        return None
    moment = dt.datetime.combine(day + dt.timedelta(days=1) if end else day, dt.time(),
                                 dt.UTC)
    return int(moment.timestamp())


def _date(ts: str) -> dt.date | None:
    try:
        return dt.datetime.fromtimestamp(float(ts), dt.UTC).date()
    except (ValueError, OverflowError, OSError):
        return None
