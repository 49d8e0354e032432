"""Many workspaces: the app installed into two teams through Slack's OAuth flow (the fake
Slack serves `oauth.v2.access`), slack-bolt's SQLAlchemy installation and state stores on the
project's database, and two teams' runs in the same worker that never see each other's
threads, tokens or evidence (each team's token reaches only its own channels in the fake)."""

from __future__ import annotations

import asyncio
import dataclasses
import urllib.parse
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from arq.connections import ArqRedis
from sqlalchemy.ext.asyncio import create_async_engine

from bot.app import build_app, web_app
from bot.oauth import INSTALL_PATH, REDIRECT_PATH, oauth_settings
from contract.queue import JobQueue, connect
from contract.requests import Requests
from playground.fake_slack import BOT_USER_ID, FakeSlack, Message
from playground.fake_slack_oauth import FakeOAuth
from research_core.settings import Secret, Settings
from research_core.store.restore import load_state
from research_core.store.sql import SqlStore
from tests.conftest import RecordingBackend
from tests.engine_run import Serve, default_similarity
from tests.slack_driver import ALICE, BOB, SECRET, SlackDriver
from tests.slack_stack import flow_settings, header, wait_for
from tests.test_watch_cycle import watch_script
from workers.worker import run_worker

CLIENT_ID, CLIENT_SECRET = "1234.5678", "client-secret"
TEAMS = {"T0AAA": "C0TEAMA", "T0BBB": "C0TEAMB"}
QUESTION = "How did heat pump sales and prices move in 2026?"
# slack-sdk sends the client credentials of oauth.v2.access with aiohttp's BasicAuth, which
# aiohttp deprecates (a warning only; the suite turns warnings into errors)
pytestmark = pytest.mark.filterwarnings("ignore:BasicAuth is deprecated:DeprecationWarning")


@dataclasses.dataclass
class Bot:
    url: str
    session: aiohttp.ClientSession
    pool: ArqRedis
    settings: Settings


@pytest.fixture
async def oauth_bot(serve: Serve, fake: FakeSlack, redis_url: str,
                    tmp_path: Path) -> AsyncIterator[Bot]:
    server = await serve(watch_script())
    base = flow_settings(server.base_url, fake.base_url, redis_url, tmp_path)
    settings = dataclasses.replace(base, slack=dataclasses.replace(
        base.slack, bot_token=Secret(""), client_id=CLIENT_ID,
        client_secret=Secret(CLIENT_SECRET)))
    fake.oauth = FakeOAuth(fake.team_tokens, fake.channel_teams, CLIENT_ID, CLIENT_SECRET)
    store = await SqlStore.open(settings.db_url)  # the runs' tables first, as a worker does
    await store.close()
    engine = create_async_engine(settings.db_url)
    pool = await connect(redis_url)
    app = build_app(bot_token="", signing_secret=SECRET, api_url=fake.base_url, redis=pool,
                    queue=JobQueue(pool), process_before_response=True,
                    oauth=await oauth_settings(settings.slack, engine))
    runner = web.AppRunner(web_app(app, SECRET))
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    session = aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar())
    try:
        yield Bot(f"http://127.0.0.1:{runner.addresses[0][1]}", session, pool, settings)
    finally:
        await session.close()
        await runner.cleanup()
        await pool.aclose()
        await engine.dispose()


async def install(bot: Bot, fake: FakeSlack, team: str, user: str) -> None:
    """A person of `team` installs the app: /slack/install, Slack's consent, the redirect."""
    assert fake.oauth is not None
    code = fake.oauth.grant(team, user, (TEAMS[team],))
    async with bot.session.get(bot.url + INSTALL_PATH, allow_redirects=False) as resp:
        assert resp.status == 302
        location, cookie = resp.headers["Location"], resp.headers["Set-Cookie"].split(";")[0]
    query = urllib.parse.parse_qs(urllib.parse.urlparse(location).query)
    assert query["client_id"] == [CLIENT_ID] and "chat:write" in query["scope"][0]
    params = {"code": code, "state": query["state"][0]}
    async with bot.session.get(bot.url + REDIRECT_PATH, params=params,
                               headers={"Cookie": cookie}, allow_redirects=False) as resp:
        assert resp.status == 200, await resp.text()


async def research(bot: Bot, driver: SlackDriver, user: str) -> Message:
    _, mention = await driver.mention(f"<@{BOT_USER_ID}> {QUESTION}", user=user)
    [picker] = driver.replies(mention)
    assert await driver.click(user, "depth_standard", picker) == 200
    await wait_for(lambda: any(header(m).startswith("Research finished")
                               for m in driver.replies(mention)), 90, "the final message")
    return mention


@pytest.mark.timeout(150)
async def test_two_workspaces_installed_by_oauth_never_see_each_other(
        oauth_bot: Bot, fake: FakeSlack, backend: RecordingBackend, redis_url: str) -> None:
    bot = oauth_bot
    await install(bot, fake, "T0AAA", ALICE)
    await install(bot, fake, "T0BBB", BOB)
    assert len(set(fake.team_tokens)) == 2
    worker = asyncio.create_task(run_worker(bot.settings, redis_url, backend=backend,
                                            similarity=default_similarity()))
    try:
        drivers = {team: SlackDriver(bot.url + "/slack/events", bot.session, fake, team=team,
                                     channel=channel, seq=100 * n)  # event ids are unique
                   for n, (team, channel) in enumerate(TEAMS.items())}
        a = await research(bot, drivers["T0AAA"], ALICE)
        b = await research(bot, drivers["T0BBB"], BOB)  # the same question, after A's run

        # Tokens and threads: every call naming a channel was made with its own team's token
        by_channel = [(c.params.get("channel"), c.team) for c in fake.calls()
                      if c.params.get("channel")]
        assert {ch for ch, _ in by_channel} == set(TEAMS.values())
        assert all(TEAMS[team] == channel for channel, team in by_channel), by_channel
        assert not [c for c in fake.calls() if c.error == "channel_not_found"]
        assert not [c for c in fake.calls() if c.error in ("invalid_auth", "not_authed")]

        # Requests, jobs and runs carry their team; evidence and cached hits are their own
        requests = Requests(bot.pool)
        store = await SqlStore.open(bot.settings.db_url)
        try:
            for team, mention in (("T0AAA", a), ("T0BBB", b)):
                request = await requests.for_thread(TEAMS[team], mention.ts)
                assert request is not None and request.team == team
                state = await load_state(store, request.run_id, bot.settings)
                assert state.extra.team == team and state.evidence
            state_b = await load_state(store, (await requests.for_thread(  # type: ignore[union-attr]
                TEAMS["T0BBB"], b.ts)).run_id, bot.settings)
            sent_b = {q.text for q in state_b.queries if not q.from_cache}
            assert state_b.queries and all(q.text in sent_b for q in state_b.queries), \
                "team B's run was served team A's cached search results"  # its own: allowed
        finally:
            await store.close()

        # A workspace that never installed the app is not served
        stranger = SlackDriver(bot.url + "/slack/events", bot.session, fake, team="T0CCC",
                               channel="C0TEAMC", seq=900)
        before = len(fake.calls())
        await stranger.mention(f"<@{BOT_USER_ID}> {QUESTION}")
        await asyncio.sleep(0.3)
        assert not [c for c in fake.calls()[before:] if c.method == "chat.postMessage"]
    finally:
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)
