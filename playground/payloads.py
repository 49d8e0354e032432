"""The request bodies Slack sends to an app, built the way Slack builds them: the Events API
`event_callback` envelope (with `message`, `app_mention` and `app_home_opened` events), the
interactivity `block_actions` payload (buttons, and feedback buttons in `context_actions`),
a message shortcut's `message_action` payload and a slash command's form. The playground
delivers these to the bot's `/slack/events`."""

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


def user_event(msg: Message, event_type: str, parent_user: str | None = None,
               action_token: str | None = None) -> JSON:
    """A person's message as a `message` or `app_mention` event (threaded when it is a reply),
    with the `action_token` that lets an app search as that person (the Real-time Search
    API)."""
    event: JSON = {"type": event_type, "user": msg.user, "text": msg.text, "ts": msg.ts,
                   "channel": msg.channel, "event_ts": msg.ts, "team": TEAM_ID,
                   "client_msg_id": str(uuid.uuid4()), "blocks": msg.blocks}
    if action_token:
        event["action_token"] = action_token
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


def find_action(msg: Message, action_id: str, block_id: str,
                value: str = "") -> tuple[str, JSON] | None:
    """The interactive element `action_id` in block `block_id` of `msg` (any block when
    `block_id` is empty), with the block's id; a feedback button (one of the two of a
    `feedback_buttons` element) is found by its `value`."""
    for index, block in enumerate(msg.blocks):
        interactive = block.get("type") in ("actions", "context_actions")
        elements = list(block.get("elements") or []) if interactive else []
        if block.get("accessory"):
            elements.append(block["accessory"])
        bid = block_id_of(msg.ts, index, block)
        if block_id and bid != block_id:
            continue
        for element in elements:
            if isinstance(element, dict) and element.get("action_id") == action_id:
                found = _feedback_button(element, value)
                if found is not None:
                    return bid, found
    return None


def _feedback_button(element: JSON, value: str) -> JSON | None:
    """The element clicked: itself, for feedback buttons the one whose value is `value`, for
    a menu (`static_select`) the menu with the option whose value is `value` selected."""
    if element.get("type") == "static_select":
        option = next((o for o in element.get("options") or [] if o.get("value") == value), None)
        return None if option is None else {"type": "static_select",
                                            "action_id": element["action_id"],
                                            "selected_option": option}
    if element.get("type") != "feedback_buttons":
        return element
    for side in ("positive_button", "negative_button"):
        button = element.get(side) or {}
        if button.get("value") == value:
            return {"type": "feedback_buttons", "action_id": element["action_id"],
                    "value": value, "text": button.get("text")}
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
    for key in ("text", "value", "style", "url", "selected_option"):
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


def command_form(command: str, text: str, user: str, user_name: str, channel: str,
                 channel_name: str, response_url: str) -> dict[str, str]:
    """The form Slack posts for a slash command."""
    return {"token": VERIFICATION_TOKEN, "team_id": TEAM_ID, "team_domain": "playground",
            "channel_id": channel, "channel_name": channel_name, "user_id": user,
            "user_name": user_name.lower(), "command": command, "text": text,
            "api_app_id": APP_ID, "is_enterprise_install": "false",
            "response_url": response_url, "trigger_id": _trigger_id()}


def message_action_payload(msg: Message, callback_id: str, user: str, user_name: str,
                           channel_name: str, response_url: str) -> JSON:
    """The `message_action` payload of a message shortcut used on `msg`."""
    message = msg.to_dict()
    message.pop("channel", None)
    return {"type": "message_action", "callback_id": callback_id, "trigger_id": _trigger_id(),
            "token": VERIFICATION_TOKEN, "action_ts": f"{time.time():.6f}",
            "team": {"id": TEAM_ID, "domain": "playground"},
            "user": {"id": user, "username": user_name.lower(), "team_id": TEAM_ID},
            "channel": {"id": msg.channel, "name": channel_name}, "is_enterprise_install": False,
            "enterprise": None, "message_ts": msg.ts, "message": message,
            "response_url": response_url}


def home_opened_event(user: str, dm_channel: str) -> JSON:
    """The `app_home_opened` event of a person opening the app's Home tab."""
    return {"type": "app_home_opened", "user": user, "channel": dm_channel, "tab": "home",
            "event_ts": f"{time.time():.6f}"}


def _trigger_id() -> str:
    return f"{int(time.time())}.{secrets.randbelow(10**12)}.{secrets.token_hex(16)}"


__all__ = ["APP_ID", "VERIFICATION_TOKEN", "block_actions_payload", "block_id_of",
           "command_form", "event_envelope", "find_action", "home_opened_event",
           "mentions_bot", "message_action_payload", "new_event_id", "rich_text_blocks",
           "unescape", "user_event"]
