"""Signed Slack deliveries for the chaos and load suites: Events API mentions and block-action
clicks, signed with the app's signing secret (v0 HMAC) and posted to a bot's real endpoint,
the way Slack sends them. The people's messages themselves live in the fake Slack."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

import aiohttp

from playground.fake_slack import BOT_USER_ID, TEAM_ID, Message


def signed_headers(body: str, content_type: str, secret: str) -> dict[str, str]:
    timestamp = str(int(time.time()))
    digest = hmac.new(secret.encode(), f"v0:{timestamp}:{body}".encode(),
                      hashlib.sha256).hexdigest()
    return {"Content-Type": content_type, "X-Slack-Request-Timestamp": timestamp,
            "X-Slack-Signature": f"v0={digest}"}


def mention_body(msg: Message, event_id: str) -> str:
    """The Events API body of an `app_mention` for `msg`."""
    event: dict[str, Any] = {"type": "app_mention", "user": msg.user, "text": msg.text,
                             "ts": msg.ts, "channel": msg.channel, "event_ts": msg.ts}
    if msg.thread_ts:
        event["thread_ts"] = msg.thread_ts
    return json.dumps({
        "token": "legacy", "team_id": TEAM_ID, "api_app_id": "A0RED",
        "type": "event_callback", "event_id": event_id, "event_time": int(time.time()),
        "authorizations": [{"team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": True}],
        "event": event})


def button_value(msg: Message, action_id: str) -> str:
    return next(str(e["value"]) for b in msg.blocks if b.get("type") == "actions"
                for e in b.get("elements", []) if e.get("action_id") == action_id)


def click_body(user: str, action_id: str, msg: Message) -> str:
    """The interactivity body of `user` clicking `action_id` on `msg` (form-encoded)."""
    return action_body(user, msg, {"type": "button", "block_id": "b", "action_id": action_id,
                                   "value": button_value(msg, action_id)})


def action_body(user: str, msg: Message, action: dict[str, Any], team: str = TEAM_ID,
                trigger_id: str = "1.2.3", channel: str | None = None) -> str:
    """The form-encoded `block_actions` body of `user` acting on `msg` as Slack sends it
    (`channel`: the channel the client shows, `msg.channel` when None)."""
    where = channel or msg.channel
    payload = {"type": "block_actions", "team": {"id": team},
               "user": {"id": user, "name": user.lower()}, "api_app_id": "A0RED",
               "trigger_id": trigger_id, "channel": {"id": where, "name": "research"},
               "container": {"type": "message", "message_ts": msg.ts,
                             "channel_id": where, "is_ephemeral": False},
               "message": {"type": "message", "ts": msg.ts, "text": msg.text,
                           "blocks": msg.blocks},
               "actions": [{**action, "action_ts": str(time.time())}]}
    return urllib.parse.urlencode({"payload": json.dumps(payload)})


@dataclass
class Delivery:
    status: int
    latency_s: float  # from sending the request to reading the bot's answer


@dataclass
class SignedSender:
    """Posts signed bodies to a bot's `/slack/events`."""

    session: aiohttp.ClientSession
    secret: str

    async def post(self, url: str, body: str, content_type: str) -> Delivery:
        headers = signed_headers(body, content_type, self.secret)
        started = time.perf_counter()
        async with self.session.post(url, data=body.encode(), headers=headers) as resp:
            await resp.read()
            return Delivery(resp.status, time.perf_counter() - started)

    async def mention(self, url: str, msg: Message, event_id: str) -> Delivery:
        return await self.post(url, mention_body(msg, event_id), "application/json")

    async def click(self, url: str, user: str, action_id: str, msg: Message) -> Delivery:
        return await self.post(url, click_body(user, action_id, msg),
                               "application/x-www-form-urlencoded")
