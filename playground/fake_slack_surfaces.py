"""The fake's agent surfaces beyond messages: the assistant container's thread status,
suggested prompts and title (assistant.threads.*), each user's App Home tab (views.publish)
and modals (views.open, with the trigger id of the click that opened it; a submission is
built by `submission`), with Slack's argument checks and limits.

A loading status clears by itself `status_timeout_s` after it was set (Slack: about two
minutes without a message), as the app's loading line does in Slack when the app goes quiet;
setting it again starts the time again (`status_expired`)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from playground.fake_slack_blocks import check_view_blocks
from playground.fake_slack_messages import JSON, TEAM_ID, Change, SlackError, json_argument

USERS_SCOPE = "users:read"  # users.info

if TYPE_CHECKING:
    from playground.fake_slack import FakeSlack

PROMPTS_MAX = 4
MODAL_TITLE = 24
METADATA_CHARS = 3_000
STATUS_CHARS = 50_000  # Slack cuts nothing it documents; the loading line is short in practice


@dataclass
class AssistantThread:
    """What the app set on one assistant thread."""

    status: str = ""
    status_set_at: float = 0.0  # when the status was last set (the fake's clock)
    title: str = ""
    prompts: list[JSON] = field(default_factory=list)
    prompts_title: str = ""


class FakeSurfaces:
    def __init__(self, fake: FakeSlack, status_timeout_s: float = 120.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.fake = fake
        self.status_timeout_s = status_timeout_s
        self.clock = clock
        self.threads: dict[tuple[str, str], AssistantThread] = {}
        self.views: dict[str, JSON] = {}
        self.triggers: dict[str, str] = {}  # trigger id of an interaction -> who made it
        self.modals: dict[str, JSON] = {}  # view id -> the open modal (its `user` added)
        self.locales: dict[str, str] = {}  # user -> Slack locale ("zh-CN"); else "en-US"
        for method, handler in {
            "assistant.threads.setStatus": self.set_status,
            "assistant.threads.setSuggestedPrompts": self.set_prompts,
            "assistant.threads.setTitle": self.set_title, "views.publish": self.publish,
            "views.open": self.open_modal, "users.info": self.user_info,
        }.items():
            fake.add_method(method, handler)

    def statuses(self, channel: str) -> dict[str, str]:
        return {ts: t.status for (ch, ts), t in self.threads.items()
                if ch == channel and self._shown(t)}

    def status(self, channel: str, thread_ts: str) -> str:
        found = self.threads.get((channel, thread_ts))
        return found.status if found is not None and self._shown(found) else ""

    def _shown(self, thread: AssistantThread) -> bool:
        return bool(thread.status) and not self._expired(thread)

    def _expired(self, thread: AssistantThread) -> bool:
        return self.clock() - thread.status_set_at >= self.status_timeout_s

    def status_expired(self, channel: str, thread_ts: str) -> None:
        """Clear the status if its time is up (a timer calls this; so can a test that moved
        the clock), telling the listeners as Slack's clients see it disappear."""
        thread = self.threads.get((channel, thread_ts))
        if thread is None or not thread.status or not self._expired(thread):
            return
        thread.status = ""
        self.fake.announce(Change("status", channel, thread_ts, thread_ts, {"status": ""}))

    def _expire_later(self, channel: str, thread_ts: str) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # called outside a loop: a test checks the clock itself
            return
        loop.call_later(self.status_timeout_s, self.status_expired, channel, thread_ts)

    def thread(self, channel: str, thread_ts: str) -> AssistantThread:
        return self.threads.setdefault((channel, thread_ts), AssistantThread())

    def view(self, user: str) -> JSON | None:
        return self.views.get(user)

    def set_status(self, params: JSON) -> JSON:
        channel, thread_ts = _where(params)
        status = str(params.get("status", ""))[:STATUS_CHARS]
        thread = self.thread(channel, thread_ts)
        thread.status, thread.status_set_at = status, self.clock()
        self.fake.announce(Change("status", channel, thread_ts, thread_ts, {"status": status}))
        if status:
            self._expire_later(channel, thread_ts)
        return {}

    def set_prompts(self, params: JSON) -> JSON:
        channel, thread_ts = _where(params)
        prompts = json_argument(params.get("prompts"), "prompts")
        if not isinstance(prompts, list) or not 1 <= len(prompts) <= PROMPTS_MAX or not all(
                isinstance(p, dict) and isinstance(p.get("title"), str) and p["title"]
                and isinstance(p.get("message"), str) and p["message"] for p in prompts):
            raise SlackError("invalid_arguments",
                             f"prompts: 1 to {PROMPTS_MAX} objects with a title and a message")
        thread = self.thread(channel, thread_ts)
        thread.prompts = [{"title": p["title"], "message": p["message"]} for p in prompts]
        thread.prompts_title = str(params.get("title") or "")
        self._announce(channel, thread_ts, thread)
        return {}

    def set_title(self, params: JSON) -> JSON:
        channel, thread_ts = _where(params)
        title = str(params.get("title") or "")
        if not title:
            raise SlackError("invalid_arguments", "title is required")
        thread = self.thread(channel, thread_ts)
        thread.title = title
        self._announce(channel, thread_ts, thread)
        return {}

    def publish(self, params: JSON) -> JSON:
        """views.publish: the user's Home tab (a `home` view of at most 100 blocks); a `hash`
        that is not the current view's is a `hash_conflict`."""
        user = str(params.get("user_id") or "")
        if not user:
            raise SlackError("invalid_arguments", "user_id is required")
        view = json_argument(params.get("view"), "view")
        if not isinstance(view, dict) or view.get("type") != "home":
            raise SlackError("invalid_arguments", "view must be an object of type home")
        blocks = view.get("blocks")
        if not isinstance(blocks, list):
            raise SlackError("invalid_arguments", "view.blocks must be a list")
        check_view_blocks(blocks)
        current = self.views.get(user)
        given = params.get("hash")
        if given and current is not None and given != current["hash"]:
            raise SlackError("hash_conflict")
        published = {**view, "id": _view_id(user), "team_id": TEAM_ID,
                     "hash": hashlib.sha1(json.dumps(view, sort_keys=True).encode()).hexdigest(),
                     "app_id": "A0PLAYGROUND", "bot_id": "B0FAKEBOT"}
        self.views[user] = published
        self.fake.announce(Change("view", "", published["id"], None, published, user))
        return {"view": published}

    def user_info(self, params: JSON) -> JSON:
        """users.info (scope `users:read`): a person, with their `locale` when the call asks
        for it (`include_locale`), as Slack gives it."""
        if USERS_SCOPE not in self.fake.scopes:
            raise SlackError("missing_scope", needed=USERS_SCOPE,
                             provided=",".join(self.fake.scopes))
        user = str(params.get("user") or "")
        if not user.startswith("U"):
            raise SlackError("user_not_found")
        person: JSON = {"id": user, "team_id": TEAM_ID, "name": user.lower(), "is_bot": False}
        if str(params.get("include_locale")).lower() in ("true", "1"):
            person["locale"] = self.locales.get(user, "en-US")
        return {"user": person}

    def trigger(self, trigger_id: str, user: str) -> None:
        """An interaction was delivered with `trigger_id`: the app may open one modal with it."""
        self.triggers[trigger_id] = user

    def open_modal(self, params: JSON) -> JSON:
        """views.open: a `modal` view for the person whose interaction gave `trigger_id`
        (each trigger opens one modal); title at most 24 characters, input blocks checked."""
        user = self.triggers.pop(str(params.get("trigger_id") or ""), None)
        if user is None:
            raise SlackError("invalid_trigger_id")
        view = json_argument(params.get("view"), "view")
        if not isinstance(view, dict) or view.get("type") != "modal":
            raise SlackError("invalid_arguments", "view must be an object of type modal")
        title = view.get("title")
        if not isinstance(title, dict) or not 0 < len(str(title.get("text") or "")) \
                <= MODAL_TITLE:
            raise SlackError("invalid_arguments", f"title: 1 to {MODAL_TITLE} characters")
        if len(str(view.get("private_metadata") or "")) > METADATA_CHARS:
            raise SlackError("invalid_arguments", "private_metadata is too long")
        blocks = view.get("blocks")
        if not isinstance(blocks, list):
            raise SlackError("invalid_arguments", "view.blocks must be a list")
        check_view_blocks(blocks)
        for block in blocks:
            if block.get("type") == "input" and not isinstance(block.get("element"), dict):
                raise SlackError("invalid_arguments", "an input block needs an element")
        view_id = "V" + hashlib.sha1(f"{user}:{len(self.modals)}:{params.get('trigger_id')}"
                                     .encode()).hexdigest()[:10].upper()
        opened = {**view, "id": view_id, "team_id": TEAM_ID, "app_id": "A0PLAYGROUND",
                  "user": user, "state": {"values": {}}}
        self.modals[view_id] = opened
        self.fake.announce(Change("modal", "", view_id, None, opened, user))
        return {"view": opened}

    def close_modal(self, view_id: str) -> None:
        closed = self.modals.pop(view_id, None)
        if closed is not None:
            self.fake.announce(Change("modal", "", view_id, None, {"id": view_id,
                                                                  "closed": True},
                                      str(closed["user"])))

    def submission(self, view_id: str, values: dict[str, str]) -> JSON:
        """The `view_submission` payload of the open modal `view_id`, its inputs holding
        `values` (action id -> the text typed, or the value of the option chosen)."""
        view = self.modals.get(view_id)
        if view is None:
            raise SlackError("view_not_found")
        state: dict[str, JSON] = {}
        for block in view.get("blocks", []):
            element = block.get("element") if block.get("type") == "input" else None
            if not isinstance(element, dict):
                continue
            action = str(element.get("action_id") or "")
            given = values.get(action)
            if element.get("type") == "static_select":
                options = {str(o.get("value")): o for o in element.get("options", [])}
                chosen = options.get(given or "") or element.get("initial_option")
                state[str(block.get("block_id"))] = {action: {
                    "type": "static_select", "selected_option": chosen}}
            else:
                text = given if given is not None else element.get("initial_value")
                state[str(block.get("block_id"))] = {action: {
                    "type": str(element.get("type")), "value": text}}
        user = str(view["user"])
        return {"type": "view_submission", "team": {"id": TEAM_ID, "domain": "playground"},
                "user": {"id": user, "username": user.lower(), "team_id": TEAM_ID},
                "api_app_id": "A0PLAYGROUND", "token": "playground-verification-token",
                "trigger_id": f"{len(self.modals)}.submission",
                "view": {**{k: v for k, v in view.items() if k != "user"},
                         "state": {"values": state}},
                "response_urls": [], "is_enterprise_install": False, "enterprise": None}

    def _announce(self, channel: str, thread_ts: str, thread: AssistantThread) -> None:
        data = {"title": thread.title, "prompts": thread.prompts,
                "prompts_title": thread.prompts_title}
        self.fake.announce(Change("assistant", channel, thread_ts, thread_ts, data))


def _where(params: JSON) -> tuple[str, str]:
    channel, thread_ts = str(params.get("channel_id", "")), str(params.get("thread_ts", ""))
    if not channel or not thread_ts:
        raise SlackError("invalid_arguments", "channel_id and thread_ts are required")
    return channel, thread_ts



def _view_id(user: str) -> str:
    return "V" + hashlib.sha1(user.encode()).hexdigest()[:10].upper()
