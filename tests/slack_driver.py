"""Drives the bot as Slack does: signed Events API and interactivity requests to its real
HTTP endpoint, with the people's messages kept in the fake Slack Web API."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from contract.requests import ResearchRequestMsg
from playground.fake_slack import BOT_USER_ID, FakeSlack, Message
from redsearch.harness.slack_events import action_body, button_value

SECRET = "test-signing-secret"
CHANNEL = "C0RESEARCH"
ALICE = "U0ALICE"
BOB = "U0BOB"


def signed_headers(body: str, content_type: str, secret: str = SECRET) -> dict[str, str]:
    timestamp = str(int(time.time()))
    digest = hmac.new(secret.encode(), f"v0:{timestamp}:{body}".encode(),
                      hashlib.sha256).hexdigest()
    return {"Content-Type": content_type, "X-Slack-Request-Timestamp": timestamp,
            "X-Slack-Signature": f"v0={digest}"}


def buttons(msg: Message) -> list[str]:
    return [e["action_id"] for b in msg.blocks if b["type"] == "actions" for e in b["elements"]]


@dataclass
class RecordingQueue:
    """The bot's queue as a list: what would have been enqueued, in order."""

    research_requests: list[ResearchRequestMsg] = field(default_factory=list)
    followups: list[tuple[str, str, str]] = field(default_factory=list)
    verdicts: list[tuple[str, str, str, str]] = field(default_factory=list)
    previews: list[ResearchRequestMsg] = field(default_factory=list)
    watches: list[tuple[str, str, str]] = field(default_factory=list)

    async def research(self, request: ResearchRequestMsg) -> bool:
        self.research_requests.append(request)
        return True

    async def followup(self, request: ResearchRequestMsg, ts: str, user: str,
                       text: str) -> bool:
        self.followups.append((ts, user, text))
        return True

    async def feedback(self, request: ResearchRequestMsg, message_ts: str, user: str,
                       part_key: str, verdict: str) -> bool:
        self.verdicts.append((message_ts, user, part_key, verdict))
        return True

    async def preview(self, request: ResearchRequestMsg) -> bool:
        self.previews.append(request)
        return True

    async def watch_set(self, request: ResearchRequestMsg, user: str, cadence: str) -> bool:
        self.watches.append((request.key, user, cadence))
        return True


@dataclass
class SlackDriver:
    url: str
    session: aiohttp.ClientSession
    fake: FakeSlack
    seq: int = 0
    team: str = "T0FAKE"  # the workspace the events and clicks come from
    channel: str = CHANNEL

    async def post(self, body: str, content_type: str, secret: str = SECRET) -> int:
        headers = signed_headers(body, content_type, secret)
        async with self.session.post(self.url, data=body.encode(), headers=headers) as resp:
            await resp.read()
            return resp.status

    async def mention(self, text: str, *, user: str = ALICE, event_id: str | None = None,
                      secret: str = SECRET) -> tuple[int, Message]:
        """A person writes `text` in the channel mentioning the bot; Slack delivers the event."""
        msg = self.fake.post_user_message(self.channel, user, text)
        status = await self.deliver(msg, event_id or self.next_event_id(), secret)
        return status, msg

    async def say_in_thread(self, thread_ts: str, text: str, *,
                            user: str = ALICE) -> tuple[int, Message]:
        """A person writes in a thread without mentioning the bot: a `message` event."""
        msg = self.fake.post_user_message(self.channel, user, text, thread_ts=thread_ts)
        return await self.deliver(msg, self.next_event_id(), kind="message"), msg

    def next_event_id(self) -> str:
        self.seq += 1
        return f"Ev{self.seq:04d}"

    async def deliver(self, msg: Message, event_id: str, secret: str = SECRET,
                      kind: str = "app_mention") -> int:
        event: dict[str, Any] = {"type": kind, "user": msg.user, "text": msg.text,
                                 "ts": msg.ts, "channel": msg.channel, "event_ts": msg.ts,
                                 "action_token": self.fake.search.issue(msg.user)}
        if msg.thread_ts:
            event["thread_ts"] = msg.thread_ts
        if kind == "message":
            event["channel_type"] = "channel"
        body = {"token": "legacy", "team_id": self.team, "api_app_id": "A0RED",
                "type": "event_callback", "event_id": event_id, "event_time": int(time.time()),
                "authorizations": [{"team_id": self.team, "user_id": BOT_USER_ID,
                                    "is_bot": True}],
                "event": event}
        return await self.post(json.dumps(body), "application/json", secret)

    async def click(self, user: str, action_id: str, msg: Message) -> int:
        """`user` clicks the button `action_id` of `msg` as the clients saw it (the click's
        trigger id may open one modal, as in Slack)."""
        self.seq += 1
        trigger = f"{self.seq}.2.3"
        self.fake.surfaces.trigger(trigger, user)
        body = action_body(user, msg, {"type": "button", "block_id": "b",
                                       "action_id": action_id,
                                       "value": button_value(msg, action_id)},
                           self.team, trigger, self.channel)
        return await self.post(body, "application/x-www-form-urlencoded")

    async def submit_view(self, view_id: str, values: dict[str, str],
                          user: str | None = None) -> dict[str, Any]:
        """The open modal `view_id` submitted with `values` (by `user`, its opener when
        None); the app's answer (`{}` closes it, `response_action: errors` keeps it)."""
        payload = self.fake.surfaces.submission(view_id, values)
        if user is not None:
            payload["user"] = {"id": user, "username": user.lower(), "team_id": self.team}
        body = urllib.parse.urlencode({"payload": json.dumps(payload)})
        headers = signed_headers(body, "application/x-www-form-urlencoded")
        async with self.session.post(self.url, data=body.encode(), headers=headers) as resp:
            assert resp.status == 200, resp.status
            text = await resp.text()
        answer: dict[str, Any] = json.loads(text) if text.strip() else {}
        if answer.get("response_action") != "errors":
            self.fake.surfaces.close_modal(view_id)
        return answer

    async def select(self, user: str, action_id: str, value: str, msg: Message) -> int:
        """`user` picks the option `value` of the menu `action_id` in `msg`."""
        option = {"text": {"type": "plain_text", "text": value}, "value": value}
        body = action_body(user, msg, {"type": "static_select", "block_id": "watch",
                                       "action_id": action_id, "selected_option": option},
                           self.team)
        return await self.post(body, "application/x-www-form-urlencoded")

    def replies(self, mention: Message) -> list[Message]:
        return [m for m in self.fake.messages(self.channel, mention.ts) if m.ts != mention.ts]
