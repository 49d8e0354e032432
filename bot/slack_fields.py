"""The fields the bot's handlers read from Slack payloads, checked before use.

Slack's ids (channels, users, events) and timestamps are short ASCII tokens; anything else in
their place (a number, an object, a lone surrogate, a megabyte) makes the payload unusable and
the handler drops it with one log line, instead of failing halfway through with the delivery
already marked as handled. Message text is the person's own: lone surrogates (which no UTF-8
encoder accepts, so neither Redis nor the Web API) become U+FFFD and the rest is kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from research_core.question import scrub_surrogates

JSON = dict[str, Any]

_ID = re.compile(r"[A-Za-z0-9._-]{1,80}")
_ACTION_TOKEN = re.compile(r"[A-Za-z0-9._-]{1,400}")


def slack_id(value: object) -> str | None:
    """`value` when it looks like a Slack id or timestamp, else None."""
    return value if isinstance(value, str) and _ID.fullmatch(value) else None


def text_of(value: object) -> str:
    """A message's text (empty when missing or not text), lone surrogates replaced."""
    return scrub_surrogates(value) if isinstance(value, str) else ""


def object_of(payload: JSON, key: str) -> JSON:
    value = payload.get(key)
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class UserMessage:
    """A person's message from a `message` or `app_mention` event."""

    channel: str
    ts: str
    thread_ts: str | None
    user: str
    text: str

    @classmethod
    def of(cls, event: JSON) -> UserMessage | None:
        """The message, or None when its channel or ts is missing or malformed."""
        channel, ts = slack_id(event.get("channel")), slack_id(event.get("ts"))
        if channel is None or ts is None:
            return None
        return cls(channel, ts, slack_id(event.get("thread_ts")),
                   slack_id(event.get("user")) or "", text_of(event.get("text")))


def action_token_of(event: JSON) -> str | None:
    """The `action_token` a message event carries (it lets the app search the workspace as
    the person who wrote the message), when it looks like one."""
    token = event.get("action_token")
    return token if isinstance(token, str) and _ACTION_TOKEN.fullmatch(token) else None


def event_id_usable(body: JSON) -> bool:
    """No event id, or one that can be stored to drop retried deliveries."""
    return body.get("event_id") in (None, "") or slack_id(body.get("event_id")) is not None


def clicker_of(body: JSON) -> str | None:
    """Who clicked: `user.id` of an interaction payload. Slack always sends the user as an
    object; anything else (a bare id included) names no one."""
    return slack_id(object_of(body, "user").get("id"))


def channel_of(body: JSON) -> str | None:
    channel = body.get("channel")
    return slack_id(channel.get("id") if isinstance(channel, dict) else channel)


def message_ts(body: JSON) -> str | None:
    """The ts of the message whose button was clicked."""
    return (slack_id(object_of(body, "container").get("message_ts"))
            or slack_id(object_of(body, "message").get("ts")))


def where(payload: JSON) -> tuple[str | None, str | None]:
    """The workspace (team) and channel a request comes from, where it says: an event's, a
    click's or a command's (a form's `team_id` and `channel_id`)."""
    team = payload.get("team_id") or payload.get("team")
    team = team.get("id") if isinstance(team, dict) else team
    event = object_of(payload, "event")
    channel = event.get("channel") or payload.get("channel_id") or payload.get("channel")
    channel = channel.get("id") if isinstance(channel, dict) else channel
    return slack_id(team), slack_id(channel)
