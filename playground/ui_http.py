"""The playground's HTTP plumbing: errors answered Slack-style, the JSON bodies the page posts,
the numbered updates it streams, and what a `response_url` request amounts to (a reply to a
click, a shortcut or a slash command: ephemeral, in the channel, a replacement or a delete)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from playground.fake_slack import Message

JSON = dict[str, Any]


class PlaygroundError(Exception):
    """A bad request from the page: HTTP status and Slack-style error code."""

    def __init__(self, status: int, error: str) -> None:
        super().__init__(error)
        self.status = status
        self.error = error


@dataclass(frozen=True)
class Update:
    """One numbered change as the page receives it."""

    seq: int
    data: JSON
    ephemeral_for: str | None = None

    def visible_to(self, user: str | None) -> bool:
        return self.ephemeral_for is None or self.ephemeral_for == user


@dataclass(frozen=True)
class Responder:
    """Where a `response_url` answers: the person, the channel and thread, and the message the
    interaction came from (none for a slash command)."""

    user: str
    channel: str
    thread_ts: str | None = None
    message: Message | None = None

    @classmethod
    def of(cls, msg: Message, user: str) -> Responder:
        return cls(user, msg.channel, msg.thread_ts, msg)


def ephemeral_dict(msg: Message) -> JSON:
    return {**msg.to_dict(), "ephemeral_for": msg.ephemeral_for}


def response_call(body: JSON, to: Responder) -> tuple[str, JSON]:
    """The Web API call a `response_url` request amounts to."""
    content: JSON = {k: body[k] for k in ("text", "blocks") if k in body}
    where = {"channel": to.channel, **({"thread_ts": to.thread_ts} if to.thread_ts else {})}
    msg = to.message
    if body.get("delete_original") and msg is not None:
        return "chat.delete", {"channel": msg.channel, "ts": msg.ts}
    if body.get("replace_original") and msg is not None and msg.ephemeral_for is None:
        return "chat.update", {"channel": msg.channel, "ts": msg.ts, **content}
    if body.get("response_type") == "in_channel":
        return "chat.postMessage", {**where, **content}
    return "chat.postEphemeral", {**where, "user": to.user, **content}


async def json_body(request: web.Request) -> JSON:
    """The JSON object posted; only `application/json` is taken, so that another web site
    cannot post to the playground from a browser without a CORS preflight it never gets."""
    if request.content_type != "application/json":
        raise PlaygroundError(415, "invalid_content_type")
    with contextlib.suppress(ValueError, RecursionError):  # RecursionError: absurd nesting
        body = await request.json()
        if isinstance(body, dict):
            return body
    return {}


def error(exc: PlaygroundError) -> web.Response:
    return web.json_response({"ok": False, "error": exc.error}, status=exc.status)
