"""Message keys in Slack: every message the worker posts carries its publication key in Slack's
message `metadata`, so that after a crash between a post and its record the thread can be
asked (`conversations.replies` with `include_all_metadata`) whether it is already there."""

from __future__ import annotations

import logging
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from contract.slack_client import SLACK_FAILURES, slack_error

log = logging.getLogger(__name__)

EVENT_TYPE = "red_searcher_publication"
PAGE_LIMIT = 200
MAX_PAGES = 50


def metadata(key: str) -> dict[str, Any]:
    """The `metadata` argument of chat.postMessage / chat.update for a publication key."""
    return {"event_type": EVENT_TYPE, "event_payload": {"key": key}}


def key_of(message: dict[str, Any]) -> str | None:
    """The publication key a thread message carries, if it is one of ours."""
    meta = message.get("metadata")
    if not isinstance(meta, dict) or meta.get("event_type") != EVENT_TYPE:
        return None
    payload = meta.get("event_payload")
    key = payload.get("key") if isinstance(payload, dict) else None
    return key if isinstance(key, str) else None


async def find_posted(client: AsyncWebClient, channel: str, thread_ts: str,
                      key: str) -> str | None:
    """The ts of the thread message carrying `key`, or None when the thread has none. A thread
    that cannot be read (a missing history scope, a deleted thread, Slack away or answering
    what is not its JSON) counts as not having it: the message is then posted again rather
    than the run failing."""
    try:
        return await _search(client, channel, thread_ts, key)
    except SLACK_FAILURES as exc:
        log.warning("thread %s not read back (%s); %s is posted again", thread_ts,
                    slack_error(exc), key)
        return None


async def _search(client: AsyncWebClient, channel: str, thread_ts: str, key: str) -> str | None:
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        resp = await client.conversations_replies(
            channel=channel, ts=thread_ts, include_all_metadata=True, limit=PAGE_LIMIT,
            cursor=cursor)
        for message in resp.get("messages") or []:
            if key_of(message) == key:
                return str(message["ts"])
        cursor = (resp.get("response_metadata") or {}).get("next_cursor") or None
        if not resp.get("has_more") or not cursor:
            return None
    return None
