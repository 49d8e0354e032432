"""Socket Mode: with SLACK_APP_TOKEN the bot opens a WebSocket (apps.connections.open with the
app-level token) and takes events and clicks from it, acknowledging each envelope."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from prometheus_client import REGISTRY

from bot.server import start_bot
from contract.keys import ACTIVE_KEY
from contract.queue import connect
from contract.redis_server import awaited
from playground.fake_slack import BOT_USER_ID, FakeSlack
from playground.fake_socket_mode import FakeSocketMode
from research_core.settings import Secret, Settings, SlackSettings, WorkerSettings
from tests.conftest import SLACK_TOKEN
from tests.slack_driver import ALICE, CHANNEL, buttons
from tests.slack_stack import wait_for

APP_TOKEN = "xapp-1-test"


@pytest.fixture
async def socket_fake() -> AsyncIterator[tuple[FakeSlack, FakeSocketMode]]:
    fake = FakeSlack(token=SLACK_TOKEN, post_interval=0.0)
    socket = FakeSocketMode(fake, APP_TOKEN)
    app = web.Application()
    socket.install(app)
    await fake.start(app=app)
    try:
        yield fake, socket
    finally:
        await socket.close()
        await fake.stop()


def envelope(msg_ts: str, text: str) -> dict[str, object]:
    return {"team_id": "T0FAKE", "api_app_id": "A0RED", "type": "event_callback",
            "event_id": f"Ev{msg_ts}", "event_time": int(time.time()),
            "authorizations": [{"team_id": "T0FAKE", "user_id": BOT_USER_ID, "is_bot": True}],
            "event": {"type": "app_mention", "user": ALICE, "text": text, "ts": msg_ts,
                      "channel": CHANNEL, "event_ts": msg_ts}}


async def test_events_and_clicks_arrive_over_socket_mode(
        socket_fake: tuple[FakeSlack, FakeSocketMode], redis_url: str, tmp_path: Path) -> None:
    fake, socket = socket_fake
    settings = dataclasses.replace(
        Settings(), data_dir=tmp_path,
        slack=SlackSettings(bot_token=Secret(SLACK_TOKEN), app_token=Secret(APP_TOKEN),
                            api_url=fake.base_url),
        worker=WorkerSettings(redis_url=redis_url))
    assert settings.slack.configured  # no signing secret needed in Socket Mode
    server = await start_bot(settings, redis_url, host="127.0.0.1", port=0)
    pool = await connect(redis_url)
    received = {kind: counted("redsearch_slack_events_received_total", type=kind)
                for kind in ("app_mention", "block_actions")}
    acked = counted("redsearch_slack_events_acked_total")
    try:
        assert server.socket is not None
        mention = fake.post_user_message(CHANNEL, ALICE, f"<@{BOT_USER_ID}> copper foil?")
        ack = await socket.deliver("events_api", envelope(mention.ts, mention.text))
        assert ack["envelope_id"]
        await wait_for(lambda: len(fake.messages(CHANNEL, mention.ts)) == 2, 10, "the picker")
        picker = fake.messages(CHANNEL, mention.ts)[1]
        assert buttons(picker) == ["depth_auto", "depth_standard", "depth_deep", "depth_preview"]
        click = {"type": "block_actions", "team": {"id": "T0FAKE"}, "api_app_id": "A0RED",
                 "user": {"id": ALICE}, "channel": {"id": CHANNEL}, "trigger_id": "1.2",
                 "container": {"type": "message", "message_ts": picker.ts},
                 "message": {"ts": picker.ts, "text": picker.text, "blocks": picker.blocks},
                 "actions": [{"type": "button", "action_id": "depth_standard", "block_id": "b",
                              "value": picker.blocks[1]["elements"][1]["value"]}]}
        await socket.deliver("interactive", click)
        await wait_for(lambda: fake.messages(CHANNEL, mention.ts)[1].text.startswith(
            "Depth: Standard"), 10, "the choice")
        active = await awaited(pool.hgetall(ACTIVE_KEY))
        assert [json.loads(v)["kind"] for v in active.values()] == ["research"]
        # counted as over HTTP (bot.metrics): received by type, and acked
        for kind, before in received.items():
            assert counted("redsearch_slack_events_received_total", type=kind) == before + 1
        assert counted("redsearch_slack_events_acked_total") == acked + 2
        assert any(c.method == "apps.connections.open" for c in fake.calls())
    finally:
        await server.stop()
        await pool.aclose()


def counted(name: str, **labels: str) -> float:
    """The sum of this process's samples `name` with `labels`."""
    return sum(s.value for family in REGISTRY.collect() for s in family.samples
               if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()))
