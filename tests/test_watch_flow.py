"""Watching a thread through Slack: the Watch menu on the final message, the choice stored
by a worker, due cycles claimed once however many workers tick, a cycle with a late document
(revised in place, one "What changed" message), one without (no message), and a watch that
stops itself when its thread is gone."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from contract.watch_blocks import WATCH_ACTION, watch_menu
from playground.fake_slack import BOT_USER_ID, Message
from research_core.policy import Policy
from research_core.store.restore import load_state
from research_core.store.sql import SqlStore
from research_core.store.usage import UsageStore
from research_core.store.watches import Watch, WatchStore
from tests.conftest import AS_OF, RecordingBackend
from tests.slack_driver import ALICE, BOB
from tests.slack_stack import CHANNEL, Stack, StartStack, contexts, header, wait_for
from tests.test_watch_cycle import LATE_ID, late_folder, watch_script
from workers.watch_work import queue_due_watches

QUESTION = "How did heat pump sales and prices move in 2026?"


def menu_values(msg: Message) -> list[str]:
    return [o["value"] for b in msg.blocks if b["type"] == "actions" for e in b["elements"]
            if e.get("action_id") == WATCH_ACTION for o in e["options"]]


async def watched(store: SqlStore, key: str, what: str,
                  check: object = None) -> Watch:
    for _ in range(200):
        found = await WatchStore(store).get(key)
        if found is not None and (check is None or check == found.active):
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def fake_calls(stack: Stack, method: str) -> list[Any]:
    return [c for c in stack.fake.calls(method) if c.error is None]


async def research(stack: Stack) -> tuple[Message, Message]:
    _, mention = await stack.driver.mention(f"<@{BOT_USER_ID}> {QUESTION}")
    [picker] = stack.thread(mention)
    assert await stack.driver.click(ALICE, "depth_standard", picker) == 200
    await wait_for(lambda: bool(stack.finals(mention)), 90, "the final message")
    await stack.settled()
    [final] = stack.finals(mention)
    return mention, final


@pytest.mark.timeout(150)
async def test_watch_a_thread_cycle_with_a_change_one_without_and_a_gone_thread(
        start_stack: StartStack, backend: RecordingBackend, tmp_path: Path) -> None:
    stack = await start_stack(watch_script(), backend)
    mention, final = await research(stack)
    values = menu_values(final)
    assert [v.split("|")[0] for v in values] == ["daily", "weekly", "monthly", "stop"]
    weekly = values[1]
    key = weekly.split("|", 1)[1]

    assert await stack.driver.select(BOB, WATCH_ACTION, values[0], final) == 200
    assert [e.text for e in stack.fake.ephemerals(CHANNEL, BOB)] == [
        f"Only <@{ALICE}> can change how this thread is watched."]
    assert await stack.driver.select(ALICE, WATCH_ACTION, weekly, final) == 200
    assert stack.fake.ephemerals(CHANNEL, ALICE)[-1].text.startswith(
        "Watching this thread weekly")

    store = await SqlStore.open(stack.settings.db_url)
    try:
        watch = await watched(store, key, "the watch to be stored")
        assert (watch.cadence, watch.next_due, watch.team) == (
            "weekly", AS_OF + dt.timedelta(days=7), "T0FAKE")
        assert await queue_due_watches(store, stack.pool, AS_OF + dt.timedelta(days=6)) == [], \
            "not due yet"

        # cycle 1: a correction appeared since the research; two workers tick at once
        backend.inner.add_folder(late_folder(tmp_path))
        day1 = AS_OF + dt.timedelta(days=7)  # the correction is dated 2026-11-05
        ticks = await asyncio.gather(queue_due_watches(store, stack.pool, day1),
                                     queue_due_watches(store, stack.pool, day1))
        assert sorted(len(t) for t in ticks) == [0, 1], "one worker claims the due watch"
        await wait_for(lambda: bool(stack.finals(mention, "What changed")), 60,
                       "the What changed message")
        await stack.settled()
        [changed] = stack.finals(mention, "What changed")
        assert header(changed) == f"What changed since {AS_OF.isoformat()}"
        assert LATE_ID in changed.text or LATE_ID in str(changed.blocks)
        revised = [m for m in stack.parts(mention)
                   if any(c.startswith(f"_revised: update {day1.isoformat()}") for c in
                          contexts(m))]
        assert revised and all("209,000" in m.text and m.history for m in revised)
        assert (await WatchStore(store).get(key)).last_as_of == day1  # type: ignore[union-attr]

        # cycle 2: nothing new: no message, the watch's note says so
        before = len(stack.thread(mention))
        day2 = day1 + dt.timedelta(days=7)
        assert len(await queue_due_watches(store, stack.pool, day2)) == 1
        await asyncio.sleep(0.3)
        await stack.settled(30)
        watch = await watched(store, key, "cycle 2")
        assert watch.last_as_of == day2 and "nothing changed since" in watch.note
        assert len(stack.thread(mention)) == before
        home = [c.params for c in fake_calls(stack, "views.publish")][-1]
        assert f"watched: as of {day2.isoformat()}: nothing changed since" in str(home)

        # the thread is deleted: the next cycle stops the watch
        stack.fake.forget(CHANNEL, mention.ts)
        assert len(await queue_due_watches(store, stack.pool, day2 + dt.timedelta(days=7))) == 1
        watch = await watched(store, key, "the watch to stop itself", check=False)
        assert "thread is gone" in watch.note
    finally:
        await store.close()


def test_the_playground_sends_a_menu_choice_as_slack_does() -> None:
    """The browser playground's Watch menu: the option picked is the action's
    `selected_option`, which the bot reads."""
    from playground.payloads import block_actions_payload, find_action

    key = "red:req:C0RESEARCH:1.2"
    msg = Message(channel=CHANNEL, ts="3.4", text="done", blocks=[watch_menu(key)])
    found = find_action(msg, WATCH_ACTION, "", f"weekly|{key}")
    assert found is not None
    block_id, element = found
    payload = block_actions_payload(msg, element, block_id, ALICE, "alice", "research", "")
    [action] = payload["actions"]
    assert action["type"] == "static_select"
    assert action["selected_option"]["value"] == f"weekly|{key}"
    assert find_action(msg, WATCH_ACTION, "", "hourly|" + key) is None


@pytest.mark.timeout(150)
async def test_watch_cycles_count_against_the_caps_and_charge_only_their_own_spending(
        start_stack: StartStack, backend: RecordingBackend, tmp_path: Path) -> None:
    """A cycle is one more run of its requester: admitted against the caps (skipped, not
    stopped, past one) and charged what it spent itself, not the run's earlier spending."""
    policy = Policy.model_validate({"caps": {"user": {"day": {"runs": 2}}}})
    stack = await start_stack(watch_script(), backend, policy=policy)
    mention, final = await research(stack)
    key = menu_values(final)[1].split("|", 1)[1]
    assert await stack.driver.select(ALICE, WATCH_ACTION, menu_values(final)[1], final) == 200
    store = await SqlStore.open(stack.settings.db_url)
    try:
        await watched(store, key, "the watch to be stored")
        before = (await UsageStore(store).current("user", ALICE))["day"]
        assert before.runs == 1 and before.tokens > 0
        backend.inner.add_folder(late_folder(tmp_path))
        day1 = AS_OF + dt.timedelta(days=7)
        assert len(await queue_due_watches(store, stack.pool, day1)) == 1
        await wait_for(lambda: bool(stack.finals(mention, "What changed")), 60,
                       "the What changed message")
        await stack.settled()
        after = (await UsageStore(store).current("user", ALICE))["day"]
        watch = await watched(store, key, "cycle 1")
        state = await load_state(store, watch.run_id, stack.settings)
        spent = sum(t.total_tokens for t in state.ledger.totals())  # the run's and the cycle's
        assert after.runs == 2 and spent > before.tokens
        assert after.tokens == spent, "the cycle charged its own spending, once"

        day2 = day1 + dt.timedelta(days=7)  # the third run of the day: past the cap
        assert len(await queue_due_watches(store, stack.pool, day2)) == 1
        await asyncio.sleep(0.3)
        await stack.settled(30)
        watch = await watched(store, key, "cycle 2")
        assert watch.active and watch.last_as_of == day1, "skipped, not run and not stopped"
        assert (await UsageStore(store).current("user", ALICE))["day"].runs == 2
    finally:
        await store.close()
