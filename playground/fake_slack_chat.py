"""The fake's message methods: chat.postMessage, chat.update (keeping each message's earlier
versions), chat.postEphemeral, chat.delete, chat.getPermalink and conversations.replies (a thread
in pages; Slack's message `metadata` only with `include_all_metadata=true`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from playground.fake_slack_blocks import check_message_blocks
from playground.fake_slack_messages import (
    JSON,
    Message,
    SlackError,
    flag,
    parse_blocks,
    parse_metadata,
)

if TYPE_CHECKING:
    from playground.fake_slack import FakeSlack

TEXT_LIMIT = 40_000
PAGE_LIMIT = 1000


def content(params: JSON) -> tuple[str, str, list[JSON]]:
    """A message's channel, text (cut at Slack's 40,000) and blocks, checked as Slack does."""
    channel = str(params.get("channel", ""))
    if not channel:
        raise SlackError("channel_not_found")
    text, blocks = str(params.get("text") or ""), parse_blocks(params.get("blocks"))
    if not text and not blocks:
        raise SlackError("no_text")
    check_message_blocks(blocks)
    return channel, text[:TEXT_LIMIT], blocks


class FakeChat:
    def __init__(self, fake: FakeSlack) -> None:
        self.fake = fake
        for method, handler in {
            "chat.postMessage": self.post_message, "chat.update": self.update,
            "chat.postEphemeral": self.post_ephemeral, "chat.delete": self.delete,
            "chat.getPermalink": self.permalink, "conversations.replies": self.replies,
        }.items():
            fake.add_method(method, handler)

    def post_message(self, params: JSON) -> JSON:
        channel, text, blocks = content(params)
        self.fake.files.check_images(blocks)
        thread_ts = str(params["thread_ts"]) if params.get("thread_ts") else None
        thread_ts = self.fake.thread_root(channel, thread_ts)
        msg = Message(channel, self.fake.next_ts(), text, blocks, thread_ts,
                      metadata=parse_metadata(params.get("metadata")))
        self.fake.store(msg)
        self.fake.posted_to(channel)
        return {"channel": channel, "ts": msg.ts, "message": msg.to_dict()}

    def update(self, params: JSON) -> JSON:
        channel, text, blocks = content(params)
        self.fake.files.check_images(blocks)
        msg = self.fake.message(channel, str(params.get("ts", "")))
        if msg is None:
            raise SlackError("message_not_found")
        if self.fake.streams.live(msg):
            raise SlackError("streaming_state_conflict")  # stop the stream first
        msg.history.append({"text": msg.text, "blocks": msg.blocks,
                            "ts": msg.edited_ts or msg.ts})
        msg.text, msg.blocks, msg.edited_ts = text, blocks, self.fake.next_ts()
        msg.metadata = parse_metadata(params.get("metadata")) or msg.metadata
        self.fake.emit("updated", msg)
        return {"channel": channel, "ts": msg.ts, "text": text, "message": msg.to_dict()}

    def post_ephemeral(self, params: JSON) -> JSON:
        channel, text, blocks = content(params)
        user = str(params.get("user", ""))
        if not user:
            raise SlackError("user_not_in_channel")
        thread_ts = str(params["thread_ts"]) if params.get("thread_ts") else None
        msg = Message(channel, self.fake.next_ts(), text, blocks, thread_ts, ephemeral_for=user)
        self.fake.store(msg, "ephemeral")
        return {"message_ts": msg.ts}

    def delete(self, params: JSON) -> JSON:
        channel, ts = str(params.get("channel", "")), str(params.get("ts", ""))
        if self.fake.forget(channel, ts) is None:
            raise SlackError("message_not_found")
        return {"channel": channel, "ts": ts}

    def permalink(self, params: JSON) -> JSON:
        """A link to a message (a reply's link names its thread, as Slack's does)."""
        channel, ts = str(params.get("channel", "")), str(params.get("message_ts", ""))
        if not channel:
            raise SlackError("channel_not_found")
        msg = self.fake.message(channel, ts)
        if msg is None:
            raise SlackError("message_not_found")
        link = f"{self.fake.permalink_base}/archives/{channel}/p{ts.replace('.', '')}"
        if msg.thread_ts and msg.thread_ts != ts:
            link += f"?thread_ts={msg.thread_ts}&cid={channel}"
        return {"channel": channel, "permalink": link}

    def replies(self, params: JSON) -> JSON:
        """A thread, parent first, a page of `limit` at a time (`cursor` from the previous
        page's response_metadata.next_cursor); metadata only with include_all_metadata."""
        channel, ts = str(params.get("channel", "")), str(params.get("ts", ""))
        found = self.fake.message(channel, ts)
        if found is None:
            raise SlackError("thread_not_found")
        ts = found.thread_ts or ts  # a reply's ts gives its whole thread, as in Slack
        thread = self.fake.messages(channel, ts)
        dicts = [m.to_dict(flag(params.get("include_all_metadata"))) for m in thread]
        if len(thread) > 1:
            dicts[0].update(thread_ts=ts, reply_count=len(thread) - 1)
        start, limit = _page(params)
        more = start + limit < len(dicts)
        return {"messages": dicts[start:start + limit], "has_more": more,
                "response_metadata": {"next_cursor": f"offset:{start + limit}" if more else ""}}


def _page(params: JSON) -> tuple[int, int]:
    cursor = str(params.get("cursor") or "")
    try:
        limit = max(1, min(int(params.get("limit") or PAGE_LIMIT), PAGE_LIMIT))
        start = int(cursor.removeprefix("offset:")) if cursor else 0
    except ValueError as exc:
        raise SlackError("invalid_cursor") from exc
    return start, limit
