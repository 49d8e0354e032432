"""Socket Mode for the local Slack fake: `apps.connections.open` (with the app-level token)
hands out a WebSocket URL on the fake's own server; `deliver` sends an envelope to the
connected app and waits for its acknowledgement, as Slack does.

Install it on the aiohttp application before the fake starts:
    app = web.Application(); socket = FakeSocketMode(fake, "xapp-…"); socket.install(app)
    await fake.start(app=app)
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from aiohttp import WSMsgType, web

from playground.fake_slack import FakeSlack

JSON = dict[str, Any]
SOCKET_PATH = "/socket-mode"


class FakeSocketMode:
    def __init__(self, fake: FakeSlack, app_token: str, app_id: str = "A0RED") -> None:
        self.fake = fake
        self.app_token = app_token
        self.app_id = app_id
        self.acks: list[JSON] = []
        self._sockets: list[web.WebSocketResponse] = []
        self._connected = asyncio.Event()
        self._pending: dict[str, asyncio.Future[JSON]] = {}

    def install(self, app: web.Application) -> None:
        app.router.add_get(SOCKET_PATH, self._socket)
        self.fake.add_method("apps.connections.open", self._open, token=self.app_token)

    def _open(self, params: JSON) -> JSON:
        return {"url": f"ws://127.0.0.1:{self.fake.port}{SOCKET_PATH}"}

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_json({"type": "hello", "num_connections": len(self._sockets) + 1,
                            "connection_info": {"app_id": self.app_id}})
        self._sockets.append(ws)
        self._connected.set()
        try:
            async for msg in ws:
                if msg.type == WSMsgType.TEXT:
                    self._acknowledged(json.loads(msg.data))
        finally:
            self._sockets.remove(ws)
            if not self._sockets:
                self._connected.clear()
        return ws

    def _acknowledged(self, ack: JSON) -> None:
        self.acks.append(ack)
        future = self._pending.pop(str(ack.get("envelope_id")), None)
        if future is not None and not future.done():
            future.set_result(ack)

    async def deliver(self, kind: str, payload: JSON, timeout_s: float = 5.0) -> JSON:
        """Send an `events_api` or `interactive` envelope; the app's ack (raises on timeout)."""
        await asyncio.wait_for(self._connected.wait(), timeout_s)
        envelope_id = uuid.uuid4().hex
        future: asyncio.Future[JSON] = asyncio.get_running_loop().create_future()
        self._pending[envelope_id] = future
        await self._sockets[-1].send_json({
            "envelope_id": envelope_id, "type": kind, "payload": payload,
            "accepts_response_payload": False, "retry_attempt": 0, "retry_reason": ""})
        return await asyncio.wait_for(future, timeout_s)

    async def close(self) -> None:
        for ws in list(self._sockets):
            await ws.close()
