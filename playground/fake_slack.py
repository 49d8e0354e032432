"""A local fake of the Slack Web API over aiohttp, for the tests and the browser playground.

It serves `/api/<method>` like Slack: form-encoded or JSON bodies, a bearer token, HTTP 200 with
`ok`/`error`, `ts` values that strictly increase, and HTTP 429 with `Retry-After` when a channel
is posted to (`chat.postMessage`, `chat.startStream`) faster than once a second. Every call is
recorded and every change is announced to listeners (the playground streams them).

The methods live by concern: messages and threads (`fake_slack_chat`), text streaming
(`fake_slack_streams`), the assistant container and the Home tab (`fake_slack_surfaces`), the
Real-time Search API (`fake_slack_search`), files (`fake_slack_files`), canvases
(`fake_slack_canvases`); blocks are checked against Slack's limits (`fake_slack_blocks`).
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from playground.fake_slack_canvases import FakeCanvases
from playground.fake_slack_chat import FakeChat
from playground.fake_slack_faults import FAULTS, STATUS, faulted
from playground.fake_slack_files import FakeFiles
from playground.fake_slack_messages import (
    BOT_ID,
    BOT_USER_ID,
    JSON,
    TEAM_ID,
    Call,
    Change,
    Message,
    SlackError,
)
from playground.fake_slack_oauth import FakeOAuth
from playground.fake_slack_search import FakeSearch
from playground.fake_slack_streams import FakeStreams
from playground.fake_slack_surfaces import FakeSurfaces

Listener = Callable[[Change], None]
PACED = ("chat.postMessage", "chat.startStream")  # each posts a message to a channel
# The bot scopes the app was installed with (manifest.yml's): like Slack, every answer to a
# known token says them in its X-OAuth-Scopes header (`redsearch doctor` reads them).
GRANTED_SCOPES = ("app_mentions:read", "chat:write", "channels:history", "groups:history",
                  "im:history", "assistant:write", "commands", "files:write", "files:read",
                  "canvases:write", "users:read")


class FakeSlack:
    """The fake workspace and its Web API server; `start()` it, point clients at `base_url`.

    `stream_idle_s` / `stream_lifetime_s`: a streamed message expires when appends pause that
    long, or that long after it started (Slack ends streams after about five minutes);
    `status_timeout_s`: an assistant thread's loading status clears itself that long after it
    was last set (Slack: two minutes)."""

    def __init__(self, token: str = "xoxb-fake-token", post_interval: float = 1.0,
                 stream_idle_s: float = 60.0, stream_lifetime_s: float = 300.0,
                 status_timeout_s: float = 120.0) -> None:
        self.token = token
        self.scopes: tuple[str, ...] = GRANTED_SCOPES  # what auth.test's header says
        self.post_interval = post_interval
        self.permalink_base = "https://fake.slack.test"
        self._messages: dict[tuple[str, str], Message] = {}
        self._ephemeral: dict[str, Message] = {}
        self._calls: list[Call] = []
        self._last_post: dict[str, float] = {}
        self._forced: list[tuple[str | None, int, int]] = []
        self._faults: list[tuple[str | None, str, int]] = []
        self._failures: dict[str, str] = {}
        self._listeners: list[Listener] = []
        self._last_ts = 0
        self._runner: web.AppRunner | None = None
        self._port = 0
        self._handlers: dict[str, Callable[[JSON], JSON]] = {"auth.test": self._auth_test}
        self._method_tokens: dict[str, str] = {}
        self.team_tokens: dict[str, str] = {}  # more workspaces (OAuth): bot token -> team
        self.channel_teams: dict[str, str] = {}  # a channel only its own team's token reaches
        self.oauth: FakeOAuth | None = None  # serves oauth.v2.access once installed
        self.chat = FakeChat(self)
        self.streams = FakeStreams(self, stream_idle_s, stream_lifetime_s)
        self.surfaces = FakeSurfaces(self, status_timeout_s)
        self.search = FakeSearch(self)  # assistant.search.context, conversations.info
        self.files = FakeFiles(self)
        self.canvases = FakeCanvases(self)  # canvases.*; files.info describes them too

    # -- server lifecycle ---------------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 0,
                    app: web.Application | None = None) -> None:
        """Serve the Web API at `/api/<method>`, on `app` when given (the playground adds its
        own routes to the same server)."""
        app = app if app is not None else web.Application()
        app.router.add_route("*", "/api/{method}", self._handle)
        self.files.routes(app)
        self.canvases.routes(app)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        self._port = int(self._runner.addresses[0][1])

    def add_method(self, method: str, handler: Callable[[JSON], JSON],
                   token: str | None = None) -> None:
        """Serve one more Web API method; `token`: the one it takes instead of the bot token
        (apps.* methods take the app-level token)."""
        self._handlers[method] = handler
        if token is not None:
            self._method_tokens[method] = token

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeSlack:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def port(self) -> int:
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._port}/api/"

    # -- helpers for tests and the playground ----------------------------------------------

    def messages(self, channel: str, thread_ts: str | None = None) -> list[Message]:
        """The channel's messages in ts order; with thread_ts, the thread (parent first)."""
        found = [m for (ch, _), m in self._messages.items() if ch == channel and (
            thread_ts is None or m.ts == thread_ts or m.thread_ts == thread_ts)]
        return sorted(found, key=lambda m: float(m.ts))

    def conversations(self) -> set[str]:
        """The channels that hold a message."""
        return {channel for (channel, _) in self._messages}

    def message(self, channel: str, ts: str) -> Message | None:
        return self._messages.get((channel, ts))

    def ephemerals(self, channel: str, user: str | None = None) -> list[Message]:
        return [m for m in self._ephemeral.values()
                if m.channel == channel and (user is None or m.ephemeral_for == user)]

    def ephemeral(self, ts: str) -> Message | None:
        return self._ephemeral.get(ts)

    def statuses(self, channel: str) -> dict[str, str]:
        """The assistant status of every thread of the channel that has one set."""
        return self.surfaces.statuses(channel)

    def status(self, channel: str, thread_ts: str) -> str:
        return self.surfaces.status(channel, thread_ts)

    def calls(self, method: str | None = None) -> list[Call]:
        return [c for c in self._calls if method is None or c.method == method]

    def force_ratelimit(self, count: int = 1, method: str | None = None,
                        retry_after: int = 1) -> None:
        """Answer the next `count` calls (of `method`, or any) with HTTP 429 and Retry-After."""
        self._forced.append((method, count, retry_after))

    def fault(self, kind: str, method: str | None = None, count: int = 1) -> None:
        """Answer the next `count` calls (of `method`, or any) with fault `kind` (one of
        `playground.fake_slack_faults.FAULTS`: an HTML 502, a text 405, an empty or a
        truncated JSON 200, a connection reset) instead of Slack's JSON."""
        if kind not in FAULTS:
            raise ValueError(f"unknown fault {kind!r}; one of {', '.join(FAULTS)}")
        self._faults.append((method, kind, count))

    def _faulted(self, method: str) -> str | None:
        for i, (only, kind, count) in enumerate(self._faults):
            if only is None or only == method:
                self._faults[i] = (only, kind, count - 1)
                self._faults = [f for f in self._faults if f[2] > 0]
                return kind
        return None

    def fail(self, method: str, error: str | None) -> None:
        """Make `method` answer `ok: false` with `error` (None: behave again)."""
        if error is None:
            self._failures.pop(method, None)
        else:
            self._failures[method] = error

    def add_listener(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` on every change; returns a function that removes it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def subscribe(self) -> tuple[asyncio.Queue[Change], Callable[[], None]]:
        """A queue that receives every change, and the function that stops it."""
        queue: asyncio.Queue[Change] = asyncio.Queue()
        return queue, self.add_listener(queue.put_nowait)

    def post_user_message(self, channel: str, user: str, text: str,
                          thread_ts: str | None = None,
                          blocks: list[JSON] | None = None) -> Message:
        """A person writes in the channel (the playground's message box)."""
        msg = Message(channel, self.next_ts(), text, blocks or [], thread_ts, user=user,
                      bot_id=None)
        self.store(msg)
        return msg

    def call(self, method: str, **params: Any) -> JSON:
        """Run a Web API method as the bot, in-process and without pacing (a response_url does
        this); raises SlackError on `ok: false`."""
        return self._dispatch(method, params, self.token)

    # -- the workspace, for the method modules ------------------------------------------------

    def store(self, msg: Message, kind: str = "posted") -> None:
        """Keep a new message (or an ephemeral one) and announce it."""
        if msg.ephemeral_for is not None:
            self._ephemeral[msg.ts] = msg
        else:
            self._messages[(msg.channel, msg.ts)] = msg
        self.emit(kind, msg)

    def forget(self, channel: str, ts: str) -> Message | None:
        msg = self._messages.pop((channel, ts), None)
        if msg is not None:
            self.emit("deleted", msg)
        return msg

    def thread_root(self, channel: str, thread_ts: str | None) -> str | None:
        """The ts of the thread a reply to `thread_ts` goes in (a reply's own thread)."""
        if thread_ts is None:
            return None
        parent = self._messages.get((channel, thread_ts))
        if parent is None:
            raise SlackError("thread_not_found")
        return parent.thread_ts or thread_ts

    def posted_to(self, channel: str) -> None:
        self._last_post[channel] = time.monotonic()

    def next_ts(self) -> str:
        micros = max(int(time.time() * 1_000_000), self._last_ts + 1)
        self._last_ts = micros
        return f"{micros // 1_000_000}.{micros % 1_000_000:06d}"

    def emit(self, kind: str, msg: Message) -> None:
        change = Change(kind, msg.channel, msg.ts, msg.thread_ts, msg.to_dict(),
                        msg.ephemeral_for, streaming=self.streams.live(msg))
        self.announce(change)

    def announce(self, change: Change) -> None:
        for listener in list(self._listeners):
            listener(change)

    # -- request handling ---------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        method = request.match_info["method"]
        params = await self._params(request)
        if method == "oauth.v2.access" and self.oauth is not None:  # client credentials
            call = Call(method, params, time.time())
            self._calls.append(call)
            return web.json_response(self.oauth.access(params, request.headers))
        token = self._token(request, params)
        call = Call(method, params, time.time(), team=self.team_of(token))
        self._calls.append(call)
        fault = self._faulted(method)
        if fault is not None:
            call.status, call.error = STATUS[fault], fault
            return faulted(request, fault)
        retry_after = self._ratelimited(method, params)
        if retry_after is not None:
            call.status, call.error = 429, "ratelimited"
            return web.json_response({"ok": False, "error": "ratelimited"}, status=429,
                                     headers={"Retry-After": str(retry_after)})
        try:
            body = self._dispatch(method, params, token)
        except SlackError as exc:
            call.error = exc.error
            body = exc.body()
        scopes = {"X-OAuth-Scopes": ",".join(self.scopes)} if self.team_of(token) else {}
        return web.json_response(body, headers=scopes)

    @staticmethod
    async def _params(request: web.Request) -> JSON:
        params: JSON = dict(request.query)
        if request.content_type == "application/json":
            raw = await request.text()
            params.update(json.loads(raw) if raw else {})
        elif request.can_read_body:
            params.update({k: v for k, v in (await request.post()).items()
                           if isinstance(v, str)})
        return params

    @staticmethod
    def _token(request: web.Request, params: JSON) -> str | None:
        auth = request.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            return auth[len("Bearer "):]
        token = params.pop("token", None)
        return str(token) if token else None

    def _ratelimited(self, method: str, params: JSON) -> int | None:
        for i, (only, count, retry_after) in enumerate(self._forced):
            if only is None or only == method:
                self._forced[i] = (only, count - 1, retry_after)
                self._forced = [f for f in self._forced if f[1] > 0]
                return retry_after
        if method not in PACED or self.post_interval <= 0:
            return None
        last = self._last_post.get(str(params.get("channel", "")))
        wait = 0.0 if last is None else last + self.post_interval - time.monotonic()
        return max(1, math.ceil(wait)) if wait > 0 else None

    def _dispatch(self, method: str, params: JSON, token: str | None) -> JSON:
        if not token:
            raise SlackError("not_authed")
        team = self.team_tokens.get(token) if method not in self._method_tokens else None
        if token != self._method_tokens.get(method, self.token) and team is None:
            raise SlackError("invalid_auth")
        owner = self.channel_teams.get(str(params.get("channel") or ""))
        if owner is not None and owner != self.team_of(token):
            raise SlackError("channel_not_found")  # another workspace's channel
        if team is not None and method == "auth.test":
            return {"ok": True, **self._auth_test(params), "team_id": team, "team": team}
        handler = self._handlers.get(method)
        if handler is None:
            raise SlackError("unknown_method")
        if method in self._failures:
            raise SlackError(self._failures[method])
        return {"ok": True, **handler(params)}

    def team_of(self, token: str | None) -> str:
        """The workspace a token belongs to ("" for none)."""
        if token and token in self.team_tokens:
            return self.team_tokens[token]
        return TEAM_ID if token == self.token else ""

    def _auth_test(self, params: JSON) -> JSON:
        return {"url": f"{self.permalink_base}/", "team": "Fake", "user": "red",
                "team_id": TEAM_ID, "user_id": BOT_USER_ID, "bot_id": BOT_ID}


__all__ = ["BOT_ID", "BOT_USER_ID", "TEAM_ID", "Call", "Change", "FakeSlack", "Message",
           "SlackError"]
