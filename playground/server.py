"""The local playground: a Slack channel in the browser, for trying the bot without Slack.

One aiohttp server holds the fake Slack workspace (`FakeSlack`, whose Web API the bot calls at
`<url>/api/`) and the page. A message typed on the page is stored as a person's message and
delivered to the bot as a signed Events API callback (`message`, plus `app_mention` when it
mentions the bot); a button click (feedback buttons included) is delivered as a signed
`block_actions` interaction; slash commands, the message shortcut and the Home tab are in
`playground.agent_ui`. Changes reach every open tab through server-sent events (a Home tab
only its person's); `/ui/state` restores a page after a reload.

    playground = Playground(bot_url="http://127.0.0.1:3000/slack/events",
                            signing_secret=secret, token=bot_token)
    await playground.start("127.0.0.1", 8080)   # the bot's SLACK_API_URL: playground.api_url
    ...
    await playground.stop()
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from pathlib import Path

from aiohttp import web

from playground.agent_ui import AgentUI
from playground.deliveries import CONNECTION_FAILED, TIMEOUT, Deliverer, Delivery
from playground.fake_slack import BOT_USER_ID, Change, FakeSlack, Message, SlackError
from playground.payloads import (
    block_actions_payload,
    event_envelope,
    find_action,
    mentions_bot,
    rich_text_blocks,
    user_event,
)
from playground.ui_http import (
    JSON,
    PlaygroundError,
    Responder,
    Update,
    ephemeral_dict,
    error,
    json_body,
    response_call,
)

STATIC_DIR = Path(__file__).parent / "static"
BOT_NAME = "RED Searcher"
DEFAULT_USERS = {"U0ALICE": "Alice", "U0BOB": "Bob", "U0CAROL": "Carol"}
DEFAULT_LOCALES = {"U0CAROL": "zh-CN"}  # Slack's locale of each (users.info); else en-US
TEXT_LIMIT = 40_000
RESPONSE_URLS_KEPT = 1000  # response_urls of the newest clicks; older ones answer expired_url
NOTICES_KEPT = 20
VIEW_ANSWER_S = 5.0  # how long a view submission waits for the app (Slack: 3 s)


class Playground:
    """The fake workspace, its Web API and the browser page on one aiohttp server."""

    def __init__(self, bot_url: str, signing_secret: str, token: str,
                 channel: str = "C0PLAYGROUND", *, channel_name: str = "research",
                 users: dict[str, str] | None = None, post_interval: float = 1.0,
                 ack_timeout_s: float = 3.0, down_retry_s: float = 1.0,
                 heartbeat_s: float = 15.0) -> None:
        self.channel = channel
        self.channel_name = channel_name
        self.users = dict(users or DEFAULT_USERS)
        self.heartbeat_s = heartbeat_s
        self.fake = FakeSlack(token=token, post_interval=post_interval)
        self.fake.surfaces.locales.update(DEFAULT_LOCALES)  # Carol's Home tab is Chinese
        self.fake.search.add_channel(channel, channel_name)  # the app may search it, once
        self.fake.search.scopes |= {"search:read.public", "channels:read"}  # the policy says
        self.deliverer = Deliverer(bot_url, signing_secret, ack_timeout_s=ack_timeout_s,
                                   down_retry_s=down_retry_s, notify=self._on_delivery)
        self._seq = 0
        self._streams: set[asyncio.Queue[Update | None]] = set()
        self._responses: dict[str, Responder] = {}
        self.agent_ui = AgentUI(self)
        self._notices: list[JSON] = []
        self._unlisten = self.fake.add_listener(self._on_change)
        self._host = "127.0.0.1"
        self._port = 0

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        app = web.Application()
        app.router.add_get("/", self._index)
        app.router.add_static("/static/", STATIC_DIR)
        app.router.add_get("/ui/state", self._state)
        app.router.add_get("/ui/stream", self._stream)
        app.router.add_post("/ui/message", self._message)
        app.router.add_post("/ui/action", self._action)
        app.router.add_post("/ui/respond/{token}", self._respond)
        app.router.add_post("/ui/view", self._view)
        app.router.add_post("/ui/view/close", self._view_close)
        self.agent_ui.routes(app)
        app.on_shutdown.append(self._end_streams)
        await self.fake.start(host, port, app=app)
        self._host = "127.0.0.1" if host in ("0.0.0.0", "") else host
        self._port = self.fake.port
        self.fake.permalink_base = self.url  # a thread's link opens it on the page

    async def stop(self) -> None:
        """End the streams, cancel pending deliveries, close the server."""
        await self._end_streams()
        await self.deliverer.close()
        await self.fake.stop()
        self._unlisten()

    async def __aenter__(self) -> Playground:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def url(self) -> str:
        return f"http://{self._host}:{self._port}"

    @property
    def api_url(self) -> str:
        """The Slack Web API base URL for the bot (its SLACK_API_URL)."""
        return f"{self.url}/api/"

    # -- what a person does (the page calls these through /ui/…) ------------------------------

    def say(self, user: str, text: str, thread_ts: str | None = None) -> tuple[Message,
                                                                            list[Delivery]]:
        """`user` writes `text` (in the thread `thread_ts`); Slack delivers a `message` event
        and, when the text mentions the bot, an `app_mention` event."""
        self.check_user(user)
        text = text.strip()
        if not text:
            raise PlaygroundError(400, "no_text")
        if len(text) > TEXT_LIMIT:
            raise PlaygroundError(400, "msg_too_long")
        parent_user = None
        if thread_ts:
            parent = self.fake.message(self.channel, thread_ts)
            if parent is None:
                raise PlaygroundError(404, "thread_not_found")
            thread_ts = parent.thread_ts or parent.ts
            root = self.fake.message(self.channel, thread_ts)
            parent_user = root.user if root else None
        msg = self.fake.post_user_message(self.channel, user, text, thread_ts or None,
                                          blocks=rich_text_blocks(text))
        kinds = ["message", "app_mention"] if mentions_bot(text) else ["message"]
        token = self.fake.search.issue(user)
        sent = [self.deliverer.send_event(event_envelope(user_event(msg, kind, parent_user,
                                                                    token)))
                for kind in kinds]
        return msg, sent

    def click(self, user: str, message_ts: str, action_id: str,
              block_id: str = "", value: str = "") -> Delivery:
        """`user` clicks the element `action_id` of message `message_ts` (a feedback button:
        the one with `value`); Slack delivers a `block_actions` interaction built from the
        stored message."""
        self.check_user(user)
        msg = self.fake.message(self.channel, message_ts) or self.fake.ephemeral(message_ts)
        if msg is None or (msg.ephemeral_for not in (None, user)):
            raise PlaygroundError(404, "message_not_found")
        found = find_action(msg, action_id, block_id, value)
        if found is None:
            raise PlaygroundError(404, "action_not_found")
        url = self.response_url(Responder.of(msg, user))
        payload = block_actions_payload(msg, found[1], found[0], user, self.users[user],
                                        self.channel_name, url)
        self.fake.surfaces.trigger(str(payload["trigger_id"]), user)  # it may open a modal
        return self.deliverer.send_interaction(payload)

    async def submit_view(self, user: str, view_id: str, values: dict[str, str]) -> JSON:
        """`user` presses the submit button of their open modal: Slack delivers a
        `view_submission` and waits for the app's answer; `errors` keep the modal open (shown
        under their inputs), anything else closes it."""
        self.check_user(user)
        modal = self.fake.surfaces.modals.get(view_id)
        if modal is None or modal.get("user") != user:
            raise PlaygroundError(404, "view_not_found")
        delivery = self.deliverer.send_interaction(self.fake.surfaces.submission(view_id,
                                                                                 values))
        deadline = time.monotonic() + VIEW_ANSWER_S
        while not delivery.done and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        if not delivery.delivered:
            raise PlaygroundError(502, "the app did not answer the submission")
        answer = json.loads(delivery.reply) if delivery.reply.strip() else {}
        if isinstance(answer, dict) and answer.get("response_action") == "errors":
            return {"errors": answer.get("errors") or {}}
        self.fake.surfaces.close_modal(view_id)
        return {"closed": True}

    def response_url(self, responder: Responder) -> str:
        """A fresh `response_url` answering to `responder` (the newest ones are kept)."""
        token = secrets.token_urlsafe(16)
        self._responses[token] = responder
        while len(self._responses) > RESPONSE_URLS_KEPT:
            del self._responses[next(iter(self._responses))]
        return f"{self.url}/ui/respond/{token}"

    def notice(self, text: str) -> None:
        """A line about the service itself (a worker restarted), shown above the channel."""
        entry = {"at": time.time(), "text": text}
        self._notices = [*self._notices, entry][-NOTICES_KEPT:]
        self._publish({"kind": "notice", **entry}, None)

    def state(self, user: str | None) -> JSON:
        """Everything the page shows to `user`: messages (those still streaming marked so),
        their ephemerals, statuses and their Home tab."""
        messages = [{**m.to_dict(), "streaming": self.fake.streams.live(m)}
                    for m in self.fake.messages(self.channel)]
        ephemerals = [ephemeral_dict(m) for m in self.fake.ephemerals(self.channel, user)
                      ] if user else []
        return {"seq": self._seq, "channel": {"id": self.channel, "name": self.channel_name},
                "bot": {"user_id": BOT_USER_ID, "name": BOT_NAME}, "users": self.users,
                "messages": messages, "ephemerals": ephemerals,
                "statuses": self.fake.statuses(self.channel), "delivery": self._delivery(),
                "notices": list(self._notices),
                "home": self.fake.surfaces.view(user) if user else None,
                "modal": next((m for m in reversed(self.fake.surfaces.modals.values())
                               if m.get("user") == user), None) if user else None}

    # -- HTTP handlers -----------------------------------------------------------------------------

    async def _index(self, request: web.Request) -> web.FileResponse:
        return web.FileResponse(STATIC_DIR / "index.html")

    async def _state(self, request: web.Request) -> web.Response:
        return web.json_response(self.state(request.query.get("user")))

    async def _message(self, request: web.Request) -> web.Response:
        try:
            body = await json_body(request)
            self.check_channel(body)
            msg, sent = self.say(str(body.get("user") or ""), str(body.get("text") or ""),
                                 str(body.get("thread_ts") or "") or None)
        except PlaygroundError as exc:
            return error(exc)
        return web.json_response({"ok": True, "ts": msg.ts,
                                  "event_ids": [d.key for d in sent]})

    async def _action(self, request: web.Request) -> web.Response:
        try:
            body = await json_body(request)
            self.check_channel(body)
            self.click(str(body.get("user") or ""), str(body.get("message_ts") or ""),
                       str(body.get("action_id") or ""), str(body.get("block_id") or ""),
                       str(body.get("value") or ""))
        except PlaygroundError as exc:
            return error(exc)
        return web.json_response({"ok": True})

    async def _view(self, request: web.Request) -> web.Response:
        try:
            body = await json_body(request)
            values = body.get("values") or {}
            answer = await self.submit_view(
                str(body.get("user") or ""), str(body.get("view_id") or ""),
                {str(k): str(v) for k, v in values.items()} if isinstance(values, dict)
                else {})
        except PlaygroundError as exc:
            return error(exc)
        return web.json_response({"ok": True, **answer})

    async def _view_close(self, request: web.Request) -> web.Response:
        try:
            body = await json_body(request)
            user, view_id = str(body.get("user") or ""), str(body.get("view_id") or "")
            self.check_user(user)
            modal = self.fake.surfaces.modals.get(view_id)
            if modal is None or modal.get("user") != user:
                raise PlaygroundError(404, "view_not_found")
        except PlaygroundError as exc:
            return error(exc)
        self.fake.surfaces.close_modal(view_id)
        return web.json_response({"ok": True})

    async def _respond(self, request: web.Request) -> web.Response:
        """A `response_url`: reply to the click ephemerally, in the thread, replace or delete."""
        found = self._responses.get(request.match_info["token"])
        if found is None:
            return web.json_response({"ok": False, "error": "expired_url"}, status=404)
        try:
            method, params = response_call(await json_body(request), found)
            self.fake.call(method, **params)
        except PlaygroundError as exc:
            return error(exc)
        except SlackError as exc:
            return web.json_response({"ok": False, "error": exc.error}, status=400)
        return web.json_response({"ok": True})

    async def _stream(self, request: web.Request) -> web.StreamResponse:
        user = request.query.get("user")
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                           "Cache-Control": "no-cache"})
        await resp.prepare(request)
        queue: asyncio.Queue[Update | None] = asyncio.Queue()
        self._streams.add(queue)
        try:
            await resp.write(b"retry: 1000\n\n")
            while (update := await self._next(queue, resp)) is not None:
                if update.visible_to(user):
                    data = json.dumps(update.data, ensure_ascii=False)
                    await resp.write(f"id: {update.seq}\ndata: {data}\n\n".encode())
        except ConnectionResetError:
            pass  # the tab went away
        finally:
            self._streams.discard(queue)
        return resp

    async def _next(self, queue: asyncio.Queue[Update | None],
                    resp: web.StreamResponse) -> Update | None:
        """The next update for a stream, writing heartbeats while there is none."""
        while True:
            try:
                return await asyncio.wait_for(queue.get(), self.heartbeat_s)
            except TimeoutError:
                await resp.write(b": heartbeat\n\n")

    async def _end_streams(self, app: web.Application | None = None) -> None:
        for queue in list(self._streams):
            queue.put_nowait(None)
        for _ in range(100):
            if not self._streams:
                return
            await asyncio.sleep(0.01)

    # -- change feed -----------------------------------------------------------------------------

    def _on_change(self, change: Change) -> None:
        if change.kind == "view":  # a Home tab: only its person sees it
            self._publish({"kind": "view", "view": change.data}, change.ephemeral_for)
            return
        if change.kind == "modal":  # a modal opened or closed: its person's only
            self._publish({"kind": "modal", "view": change.data}, change.ephemeral_for)
            return
        if change.channel != self.channel or change.kind == "assistant":
            return
        data: JSON = {"kind": change.kind, "ts": change.ts, "thread_ts": change.thread_ts}
        if change.kind == "status":
            data["status"] = change.data.get("status", "")
        else:
            data["message"] = {**change.data, "streaming": change.streaming}
            if change.ephemeral_for:
                data["message"]["ephemeral_for"] = change.ephemeral_for
        self._publish(data, change.ephemeral_for)

    def _on_delivery(self, delivery: Delivery) -> None:
        self.agent_ui.on_delivery(delivery)
        self._publish({"kind": "delivery", **self._delivery()}, None)

    def _publish(self, data: JSON, ephemeral_for: str | None) -> None:
        self._seq += 1
        update = Update(self._seq, {"seq": self._seq, **data}, ephemeral_for)
        for queue in list(self._streams):
            queue.put_nowait(update)

    def _delivery(self) -> JSON:
        """How many deliveries wait for a bot that does not answer (the page shows a banner
        meanwhile); an answer that is an error is the bot's to explain, not a banner's."""
        failing = [d.retrying for d in self.deliverer.deliveries
                   if d.retrying in (CONNECTION_FAILED, TIMEOUT)]
        return {"retrying": len(failing), "reason": failing[-1] if failing else None}

    # -- checks ---------------------------------------------------------------------------------

    def check_user(self, user: str) -> None:
        if user not in self.users:
            raise PlaygroundError(400, "user_not_found")

    def check_channel(self, body: JSON) -> None:
        if str(body.get("channel") or self.channel) != self.channel:
            raise PlaygroundError(404, "channel_not_found")


__all__ = ["BOT_NAME", "DEFAULT_USERS", "Playground", "PlaygroundError"]
