"""The fake Slack workspace's values: its messages (with their edit history and Slack's message
`metadata`), the calls it received, the changes it announces, its errors, and the parsing of
the arguments Slack takes as JSON (blocks, metadata, booleans)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

JSON = dict[str, Any]

BOT_USER_ID = "U0FAKEBOT"
BOT_ID = "B0FAKEBOT"
TEAM_ID = "T0FAKE"


class SlackError(Exception):
    """A Slack `ok: false` answer with its error code (and, like Slack's, a line saying what
    was wrong in `response_metadata.messages`)."""

    def __init__(self, error: str, detail: str = "", **fields: str) -> None:
        super().__init__(error)
        self.error = error
        self.detail = detail
        self.fields = fields  # more of Slack's answer (missing_scope: needed, provided)

    def body(self) -> JSON:
        body: JSON = {"ok": False, "error": self.error, **self.fields}
        if self.detail:
            body["response_metadata"] = {"messages": [f"[ERROR] {self.detail}"]}
        return body


def json_argument(value: Any, name: str) -> Any:
    """An argument Slack takes as JSON text (or already decoded), as Slack refuses one that is
    not valid JSON."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise SlackError("invalid_arguments", f"{name} is not valid JSON") from exc
    return value


@dataclass
class Stream:
    """A message being streamed (chat.startStream): it takes appends until it is stopped, or
    until it expires (appends paused for `idle_s`, or `lifetime_s` after it started)."""

    started: float
    last_append: float
    recipient_user: str
    stopped: bool = False
    markdown: str = ""


@dataclass
class Call:
    """One request the fake received: method, parameters (token removed), time, outcome."""

    method: str
    params: JSON
    at: float
    status: int = 200
    error: str | None = None
    team: str = ""  # the workspace of the token the call was made with


@dataclass
class Message:
    """A channel message, with the versions it had before each edit."""

    channel: str
    ts: str
    text: str
    blocks: list[JSON]
    thread_ts: str | None = None
    user: str = BOT_USER_ID
    bot_id: str | None = BOT_ID
    edited_ts: str | None = None
    history: list[JSON] = field(default_factory=list)
    ephemeral_for: str | None = None
    metadata: JSON | None = None  # Slack's message metadata: {event_type, event_payload}
    stream: Stream | None = None  # set while (and after) the message was streamed
    files: list[JSON] = field(default_factory=list)  # files shared with it (an upload's)

    def to_dict(self, with_metadata: bool = False) -> JSON:
        out: JSON = {"type": "message", "user": self.user, "text": self.text, "ts": self.ts,
                     "blocks": self.blocks, "channel": self.channel}
        if with_metadata and self.metadata is not None:
            out["metadata"] = self.metadata
        if self.bot_id:
            out["bot_id"] = self.bot_id
        if self.thread_ts:
            out["thread_ts"] = self.thread_ts
        if self.edited_ts:
            out["edited"] = {"user": self.user, "ts": self.edited_ts}
        if self.files:
            out["files"], out["upload"] = self.files, True
        return out


@dataclass
class Change:
    """A change in the workspace: kind is posted, updated, deleted, ephemeral, status, view
    (a Home tab published) or assistant (suggested prompts or a title set)."""

    kind: str
    channel: str
    ts: str
    thread_ts: str | None
    data: JSON
    ephemeral_for: str | None = None  # the only user who sees an ephemeral message
    streaming: bool = False  # a message still being streamed (the page shows a cursor)


def parse_metadata(value: Any) -> JSON | None:
    """Slack's `metadata` argument (a JSON string or object): {event_type, event_payload}."""
    if value is None or value == "":
        return None
    try:
        parsed = json.loads(value) if isinstance(value, str) else value
    except json.JSONDecodeError as exc:
        raise SlackError("invalid_metadata_format") from exc
    if not isinstance(parsed, dict) or not isinstance(parsed.get("event_type"), str) \
            or not isinstance(parsed.get("event_payload"), dict):
        raise SlackError("invalid_metadata_format")
    return {"event_type": parsed["event_type"], "event_payload": dict(parsed["event_payload"])}


def flag(value: Any) -> bool:
    """A boolean argument as JSON (true) or form-encoded ("true", "1") sends it."""
    return value is True or str(value).lower() in ("true", "1")


def parse_blocks(value: Any) -> list[JSON]:
    if value is None or value == "":
        return []
    parsed = json.loads(value) if isinstance(value, str) else value
    if not isinstance(parsed, list):
        raise SlackError("invalid_blocks")
    return [dict(b) for b in parsed]
