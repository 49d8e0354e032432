"""What the playground page does beyond messages and clicks: a slash command typed in the
composer (`/research deep …`), the "Research this" message shortcut, and opening the app's
Home tab. Each is delivered to the bot as Slack delivers it (a signed slash-command form, a
`message_action` payload, an `app_home_opened` event); a command's synchronous answer is shown
to the person who typed it, as Slack shows it, and an unknown command is refused locally.
A thread's permalink (`/archives/<channel>/p<ts>`) opens the thread on the page.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

from aiohttp import web

from playground.deliveries import Delivery
from playground.payloads import (
    command_form,
    event_envelope,
    home_opened_event,
    message_action_payload,
)
from playground.ui_http import PlaygroundError, Responder, error, json_body

if TYPE_CHECKING:
    from playground.server import Playground

COMMANDS = ("/research",)
SHORTCUTS = {"research_this": "Research this"}


class AgentUI:
    def __init__(self, pg: Playground) -> None:
        self.pg = pg
        self._answered: set[int] = set()

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/ui/command", self._command)
        app.router.add_post("/ui/shortcut", self._shortcut)
        app.router.add_post("/ui/home", self._home)
        app.router.add_get("/archives/{channel}/{message}", self._permalink)

    # -- what a person does ------------------------------------------------------------------

    def command(self, user: str, text: str) -> Delivery | None:
        """`user` sends `/command text` from the composer (None: Slack refused it)."""
        self.pg.check_user(user)
        name, _, rest = text.strip().partition(" ")
        if name not in COMMANDS:
            self.pg.fake.call("chat.postEphemeral", channel=self.pg.channel, user=user,
                              text=f"{name} is not a valid command. In this workspace: "
                                   + ", ".join(COMMANDS))
            return None
        url = self.pg.response_url(Responder(user, self.pg.channel))
        form = command_form(name, rest.strip(), user, self.pg.users[user], self.pg.channel,
                            self.pg.channel_name, url)
        return self.pg.deliverer.send_command(form)

    def shortcut(self, user: str, message_ts: str, callback_id: str) -> Delivery:
        """`user` runs a message shortcut on the message `message_ts`."""
        self.pg.check_user(user)
        msg = self.pg.fake.message(self.pg.channel, message_ts)
        if msg is None:
            raise PlaygroundError(404, "message_not_found")
        if callback_id not in SHORTCUTS:
            raise PlaygroundError(404, "shortcut_not_found")
        url = self.pg.response_url(Responder.of(msg, user))
        payload = message_action_payload(msg, callback_id, user, self.pg.users[user],
                                         self.pg.channel_name, url)
        return self.pg.deliverer.send_interaction(payload)

    def open_home(self, user: str) -> Delivery:
        """`user` opens the app's Home tab."""
        self.pg.check_user(user)
        event = home_opened_event(user, "D" + user.removeprefix("U"))
        return self.pg.deliverer.send_event(event_envelope(event))

    def on_delivery(self, delivery: Delivery) -> None:
        """A delivered command's answer (`ack(text=…)`) is shown to the person who sent it."""
        if delivery.kind != "command" or not delivery.done or id(delivery) in self._answered:
            return
        self._answered.add(id(delivery))
        try:
            answer = json.loads(delivery.reply) if delivery.reply else {}
        except ValueError:
            answer = {"text": delivery.reply}
        user = _field(delivery.body, "user_id")
        if isinstance(answer, dict) and answer.get("text") and user:
            self.pg.fake.call("chat.postEphemeral", channel=self.pg.channel, user=user,
                              text=str(answer["text"]))

    # -- HTTP ------------------------------------------------------------------------------

    async def _command(self, request: web.Request) -> web.Response:
        try:
            body = await json_body(request)
            self.pg.check_channel(body)
            sent = self.command(str(body.get("user") or ""), str(body.get("text") or ""))
        except PlaygroundError as exc:
            return error(exc)
        return web.json_response({"ok": True, "delivered": sent is not None})

    async def _shortcut(self, request: web.Request) -> web.Response:
        try:
            body = await json_body(request)
            self.pg.check_channel(body)
            self.shortcut(str(body.get("user") or ""), str(body.get("message_ts") or ""),
                          str(body.get("callback_id") or ""))
        except PlaygroundError as exc:
            return error(exc)
        return web.json_response({"ok": True})

    async def _home(self, request: web.Request) -> web.Response:
        try:
            body = await json_body(request)
            self.open_home(str(body.get("user") or ""))
        except PlaygroundError as exc:
            return error(exc)
        return web.json_response({"ok": True})

    async def _permalink(self, request: web.Request) -> web.Response:
        """A thread's permalink: the page, with that thread open."""
        digits = request.match_info["message"].removeprefix("p")
        thread = request.query.get("thread_ts") or f"{digits[:-6]}.{digits[-6:]}"
        raise web.HTTPFound(f"/#thread={thread}")


def _field(form: str, name: str) -> str:
    values = parse_qs(form).get(name) or [""]
    return values[0]


__all__ = ["COMMANDS", "SHORTCUTS", "AgentUI"]
