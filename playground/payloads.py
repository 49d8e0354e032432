"""The request bodies Slack sends to an app, built the way Slack builds them: the Events API
`event_callback` envelope (with `message` and `app_mention` events) and the interactivity
`block_actions` payload. The playground delivers these to the bot's `/slack/events`."""

from __future__ import annotations

import hashlib
import re
import secrets
import time
import uuid
from typing import Any

from playground.fake_slack import BOT_USER_ID, TEAM_ID, Message

JSON = dict[str, Any]

APP_ID = "A0PLAYGROUND"
VERIFICATION_TOKEN = "playground-verification-token"  # legacy field; bolt checks the signature
_MENTION = re.compile(r"<@([A-Z0-9]+)(?:\|[^>]*)?>")


def new_event_id() -> str:
    return "Ev" + secrets.token_hex(5).upper()


def mentions_bot(text: str, bot_user_id: str = BOT_USER_ID) -> bool:
    return any(m.group(1) == bot_user_id for m in _MENTION.finditer(text))


def unescape(text: str) -> str:
    """Slack's message text escapes only &, < and >."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def rich_text_blocks(text: str) -> list[JSON]:
    """The `rich_text` block Slack's clients attach to a typed message: its text (unescaped)
    and mentions."""
    elements: list[JSON] = []
    pos = 0
    for match in _MENTION.finditer(text):
        if match.start() > pos:
            elements.append({"type": "text", "text": unescape(text[pos:match.start()])})
        elements.append({"type": "user", "user_id": match.group(1)})
        pos = match.end()
    if pos < len(text):
        elements.append({"type": "text", "text": unescape(text[pos:])})
    block_id = secrets.token_urlsafe(3)
    return [{"type": "rich_text", "block_id": block_id,
             "elements": [{"type": "rich_text_section", "elements": elements}]}]


def user_event(msg: Message, event_type: str, parent_user: str | None = None) -> JSON:
    """A person's message as a `message` or `app_mention` event (threaded when it is a reply)."""
    event: JSON = {"type": event_type, "user": msg.user, "text": msg.text, "ts": msg.ts,
                   "channel": msg.channel, "event_ts": msg.ts, "team": TEAM_ID,
                   "client_msg_id": str(uuid.uuid4()), "blocks": msg.blocks}
    if event_type == "message":
        event["channel_type"] = "channel"
    if msg.thread_ts:
        event["thread_ts"] = msg.thread_ts
        if parent_user:
            event["parent_user_id"] = parent_user
    return event


def event_envelope(event: JSON, event_id: str | None = None,
                   bot_user_id: str = BOT_USER_ID) -> JSON:
    """The Events API `event_callback` body around one event."""
    return {"token": VERIFICATION_TOKEN, "team_id": TEAM_ID, "api_app_id": APP_ID,
            "event": event, "type": "event_callback", "event_id": event_id or new_event_id(),
            "event_time": int(time.time()),
            "authorizations": [{"enterprise_id": None, "team_id": TEAM_ID,
                                "user_id": bot_user_id, "is_bot": True,
                                "is_enterprise_install": False}],
            "is_ext_shared_channel": False,
            "event_context": "4-" + secrets.token_urlsafe(24)}


def block_id_of(msg_ts: str, index: int, block: JSON) -> str:
    """A block's id: its own, or a stable generated one (Slack fills missing ids in too)."""
    given = block.get("block_id")
    if given:
        return str(given)
    return hashlib.sha1(f"{msg_ts}:{index}".encode()).hexdigest()[:5]


def find_action(msg: Message, action_id: str, block_id: str) -> tuple[str, JSON] | None:
    """The interactive element `action_id` in block `block_id` of `msg` (any block when
    `block_id` is empty), with the block's id."""
    for index, block in enumerate(msg.blocks):
        elements = list(block.get("elements") or []) if block.get("type") == "actions" else []
        if block.get("accessory"):
            elements.append(block["accessory"])
        bid = block_id_of(msg.ts, index, block)
        if block_id and bid != block_id:
            continue
        for element in elements:
            if isinstance(element, dict) and element.get("action_id") == action_id:
                return bid, element
    return None


def block_actions_payload(msg: Message, element: JSON, block_id: str, user: str,
                          user_name: str, channel_name: str, response_url: str) -> JSON:
    """The `block_actions` payload for a click on `element` of `msg` by `user`."""
    container: JSON = {"type": "message", "message_ts": msg.ts, "channel_id": msg.channel,
                       "is_ephemeral": msg.ephemeral_for is not None}
    if msg.thread_ts:
        container["thread_ts"] = msg.thread_ts
    action: JSON = {"type": element.get("type", "button"),
                    "action_id": element.get("action_id"), "block_id": block_id,
                    "action_ts": f"{time.time():.6f}"}
    for key in ("text", "value", "style", "url"):
        if key in element:
            action[key] = element[key]
    payload: JSON = {
        "type": "block_actions",
        "user": {"id": user, "username": user_name.lower(), "name": user_name.lower(),
                 "team_id": TEAM_ID},
        "api_app_id": APP_ID, "token": VERIFICATION_TOKEN, "container": container,
        "trigger_id": f"{int(time.time())}.{secrets.randbelow(10**12)}."
                      f"{secrets.token_hex(16)}",
        "team": {"id": TEAM_ID, "domain": "playground"}, "enterprise": None,
        "is_enterprise_install": False,
        "channel": {"id": msg.channel, "name": channel_name},
        "state": {"values": {}}, "response_url": response_url, "actions": [action]}
    if msg.ephemeral_for is None:  # Slack sends no message body for an ephemeral one
        message = msg.to_dict()
        message.pop("channel", None)
        payload["message"] = {**message, "app_id": APP_ID, "team": TEAM_ID}
    return payload


__all__ = ["APP_ID", "VERIFICATION_TOKEN", "block_actions_payload", "block_id_of",
           "event_envelope", "find_action", "mentions_bot", "new_event_id",
           "rich_text_blocks", "unescape", "user_event"]
