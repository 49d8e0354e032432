"""Team controls end to end (docs/teams.md) — the bot's endpoint, Redis, an ARQ worker on
scripted tiers, the store, the fake Slack: spending caps finalise a run that reaches them and
refuse the next (per user and per channel), the picker shows the expected cost from recent
runs, Deep is refused in a channel the policy leaves out, the bot stays out of channels the
policy does not list, and a plan preview is edited in a modal and started, its edited
sub-questions reaching the engine; a stranger can neither edit nor start it, and it expires."""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

import pytest

from bot.commands import NOT_HERE
from bot.plans import EXPIRED
from contract.keys import request_key
from contract.requests import PREVIEW_TTL_S, Requests
from playground.fake_slack import BOT_USER_ID, Message
from redsearch.usage import run_usage
from research_core.policy import Policy
from research_core.store.models import NodeRow
from research_core.store.sql import SqlStore
from research_core.store.usage import Usage, UsageStore
from tests.conftest import RecordingBackend
from tests.scripted import Script, field_of
from tests.slack_driver import ALICE, BOB, CHANNEL, buttons, signed_headers
from tests.slack_stack import Stack, StartStack, contexts, header, wait_for

QUESTION = "How did heat pump sales and prices move in 2026?"
EDITED = ["How many heat pumps were sold in Europe in 2026?",
          "What did a typical heat pump cost in 2026?",
          "Why did heat pump sales change in 2026?"]


def text_of(message: Message) -> str:
    return json.dumps(message.blocks, ensure_ascii=False) + message.text


async def home_opened(stack: Stack, user: str) -> None:
    event = {"type": "app_home_opened", "user": user, "channel": "D0" + user[2:],
             "tab": "home", "event_ts": "1.0"}
    body = {"token": "legacy", "team_id": "T0FAKE", "api_app_id": "A0RED",
            "type": "event_callback", "event_id": stack.driver.next_event_id(),
            "event_time": 1, "event": event}
    assert await stack.driver.post(json.dumps(body), "application/json") == 200


async def ask(stack: Stack, user: str = ALICE) -> tuple[Message, Message]:
    _, mention = await stack.driver.mention(f"<@{BOT_USER_ID}> {QUESTION}", user=user)
    [picker] = stack.thread(mention)
    return mention, picker


@pytest.mark.timeout(150)
@pytest.mark.parametrize(("scope", "name"), [("user", "your daily token cap"),
                                             ("channel", "this channel's daily token cap")])
async def test_a_run_reaching_a_cap_is_finalised_and_the_next_is_refused(
        start_stack: StartStack, backend: RecordingBackend, scope: str, name: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    policy = Policy.model_validate({"caps": {scope: {"day": {"tokens": 1}}}, "admins": [BOB]})
    stack = await start_stack(Script(), backend, policy=policy, max_steps=6)
    mention, picker = await ask(stack)
    assert not [c for c in contexts(picker) if c.startswith("Recent runs")]  # none yet
    await stack.driver.click(ALICE, "depth_standard", picker)
    await wait_for(lambda: bool(stack.finals(mention)), 90, "the final message")
    await stack.settled()
    thread = stack.thread(mention)
    [note] = [m for m in thread if "Spending cap reached: " in m.text]  # a progress note
    assert f"Spending cap reached: {name} (1 token) is reached" in note.text
    assert "Writing the report from what I have found so far." in note.text
    # the report is still written: the model's (the scripted reporter's "Finding A …": the
    # step that splits researches its first sub-question too), or (the cap came before any
    # evidence) the answer that says nothing reliable was found
    assert any(m.text.startswith(("Finding A from the sources [1]",
                                  "No evidence above the reliability threshold"))
               for m in thread), [m.text[:80] for m in thread]
    [final] = stack.finals(mention)
    assert "Ended early" in text_of(final) and name in text_of(final)

    second, picker = await ask(stack)
    [estimate] = [c for c in contexts(picker) if c.startswith("Recent runs")]
    assert estimate == "Recent runs took: *Standard* under a minute"  # no tokens, no cost
    await stack.driver.click(ALICE, "depth_standard", picker)
    await wait_for(lambda: any(m.text.startswith("Sorry") for m in stack.thread(second)), 30,
                   "the refusal")
    await stack.settled()
    [refusal] = [m for m in stack.thread(second) if m.text.startswith("Sorry")]
    assert refusal.text.startswith(f"Sorry, I cannot start this research: {name[0].upper()}"
                                   f"{name[1:]} (1 token) is reached: ")
    assert "tokens used; it resets at " in refusal.text and refusal.text.endswith(" UTC.")
    request = await Requests(stack.pool).load(request_key(CHANNEL, second.ts))
    assert request is not None and request.status == "failed"
    assert not stack.finals(second)

    for user in (ALICE, BOB):  # an admin's Home tab shows everyone's usage
        await home_opened(stack, user)
    alice, bob = (json.dumps(stack.fake.surfaces.view(u)) for u in (ALICE, BOB))
    assert "Everyone's usage" not in alice and "Everyone's usage (admin)" in bob
    assert f"<@{ALICE}> " in bob and f"<#{CHANNEL}> " in bob and "1 run, " in bob

    assert await run_usage(None, CHANNEL, settings=stack.settings) == 0
    shown = capsys.readouterr().out.splitlines()
    [day] = [line for line in shown if line.startswith("channel ") and " day:" in line]
    assert day.split()[3] == "1", "one run counted: the refused one is not"
    assert day.endswith("  1 token") == (scope == "channel"), "the caps in force"


async def test_deep_is_refused_in_a_channel_the_policy_leaves_out(
        start_stack: StartStack, backend: RecordingBackend) -> None:
    policy = Policy.model_validate({"deep": {"default": ["*"], "channels": {CHANNEL: []}}})
    stack = await start_stack(Script(), backend, policy=policy)
    mention, picker = await ask(stack)
    await stack.driver.click(ALICE, "depth_deep", picker)
    [refusal] = stack.fake.ephemerals(CHANNEL, ALICE)
    assert refusal.text.startswith("Deep research is not enabled for you here")
    request = await Requests(stack.pool).load(request_key(CHANNEL, mention.ts))
    assert request is not None and request.status == "choosing"
    assert stack.fake.calls("chat.update") == []


async def usage_of(stack: Stack, user: str) -> Usage:
    store = await SqlStore.open(stack.settings.db_url)
    try:
        return (await UsageStore(store).current("user", user))["day"]
    finally:
        await store.close()


def counting(script: Script, asked: list[str]) -> Script:
    def decompose(body: dict[str, Any]) -> str:
        asked.append(field_of(body, "Question to split"))
        return script.default_Decomposition(body)

    script.rules["Decomposition"] = decompose
    return script


def preview_of(stack: Stack, mention: Message) -> Message | None:
    return next((m for m in stack.thread(mention) if "plan_start" in buttons(m)), None)


@pytest.mark.timeout(150)
async def test_a_previewed_plan_is_edited_in_a_modal_and_started_on_the_edited_tree(
        start_stack: StartStack, backend: RecordingBackend) -> None:
    asked: list[str] = []
    stack = await start_stack(counting(Script(), asked), backend, max_steps=6)
    mention, picker = await ask(stack)
    await stack.driver.click(ALICE, "depth_preview", picker)
    await wait_for(lambda: preview_of(stack, mention) is not None, 30, "the plan preview")
    preview = preview_of(stack, mention)
    assert preview is not None and buttons(preview) == ["plan_start", "plan_edit"]
    assert "1. What were heat pump sales figures?" in text_of(preview)
    assert asked == [QUESTION], "one planner call"
    previewed = await usage_of(stack, ALICE)
    assert previewed.tokens > 0 and previewed.runs == 0, "the preview is charged, not a run"

    # a stranger can neither edit nor start it
    await stack.driver.click(BOB, "plan_edit", preview)
    await stack.driver.click(BOB, "plan_start", preview)
    assert [e.text for e in stack.fake.ephemerals(CHANNEL, BOB)] == [
        f"Only <@{ALICE}> can edit this plan.", f"Only <@{ALICE}> can start this plan."]
    assert stack.fake.calls("views.open") == [] and not stack.finals(mention)

    await stack.driver.click(ALICE, "plan_edit", preview)
    [modal] = stack.fake.surfaces.modals.values()
    assert modal["blocks"][0]["element"]["initial_value"].splitlines() == [
        "What were heat pump sales figures?", "What were heat pump prices?"]
    forged = await stack.driver.submit_view(modal["id"], {"lines": "\n".join(EDITED)},
                                            user=BOB)
    assert forged["response_action"] == "errors" and "Only the requester" in json.dumps(forged)
    too_many = "\n".join(f"Sub-question number {i} about heat pumps?" for i in range(5))
    answer = await stack.driver.submit_view(modal["id"], {"lines": too_many})
    assert answer["errors"]["plan_lines"] == "at most 4 sub-questions, please (you gave 5)"
    answer = await stack.driver.submit_view(modal["id"], {"lines": "\n\n".join(EDITED),
                                                          "depth": "standard"})
    assert answer == {} and stack.fake.surfaces.modals == {}
    edited = preview_of(stack, mention)
    assert edited is not None and all(q in text_of(edited) for q in EDITED)
    assert "Depth: Standard" in text_of(edited)

    await stack.driver.click(ALICE, "plan_start", edited)
    await wait_for(lambda: bool(stack.finals(mention)), 90, "the final message")
    await stack.settled()
    request = await Requests(stack.pool).load(request_key(CHANNEL, mention.ts))
    assert request is not None and request.depth == "standard" and request.plan == EDITED
    store = await SqlStore.open(stack.settings.db_url)
    try:
        nodes = await store.rows(NodeRow, request.run_id)
    finally:
        await store.close()
    first = sorted((n for n in nodes if n.parent_id == "N0"), key=lambda n: int(n.node_id[1:]))
    assert [n.question for n in first] == EDITED, "the edited plan is the first expansion"
    assert asked.count(QUESTION) == 1, "no second decomposition of the question"
    ran = await usage_of(stack, ALICE)
    assert ran.runs == 1 and ran.tokens > previewed.tokens
    assert "Started with this plan." in text_of(stack.thread(mention)[1])
    assert header(stack.finals(mention)[0]).startswith("Research finished")


async def test_a_preview_expires_after_a_day(start_stack: StartStack,
                                             backend: RecordingBackend) -> None:
    stack = await start_stack(Script(), backend)
    mention, picker = await ask(stack)
    await stack.driver.click(ALICE, "depth_preview", picker)
    await wait_for(lambda: preview_of(stack, mention) is not None, 30, "the plan preview")
    preview = preview_of(stack, mention)
    assert preview is not None
    key = request_key(CHANNEL, mention.ts)
    await Requests(stack.pool).update(key, lambda r: r.with_(
        preview_at=(r.preview_at or 0) - PREVIEW_TTL_S - 1))
    await stack.driver.click(ALICE, "plan_start", preview)
    await stack.driver.click(ALICE, "plan_edit", preview)
    assert [e.text for e in stack.fake.ephemerals(CHANNEL, ALICE)] == [EXPIRED, EXPIRED]
    request = await Requests(stack.pool).load(key)
    assert request is not None and request.status == "preview"
    assert stack.fake.calls("views.open") == []


async def test_the_bot_answers_only_in_the_policys_channels(
        start_stack: StartStack, backend: RecordingBackend) -> None:
    policy = Policy.model_validate({"channels": ["C0ELSEWHERE"]})
    stack = await start_stack(Script(), backend, policy=policy)
    status, mention = await stack.driver.mention(f"<@{BOT_USER_ID}> {QUESTION}")
    assert status == 200 and stack.thread(mention) == []
    assert await Requests(stack.pool).load(request_key(CHANNEL, mention.ts)) is None
    form = {"token": "legacy", "team_id": "T0FAKE", "channel_id": CHANNEL,
            "channel_name": "research", "user_id": ALICE, "user_name": "alice",
            "command": "/research", "text": QUESTION, "api_app_id": "A0RED",
            "response_url": "http://127.0.0.1:9/unused", "trigger_id": "1.2.3"}
    body = urllib.parse.urlencode(form)
    headers = signed_headers(body, "application/x-www-form-urlencoded")
    async with stack.driver.session.post(stack.driver.url, data=body.encode(),
                                         headers=headers) as resp:
        assert resp.status == 200
        assert NOT_HERE in await resp.text()
    assert stack.fake.calls("chat.postMessage") == []


async def test_a_preview_past_a_cap_is_refused_before_the_planner_is_called(
        start_stack: StartStack, backend: RecordingBackend) -> None:
    asked: list[str] = []
    policy = Policy.model_validate({"caps": {"user": {"month": {"runs": 0}}}})
    stack = await start_stack(counting(Script(), asked), backend, policy=policy)
    mention, picker = await ask(stack)
    await stack.driver.click(ALICE, "depth_preview", picker)
    await wait_for(lambda: any(m.text.startswith("Sorry") for m in stack.thread(mention)), 30,
                   "the refusal")
    [refusal] = [m for m in stack.thread(mention) if m.text.startswith("Sorry")]
    assert refusal.text.startswith("Sorry, I cannot preview a plan: Your monthly run cap "
                                   "(0 runs) is reached: 0 runs used; it resets at ")
    assert asked == [] and preview_of(stack, mention) is None
    await wait_for(lambda: "failed" in stack.thread(mention)[0].text, 10, "the status")
