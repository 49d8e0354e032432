"""Text streaming in the fake: chat.startStream, chat.appendStream, chat.stopStream.

As in Slack: a stream is a thread reply that grows with each append (`markdown_text`, up to
12,000 characters a call, or `chunks`: markdown_text, plan_update, task_update, blocks); in a
channel it names its recipient (`recipient_team_id` and `recipient_user_id`, else
`missing_recipient_team_id` / `missing_recipient_user_id`); it ends with chat.stopStream (which
may add blocks, e.g. feedback buttons, and metadata) or expires when appends pause or after
its lifetime, after which appends and stops answer `message_not_in_streaming_state`. A message
still streaming cannot be edited with chat.update (`streaming_state_conflict`).
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from playground.fake_slack_blocks import check_message_blocks
from playground.fake_slack_messages import (
    JSON,
    Message,
    SlackError,
    Stream,
    parse_blocks,
    parse_metadata,
)

if TYPE_CHECKING:
    from playground.fake_slack import FakeSlack

MARKDOWN_LIMIT = 12_000
CHUNK_TYPES = ("markdown_text", "plan_update", "task_update", "blocks")
DISPLAY_MODES = ("timeline", "plan")
TASK_STATUSES = ("pending", "in_progress", "complete", "error")


class FakeStreams:
    def __init__(self, fake: FakeSlack, idle_s: float, lifetime_s: float) -> None:
        self.fake = fake
        self.idle_s = idle_s
        self.lifetime_s = lifetime_s
        fake.add_method("chat.startStream", self.start)
        fake.add_method("chat.appendStream", self.append)
        fake.add_method("chat.stopStream", self.stop)

    def live(self, msg: Message) -> bool:
        """Whether the message is a stream that still takes appends."""
        stream = msg.stream
        if stream is None or stream.stopped:
            return False
        now = time.monotonic()
        return now - stream.last_append < self.idle_s and now - stream.started < self.lifetime_s

    def start(self, params: JSON) -> JSON:
        channel = str(params.get("channel") or "")
        if not channel:
            raise SlackError("channel_not_found")
        thread_ts = self.fake.thread_root(channel, str(params.get("thread_ts") or "") or None)
        user = _recipient(channel, params)
        if params.get("task_display_mode", "timeline") not in DISPLAY_MODES:
            raise SlackError("invalid_arguments", "task_display_mode must be timeline or plan")
        now = time.monotonic()
        msg = Message(channel, self.fake.next_ts(), "", [], thread_ts,
                      stream=Stream(now, now, user))
        _apply(msg, params, required=False)
        self.fake.store(msg)
        self.fake.posted_to(channel)
        return {"channel": channel, "ts": msg.ts}

    def append(self, params: JSON) -> JSON:
        msg = self._streaming(params)
        _apply(msg, params, required=True)
        assert msg.stream is not None
        msg.stream.last_append = time.monotonic()
        self.fake.emit("updated", msg)
        return {"channel": msg.channel, "ts": msg.ts}

    def stop(self, params: JSON) -> JSON:
        msg = self._streaming(params)
        _apply(msg, params, required=False)
        extra = parse_blocks(params.get("blocks"))
        if extra:
            check_message_blocks(extra)
        assert msg.stream is not None
        msg.stream.stopped = True
        msg.blocks = [*msg.blocks, *extra]
        msg.metadata = parse_metadata(params.get("metadata")) or msg.metadata
        self.fake.emit("updated", msg)
        return {"channel": msg.channel, "ts": msg.ts, "message": msg.to_dict()}

    def _streaming(self, params: JSON) -> Message:
        channel, ts = str(params.get("channel") or ""), str(params.get("ts") or "")
        if not channel:
            raise SlackError("channel_not_found")
        msg = self.fake.message(channel, ts)
        if msg is None:
            raise SlackError("message_not_found")
        if not self.live(msg):
            raise SlackError("message_not_in_streaming_state")
        return msg


def _recipient(channel: str, params: JSON) -> str:
    """Streams in channels (not DMs) name who they are for."""
    team, user = params.get("recipient_team_id"), params.get("recipient_user_id")
    if channel.startswith(("C", "G")):
        if not team:
            raise SlackError("missing_recipient_team_id")
        if not user:
            raise SlackError("missing_recipient_user_id")
    return str(user or "")


def _apply(msg: Message, params: JSON, required: bool) -> None:
    """Add a call's markdown_text and chunks to the streamed message."""
    text = params.get("markdown_text")
    chunks = _chunks(params.get("chunks"))
    if required and not text and not chunks:
        raise SlackError("no_text")
    pieces = [str(text)] if text else []
    for chunk in chunks:
        if chunk["type"] == "markdown_text":
            pieces.append(str(chunk.get("text") or ""))
        else:
            _structure(msg, chunk)
    for piece in pieces:
        if len(piece) > MARKDOWN_LIMIT:
            raise SlackError("msg_too_long")
    assert msg.stream is not None
    msg.stream.markdown += "".join(pieces)
    msg.text = msg.stream.markdown
    markdown = [{"type": "markdown", "text": msg.text}] if msg.text else []
    msg.blocks = [b for b in msg.blocks if b.get("type") != "markdown"] + markdown


def _chunks(value: Any) -> list[JSON]:
    if value is None or value == "":
        return []
    try:
        parsed = json.loads(value) if isinstance(value, str) else value
    except json.JSONDecodeError as exc:
        raise SlackError("invalid_chunks") from exc
    if not isinstance(parsed, list) or not all(
            isinstance(c, dict) and c.get("type") in CHUNK_TYPES for c in parsed):
        raise SlackError("invalid_chunks")
    return parsed


def _structure(msg: Message, chunk: JSON) -> None:
    """A plan title, a task's update (by id: title and status replace, details add up) or
    blocks, shown above the text."""
    plan = next((b for b in msg.blocks if b.get("type") == "plan"), None)
    if chunk["type"] == "blocks":
        msg.blocks = [*msg.blocks, *parse_blocks(chunk.get("blocks"))]
        return
    if plan is None:
        plan = {"type": "plan", "title": "Plan", "tasks": []}
        msg.blocks = [plan, *msg.blocks]
    if chunk["type"] == "plan_update":
        plan["title"] = str(chunk.get("title") or plan["title"])
        return
    if chunk.get("status", "pending") not in TASK_STATUSES or not chunk.get("id"):
        raise SlackError("invalid_chunks")
    tasks = {t["task_id"]: t for t in plan["tasks"]}
    task = tasks.get(chunk["id"]) or {"type": "task_card", "task_id": str(chunk["id"])}
    task.update(title=str(chunk.get("title") or ""), status=chunk.get("status", "pending"))
    for name in ("details", "output"):
        if chunk.get(name):
            task[name] = _rich(str(chunk[name]))
    if chunk.get("sources"):
        task["sources"] = list(chunk["sources"])
    if task["task_id"] not in tasks:
        plan["tasks"].append(task)


def _rich(text: str) -> JSON:
    return {"type": "rich_text", "elements": [
        {"type": "rich_text_section", "elements": [{"type": "text", "text": text}]}]}
