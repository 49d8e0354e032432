"""Issue 30 end to end: the bot's endpoint with signed events, real Redis and ARQ, a worker
running the engine on scripted tiers, the fake Slack through slack_sdk. The requester steers
the running research in its thread (the plan shows who asked and what changed), a part whose
evidence holds a dated series carries its chart, the loading status is cleared at the end,
and a follow-up shows a loading status before its answer."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from playground.fake_slack import BOT_USER_ID, Message
from tests.conftest import RecordingBackend, write_doc
from tests.slack_driver import ALICE
from tests.slack_stack import CHANNEL, StartStack, wait_for
from tests.test_modes import THREE
from tests.test_slack_flow import Slow

QUESTION = "How did heat pump sales, prices and exports move in 2026?"
SERIES = ("industry_association", "en", "2026-10-25", "Quarterly heat pump sales",
          "Heat pump sales were 515,000 units in Q1 2025, 474,000 units in Q1 2026 and "
          "571,000 units in Q2 2026.")


def drop_named(body: dict[str, Any]) -> str:
    """A planner that drops the open sub-questions the steer names after 'skip'."""
    text = json.dumps(body)
    listed = re.findall(r"(N\d+): ([^\\]+)", text)
    skipped = re.search(r"skip (\w+)", text)
    word = skipped.group(1) if skipped else "-"
    return json.dumps({"drop": [i for i, q in listed if word in q], "first": [], "add": []})


def plan_of(thread: list[Message]) -> dict[str, Any]:
    [message] = [m for m in thread if m.blocks and m.blocks[0]["type"] == "plan"]
    plan: dict[str, Any] = message.blocks[0]
    return plan


@pytest.mark.timeout(120)
async def test_a_steered_run_with_a_chart_then_a_follow_up_with_a_sign_of_life(
        start_stack: StartStack, backend: RecordingBackend, tmp_path: Path) -> None:
    extra = tmp_path / "series"
    extra.mkdir()
    write_doc(extra, "quarterly-sales-2026", SERIES)
    backend.inner.add_folder(extra)
    script = Slow(0.15)
    script.subquestions = THREE
    script.rules["SteerOut"] = drop_named
    stack = await start_stack(script, backend)
    _, mention = await stack.driver.mention(f"<@{BOT_USER_ID}> {QUESTION}")
    [picker] = stack.thread(mention)
    await stack.driver.click(ALICE, "depth_standard", picker)

    def split() -> bool:
        plans = [m for m in stack.thread(mention) if m.blocks and m.blocks[0]["type"] == "plan"]
        return bool(plans) and len(plans[0].blocks[0]["tasks"]) >= 4
    await wait_for(split, 60, "the plan's sub-questions")
    await stack.driver.say_in_thread(mention.ts, "skip exports please")
    assert stack.fake.ephemerals(CHANNEL, ALICE)[0].text.startswith("Noted: at its next step")
    await wait_for(lambda: bool(stack.finals(mention)), 90, "the final message")
    await stack.settled()
    told = [e.text for e in stack.fake.ephemerals(CHANNEL, ALICE)[1:]]
    assert told and told[0].startswith("Your steer was read before step")  # what it did
    assert "• Dropped: What happened to heat pump exports?" in told[0]

    tasks = plan_of(stack.thread(mention))["tasks"]
    [steer] = [t for t in tasks if t["task_id"].startswith("steer-")]
    assert steer["output"]["elements"][0]["elements"][0] == {"type": "user",
                                                             "user_id": ALICE}
    assert "Dropped: What happened to heat pump exports?" in json.dumps(steer["details"])
    [exports] = [t for t in tasks if t["title"] == "What happened to heat pump exports?"]
    assert exports["status"] == "error" and "as asked" in json.dumps(exports["output"])
    charted = [b for m in stack.parts(mention) for b in m.blocks if b["type"] == "image"]
    assert charted, "a part whose evidence holds the quarterly series shows its chart"
    assert "Q1 2025: 515,000; Q1 2026: 474,000; Q2 2026: 571,000" in charted[0]["alt_text"]
    assert "Quarterly heat pump sales" in charted[0]["alt_text"]
    assert stack.fake.status(CHANNEL, mention.ts) == ""  # cleared at the end

    before = len(stack.fake.calls("assistant.threads.setStatus"))
    await stack.driver.say_in_thread(mention.ts, "What were heat pump sales in Q2 2026?")
    await wait_for(lambda: any(m.text.startswith("*Follow-up:*")
                               for m in stack.thread(mention)), 60, "the follow-up")
    await stack.settled()
    statuses = stack.fake.calls("assistant.threads.setStatus")[before:]
    said = [str(c.params.get("status")) for c in statuses]
    assert said[0] == "Reading the follow-up…" and said[-1] == ""  # at once; cleared after
    assert any(s.startswith("Answering the follow-up: What were heat pump sales") for s in said)
    [answer] = [m for m in stack.thread(mention) if m.text.startswith("*Follow-up:*")]
    assert statuses[0].at < float(answer.ts)  # the status came before the answer's message
