"""The workspace's own Slack as a source: the fake Slack's `assistant.search.context` (its
documented fields, scopes and errors; only what the asking person may see), through the real
`slack_sdk` client; and research runs through the bot, Redis, ARQ and a worker whose report
cites a channel message, never a message of a channel the asker is not in nor of the thread
it answers in, with the action token gone when the job ends and never stored or logged."""

from __future__ import annotations

import datetime as dt
import json
import logging
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from contract.keys import search_token_key
from contract.requests import job_id, run_id_for
from playground.fake_slack import BOT_USER_ID, FakeSlack, Message
from research_core.policy import ChannelType, Policy, SlackSearchRule
from research_core.protocols import SearchRequest
from research_core.settings.values import Secret
from research_core.store.restore import load_state
from research_core.store.sql import SqlStore
from tests.conftest import SLACK_TOKEN, RecordingBackend
from tests.scripted import Script
from tests.slack_driver import ALICE, BOB
from tests.slack_stack import CHANNEL, Stack, StartStack, wait_for
from workers.slack_search import SlackSearch

CAROL = "U0CAROL"
KITCHEN, MANAGERS = "C0KITCHEN", "C0MANAGERS"
KITCHEN_NOTE = "The deck oven is descaled every 6 weeks, on a Monday before the 04:00 bake."
MANAGERS_NOTE = "Managers only: the deck oven descaling visit costs 480 euros."
QUESTION = "How often is the deck oven descaled?"
FIELDS = {"author_user_id", "team_id", "channel_id", "message_ts", "content", "is_author_bot",
          "permalink"}
BOTH: tuple[ChannelType, ...] = ("public_channel", "private_channel")


def seed(fake: FakeSlack) -> tuple[Message, Message]:
    """#kitchen (public) and #managers (private: Bob only), each with a note on the oven."""
    fake.search.scopes |= {"search:read.public", "search:read.private", "channels:read",
                           "groups:read"}
    fake.search.add_channel(KITCHEN, "kitchen")
    fake.search.add_channel(MANAGERS, "managers", "private_channel", {BOB})
    return (written(fake, KITCHEN, CAROL, KITCHEN_NOTE), written(fake, MANAGERS, BOB,
                                                                 MANAGERS_NOTE))


def written(fake: FakeSlack, channel: str, user: str, text: str,
            day: dt.date = dt.date(2026, 10, 15)) -> Message:
    """A person's message of `day` (within the runs' time range, which ends at AS_OF)."""
    moment = dt.datetime.combine(day, dt.time(9), dt.UTC).timestamp()
    msg = Message(channel, f"{moment:.6f}", text, [], user=user, bot_id=None)
    fake.store(msg)
    return msg


async def search(client: AsyncWebClient, token: str, **args: object) -> list[dict[str, object]]:
    response = await client.assistant_search_context(
        query="deck oven descaled", action_token=token, **args)  # type: ignore[arg-type]
    found: list[dict[str, object]] = response["results"]["messages"]
    return found


async def test_the_fake_answers_only_what_the_asker_may_see(fake: FakeSlack) -> None:
    kitchen, _ = seed(fake)
    client = AsyncWebClient(token=SLACK_TOKEN, base_url=fake.base_url)
    alice, bob = fake.search.issue(ALICE), fake.search.issue(BOB)
    mine = await search(client, alice, channel_types=list(BOTH))
    assert [m["channel_id"] for m in mine] == [KITCHEN]  # not in #managers: none of it
    assert set(mine[0]) == FIELDS and mine[0]["content"] == KITCHEN_NOTE
    assert mine[0]["permalink"] == (f"{fake.permalink_base}/archives/{KITCHEN}/"
                                    f"p{kitchen.ts.replace('.', '')}")
    assert {m["channel_id"] for m in await search(client, bob, channel_types=list(BOTH))} == {
        KITCHEN, MANAGERS}
    assert [m["channel_id"] for m in await search(client, bob)] == [KITCHEN]  # public only
    fake.call("chat.postMessage", channel=KITCHEN, text="Reminder: deck oven descaled today")
    assert len(await search(client, alice)) == 1  # apps' messages only when asked for
    assert len(await search(client, alice, include_bots=True)) == 2
    info = await client.conversations_info(channel=MANAGERS)
    assert info["channel"]["name"] == "managers" and info["channel"]["is_private"]


@pytest.mark.parametrize(("change", "args", "error"), [
    ("private", {"channel_types": list(BOTH)}, "missing_scope"),
    ("", {"action_token": "1.2.never-issued"}, "invalid_action_token"),
    ("", {"action_token": ""}, "invalid_action_token"),
    ("", {"limit": 21}, "invalid_arguments"),
    ("", {"channel_types": ["group_dm"]}, "invalid_arguments"),
    ("", {"query": " "}, "invalid_arguments"),
])
async def test_the_fake_refuses_as_slack_documents(
        fake: FakeSlack, change: str, args: dict[str, object], error: str) -> None:
    seed(fake)
    if change == "private":
        fake.search.scopes.discard("search:read.private")
    client = AsyncWebClient(token=SLACK_TOKEN, base_url=fake.base_url)
    call = {"query": "deck oven", "action_token": fake.search.issue(ALICE), **args}
    with pytest.raises(SlackApiError) as raised:
        await client.assistant_search_context(**call)  # type: ignore[arg-type]
    assert raised.value.response["error"] == error
    if error == "missing_scope":
        assert raised.value.response["needed"] == "search:read.private"


async def test_the_run_s_own_thread_and_apps_are_never_its_evidence(fake: FakeSlack) -> None:
    seed(fake)
    question = fake.post_user_message(CHANNEL, ALICE, f"<@{BOT_USER_ID}> {QUESTION}")
    fake.post_user_message(CHANNEL, BOB, "deck oven descaled? me too", thread_ts=question.ts)
    fake.call("chat.postMessage", channel=KITCHEN, text="deck oven descaled, says the bot")
    client = AsyncWebClient(token=SLACK_TOKEN, base_url=fake.base_url)
    backend = SlackSearch(client, Secret(fake.search.issue(ALICE)), CHANNEL, question.ts, BOTH)
    hits = await backend.search(SearchRequest("deck oven descaled"))
    assert [h.url.rsplit("/", 1)[-1] for h in hits] == [
        f"p{m.ts.replace('.', '')}" for m in fake.messages(KITCHEN) if m.user == CAROL]
    [hit] = hits
    assert hit.publisher == "Slack #kitchen" and hit.title.startswith("Message in #kitchen: ")
    assert hit.published is not None and hit.source_type == "slack_message"
    assert await backend.read_body(hit.source_id) == KITCHEN_NOTE
    assert backend.private


async def test_a_refused_token_costs_only_the_slack_hits(
        fake: FakeSlack, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    seed(fake)
    client = AsyncWebClient(token=SLACK_TOKEN, base_url=fake.base_url)
    token = fake.search.issue(ALICE)
    fake.search.expire(token)
    backend = SlackSearch(client, Secret(token), CHANNEL, "1.0", ("public_channel",))
    assert await backend.search(SearchRequest("deck oven")) == []
    lines = [r.getMessage() for r in caplog.records if "slack-search" in r.getMessage()]
    assert len(lines) == 1 and "invalid_action_token" in lines[0]
    assert token not in caplog.text


def slack_policy() -> Policy:
    return Policy(slack_search=SlackSearchRule(teams=("T0FAKE",), channel_types=BOTH))


def bakery_script() -> Script:
    return Script(subquestions=[("What is the deck oven descaling schedule?", 0.9)])


async def research(stack: Stack, asker: str = ALICE) -> Message:
    seed(stack.fake)
    _, mention = await stack.driver.mention(f"<@{BOT_USER_ID}> {QUESTION}", user=asker)
    [picker] = stack.thread(mention)
    assert await stack.driver.click(asker, "depth_standard", picker) == 200
    await wait_for(lambda: bool(stack.finals(mention)), 60, "the final message")
    await stack.settled()
    return mention


@pytest.mark.timeout(120)
async def test_a_run_cites_a_channel_message_the_asker_may_see(
        start_stack: StartStack, backend: RecordingBackend, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    stack = await start_stack(bakery_script(), backend, policy=slack_policy())
    mention = await research(stack)
    thread = json.dumps([m.to_dict() for m in stack.thread(mention)])
    kitchen = stack.fake.messages(KITCHEN)[0]
    assert f"archives/{KITCHEN}/p{kitchen.ts.replace('.', '')}" in thread  # its permalink
    assert "Message in #kitchen" in thread  # its channel, in the source's title
    assert "480 euros" not in thread and MANAGERS not in thread
    calls = stack.fake.calls("assistant.search.context")
    assert calls and {c.error for c in calls} == {None}
    token = str(calls[0].params["action_token"])
    store = await SqlStore.open(stack.settings.db_url)
    try:
        state = await load_state(store, run_id_for(f"red:req:{CHANNEL}:{mention.ts}"),
                                 stack.settings)
    finally:
        await store.close()
    urls = [e.url for e in state.evidence]
    assert any(KITCHEN in u for u in urls) and not any(MANAGERS in u for u in urls)
    assert not any(mention.ts.replace(".", "") in u for u in urls)  # not its own thread
    redis = aioredis.Redis.from_url(stack.settings.worker.redis_url)
    try:
        assert not await redis.exists(search_token_key(job_id(CHANNEL, mention.ts)))
        for key in await redis.keys("*"):
            kind = (await redis.type(key)).decode()
            value = await redis.get(key) if kind == "string" else b""
            assert token.encode() not in (value or b""), key
    finally:
        await redis.aclose()
    assert token.encode() not in (tmp_path / "runs.db").read_bytes()
    assert token not in caplog.text


@pytest.mark.timeout(120)
async def test_bob_s_run_may_cite_his_private_channel(
        start_stack: StartStack, backend: RecordingBackend) -> None:
    stack = await start_stack(bakery_script(), backend, policy=slack_policy())
    mention = await research(stack, BOB)
    thread = json.dumps([m.to_dict() for m in stack.thread(mention)])
    assert f"archives/{MANAGERS}/" in thread  # the same run, asked by a member of #managers


@pytest.mark.timeout(120)
async def test_slack_is_not_searched_unless_the_policy_names_the_workspace(
        start_stack: StartStack, backend: RecordingBackend) -> None:
    stack = await start_stack(bakery_script(), backend)
    mention = await research(stack)
    assert stack.fake.calls("assistant.search.context") == []
    redis = aioredis.Redis.from_url(stack.settings.worker.redis_url)
    try:
        assert await redis.keys("red:searchtoken:*") == []  # never kept
    finally:
        await redis.aclose()
    assert stack.finals(mention)
