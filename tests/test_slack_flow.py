"""The Slack path end to end: mention → picker → Deep → progress, parts, a revision, the final
message, follow-ups, Stop and a 429 — through the bot's endpoint, Redis, ARQ and a worker."""

from __future__ import annotations

import asyncio
import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from contract.keys import request_key, resumes_key
from contract.queue import JobQueue
from contract.requests import job_id
from playground.fake_slack import BOT_USER_ID, Change, Message
from tests.conftest import RecordingBackend, write_doc
from tests.fakes.openai_server import Reply, last_user_text
from tests.scripted import Script, data_block, field_of
from tests.slack_driver import ALICE, BOB, buttons
from tests.slack_stack import (
    CHANNEL,
    StartStack,
    contexts,
    header,
    is_part,
    wait_for,
)

QUESTION = "How did heat pump sales and prices move in 2026?"
CORRECTION = "stats-sales-correction-2026-10"


def correction_script() -> Script:
    script = Script(subquestions=[("What were heat pump sales figures?", 0.9),
                                  ("What were heat pump sales figures corrected?", 0.8),
                                  ("What were heat pump prices?", 0.7)])
    script.rules["FollowUpOut"] = followup_answer
    return script


def followup_answer(body: dict[str, Any]) -> str:
    """Answers from the first source, except on exports, which the run never researched."""
    text = last_user_text(body)
    if "exports" in field_of(body, "Follow-up") and "export" not in data_block(body).lower():
        return json.dumps({"answer": "The research so far says nothing on exports.",
                           "sufficient": False})
    assert "[1]" in text.split("Sources:", 1)[-1]
    return json.dumps({"answer": "According to the research, see [1].", "sufficient": True})


def late_correction(backend: RecordingBackend, folder: Path) -> Any:
    """A correction of a published figure becomes searchable once the first part is out."""
    write_doc(folder, CORRECTION, (
        "official_statistics", "en", "2026-10-30", "Heat pump sales figures corrected",
        "Heat pump sales figures for September 2026 were corrected to 209,000 units."))

    def on_change(change: Change) -> None:
        if change.kind == "posted" and not added and any(
                e.get("text", "").startswith("Sources:") for b in change.data.get("blocks", [])
                if b.get("type") == "context" for e in b.get("elements", [])):
            backend.inner.add_folder(folder)
            added.append(folder)
    added: list[Path] = []
    return on_change


@pytest.mark.timeout(120)
async def test_mention_to_final_message_with_revision_followups_and_a_429(
        start_stack: StartStack, backend: RecordingBackend, tmp_path: Path) -> None:
    late = tmp_path / "late"
    late.mkdir()
    stack = await start_stack(correction_script(), backend)
    stack.fake.add_listener(late_correction(backend, late))
    driver = stack.driver

    status, mention = await driver.mention(f"<@{BOT_USER_ID}> {QUESTION}", event_id="EvQ1")
    assert status == 200
    assert await driver.deliver(mention, "EvQ1") == 200  # Slack's retry of the same event
    [live] = stack.thread(mention)
    picker = copy.deepcopy(live)  # the message as the clients saw it before any update
    assert buttons(picker) == ["depth_auto", "depth_standard", "depth_deep", "depth_preview"]

    assert await driver.click(BOB, "depth_deep", picker) == 200  # not the requester
    assert [e.text for e in stack.fake.ephemerals(CHANNEL, BOB)] == [
        f"Only <@{ALICE}> can choose the depth for this request."]
    stack.fake.force_ratelimit(count=1, method="chat.postMessage", retry_after=1)
    assert await driver.click(ALICE, "depth_deep", picker) == 200
    assert await driver.click(ALICE, "depth_standard", picker) == 200  # changes nothing
    assert not await JobQueue(stack.pool).research(  # the same job again: ARQ drops it
        await _request(stack, mention.ts))

    await wait_for(lambda: bool(stack.finals(mention)), 90, "the final message")
    thread = stack.thread(mention)
    check_plan(thread)
    parts = stack.parts(mention)
    assert (len(parts) >= 3 and parts[-1].text.startswith("Report")) or parts
    revised = [m for m in parts if any(c.startswith("_revised:") for c in contexts(m))]
    assert revised, [m.text[:60] for m in parts]
    assert revised[0].history and "209,000" in revised[0].text
    assert CORRECTION in " ".join(contexts(revised[0]))
    [final] = stack.finals(mention)
    sections = [b["text"]["text"] for b in final.blocks if b["type"] == "section"]
    [line] = sections  # the report part lists the sources and its flags; the final counts
    assert re.fullmatch(r"\d+ sources cited", line), line
    assert not [m for m in thread if "tokens" in m.text.lower() or "$" in m.text]
    await stack.settled()  # the job's last steps: the status message, then "ended"
    assert stack.fake.status(CHANNEL, mention.ts) == "", "the loading status stays on"
    assert any(c.params.get("status") for c in stack.fake.calls("assistant.threads.setStatus"))
    status_msg = stack.fake.message(CHANNEL, picker.ts)
    assert status_msg is not None and status_msg.text == "Depth: Deep — finished"
    assert buttons(status_msg) == []
    assert any(c.status == 429 for c in stack.fake.calls("chat.postMessage"))
    texts = stack.posted_texts()
    assert len(texts) == len(set(texts)), "a message was posted twice"

    # Follow-ups: one answered from memory, one that needs research first.
    searched = len(backend.requests)
    await driver.say_in_thread(mention.ts, "What were heat pump sales in September?", user=BOB)
    await wait_for(lambda: len(_followups(stack, mention.ts)) == 1, 60, "the first follow-up")
    [first] = _followups(stack, mention.ts)
    assert "According to the research" in first.text and is_part(first)
    assert len(backend.requests) == searched  # answered from memory: no search
    await driver.say_in_thread(mention.ts, "What about heat pump exports to Europe?")
    await wait_for(lambda: len(_followups(stack, mention.ts)) == 2, 60, "the second follow-up")
    assert any("exports" in r.query for r in backend.requests[searched:])  # researched
    texts = stack.posted_texts()
    assert len(texts) == len(set(texts))


def check_plan(thread: list[Message]) -> None:
    """The progress message is the goal tree as a Slack plan, edited in place to the end."""
    [message] = [m for m in thread if m.blocks and m.blocks[0]["type"] == "plan"]
    plan = message.blocks[0]
    assert plan["title"].startswith("Done —") and plan["title"].endswith("deep")
    assert message.history and "Planning" in message.history[0]["blocks"][0]["title"]
    tasks = plan["tasks"]
    assert tasks[0]["task_id"] == "N0" and tasks[0]["status"] == "complete"
    done = [t for t in tasks[1:] if t["status"] == "complete"]
    assert done and all(t["sources"][0]["url"].startswith("https://") for t in done)
    assert all(re.search(r"\d", json.dumps(t["output"])) for t in done)  # figures kept
    assert any("published" in json.dumps(t.get("details", "")) for t in done)


async def _request(stack: Any, ts: str) -> Any:
    from contract.requests import Requests
    request = await Requests(stack.pool).load(request_key(CHANNEL, ts))
    assert request is not None
    return request


def _followups(stack: Any, thread_ts: str) -> list[Any]:
    return [m for m in stack.fake.messages(CHANNEL, thread_ts)
            if m.bot_id and m.text.startswith("*Follow-up:*")]


class Slow(Script):
    """Scripted tiers that take `delay_s` per call, so a run is still going when Stop comes."""

    def __init__(self, delay_s: float) -> None:
        super().__init__()
        self.delay_s = delay_s

    def __call__(self, body: dict[str, Any]) -> str | Reply:
        answer = super().__call__(body)
        text = answer if isinstance(answer, str) else answer.content
        return Reply(content=text, delay_s=self.delay_s)


@pytest.mark.timeout(90)
async def test_stop_keeps_what_was_published_and_only_the_requester_may(
        start_stack: StartStack, backend: RecordingBackend) -> None:
    stack = await start_stack(Slow(0.3), backend)
    driver = stack.driver
    _, mention = await driver.mention(f"<@{BOT_USER_ID}> {QUESTION}")
    [picker] = stack.thread(mention)
    await driver.click(ALICE, "depth_deep", picker)
    await wait_for(lambda: bool(stack.parts(mention)), 60, "a first answer part")
    status_msg = stack.fake.message(CHANNEL, picker.ts)
    assert status_msg is not None and buttons(status_msg) == ["stop_research"]
    assert await driver.click(BOB, "stop_research", status_msg) == 200
    assert f"Only <@{ALICE}> can stop this research." in [
        e.text for e in stack.fake.ephemerals(CHANNEL, BOB)]
    published = [m.ts for m in stack.parts(mention)]
    assert await driver.click(ALICE, "stop_research", status_msg) == 200
    await wait_for(lambda: bool(stack.finals(mention, "Research stopped")), 30, "the stop")
    await stack.settled()
    status_msg = stack.fake.message(CHANNEL, picker.ts)
    assert status_msg is not None and status_msg.text == "Depth: Deep — stopped"
    assert buttons(status_msg) == []
    assert stack.fake.status(CHANNEL, mention.ts) == "", "the loading status stays on"
    kept = {m.ts for m in stack.parts(mention)}
    assert set(published) <= kept
    assert not stack.finals(mention)  # no report after Stop
    await asyncio.sleep(3 * stack.settings.worker.reconcile_every_s + 0.5)
    job = job_id(CHANNEL, mention.ts)
    assert await stack.pool.get(resumes_key(job)) is None  # the stop was not undone
    assert not stack.finals(mention)


class Watching(Script):
    """Scripted tiers that note what the thread held when the first model call arrived."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: Any = None
        self.at_first_call: list[str] | None = None

    def __call__(self, body: dict[str, Any]) -> str | Reply:
        if self.at_first_call is None and self.stack is not None:
            self.at_first_call = self.stack.posted_texts()
        return super().__call__(body)


@pytest.mark.timeout(60)
async def test_the_first_progress_note_comes_before_any_model_call(
        start_stack: StartStack, backend: RecordingBackend) -> None:
    tiers = Watching()
    stack = tiers.stack = await start_stack(tiers, backend)
    _, mention = await stack.driver.mention(f"<@{BOT_USER_ID}> {QUESTION}")
    [picker] = stack.thread(mention)
    await stack.driver.click(ALICE, "depth_standard", picker)
    await wait_for(lambda: tiers.at_first_call is not None, 30, "the first model call")
    assert tiers.at_first_call is not None
    assert any(t.startswith("Planning — splitting the question (standard)")
               for t in tiers.at_first_call), tiers.at_first_call  # the plan, before any call
    await wait_for(lambda: bool(stack.finals(mention)), 60, "the final message")


@pytest.mark.timeout(90)
async def test_a_deleted_status_message_does_not_fail_the_research(
        start_stack: StartStack, backend: RecordingBackend) -> None:
    stack = await start_stack(Slow(0.05), backend)
    _, mention = await stack.driver.mention(f"<@{BOT_USER_ID}> {QUESTION}")
    picker = copy.deepcopy(stack.thread(mention)[0])
    await stack.driver.click(ALICE, "depth_standard", picker)
    stack.fake.call("chat.delete", channel=CHANNEL, ts=picker.ts)  # someone deletes it
    await wait_for(lambda: bool(stack.finals(mention)), 60, "the final message")
    await stack.settled()  # a failure would be posted after the final message
    assert not [m for m in stack.thread(mention) if m.text.startswith("Research failed")]


def test_header_helper_reads_only_headers() -> None:
    from playground.fake_slack import Message
    msg = Message("C", "1.0", "t", [{"type": "header", "text": {"type": "plain_text",
                                                                "text": "Research finished"}}])
    assert header(msg) == "Research finished"
    assert header(Message("C", "1.0", "t", [])) == ""
