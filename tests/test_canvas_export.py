"""Keeping a finished research (issue 46): "Save as canvas" and "Export as Markdown" under the
report. The real slack_sdk client calls the fake Slack Web API (canvases.create, canvases.edit,
canvases.access.set, files.info, files_upload_v2's three calls); the run lives in a real SQLite
store, the lock in real Redis; the click goes through the real bot's signed endpoint and the
job it queues runs through the worker's real `run_job`."""

from __future__ import annotations

import json
import time
import urllib.parse
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest
import redis.asyncio as aioredis
from aiohttp import web
from arq.connections import ArqRedis

from bot.app import build_app, web_app
from contract.cited_text import describe_evidence
from contract.home import remember
from contract.keeping import CANVAS, CANVAS_ACTION, EXPORT, EXPORT_ACTION, keep_payload
from contract.keys import request_key
from contract.queue import JobQueue, connect
from contract.requests import FINISHED, Requests, ResearchRequestMsg, run_id_for
from contract.research_document import hard_breaks, research_document
from contract.slack_client import make_client
from playground.fake_slack import FakeSlack, Message
from research_core.delivery.publications import Publication
from research_core.loop.memory.evidence import Evidence
from research_core.loop.memory.state import RunState
from research_core.loop.report.reporter import Report, Source
from research_core.settings import Settings
from research_core.store.restore import load_state
from research_core.store.sql import SqlStore
from tests.conftest import AS_OF, SLACK_TOKEN, RecordingBackend
from tests.engine_run import default_similarity
from tests.slack_driver import ALICE, BOB, CHANNEL, SECRET, SlackDriver, signed_headers
from workers.answer_blocks import answer_message
from workers.canvas_export import save_canvas
from workers.jobs import run_job
from workers.kept_research import Keeper, KeepJob
from workers.markdown_export import export_markdown
from workers.services import Services
from workers.slack_publisher import SlackPublisher

QUESTION = "How did heat pump sales and prices move in 2026?"
SALES = "stats-sales"
PRICES = "news-prices"
REPORT_TEXT = ("Sales reached 548,000 units in Q3 2026 [2], while equipment prices fell 9.5% "
               "[1]. Both [1, 2] agree on the direction.")


def evidence(source_id: str, title: str, url: str) -> Evidence:
    return Evidence(f"E{1 + (source_id == PRICES)}", "N1", "q1", source_id, title, url, AS_OF,
                    "news", "CHPA", "text", 0.9, 0.8, 1.0, 0.9, "", True)


def report() -> Report:
    sources = [Source(1, PRICES, "Heat pump prices fall", "https://prices.example/oct",
                      "News", AS_OF, "news"),
               Source(2, SALES, "Sales statistics", "https://stats.example/q3", "CHPA", AS_OF,
                      "official_statistics")]
    return Report(REPORT_TEXT, sources, [1, 2], False)


def publications(run_id: str) -> list[Publication]:
    first = Publication(run_id, "N1", 1, "part", f"*What were sales?*\nSales rose [{SALES}].",
                        [SALES], channel_id="1.000001")
    revised = Publication(run_id, "N1", 2, "part",
                          f"*What were sales?*\nSales were 548,000 units [{PRICES}] and "
                          f"rose [{SALES}].", [SALES, PRICES], f"correction from {PRICES}",
                          replaces="1.000001", channel_id="1.000001")
    answer = Publication(run_id, "report", 1, "part", report().render(),
                         report().cited_source_ids(), channel_id="1.000002")
    return [first, revised, answer]


async def stored_run(store: SqlStore, key: str) -> RunState:
    state = RunState.new(QUESTION, AS_OF, Settings(), mode="standard")
    state.run_id = run_id_for(key)
    state.evidence = [evidence(SALES, "Sales statistics", "https://stats.example/q3"),
                      evidence(PRICES, "Heat pump prices fall", "https://prices.example/oct")]
    state.status = "finished"
    await store.save_checkpoint(state)
    for publication in publications(state.run_id):
        await store.record_publication(publication)
    return await load_state(store, state.run_id, Settings())


@dataclass
class Thread:
    fake: FakeSlack
    keeper: Keeper
    state: RunState
    job: KeepJob
    mention: Message

    def replies(self) -> list[Message]:
        return [m for m in self.fake.messages(CHANNEL, self.mention.ts)
                if m.ts != self.mention.ts]


@pytest.fixture
async def thread(fake: FakeSlack, store: SqlStore,
                 redis: aioredis.Redis) -> AsyncIterator[Thread]:
    mention = fake.post_user_message(CHANNEL, ALICE, f"@RED {QUESTION}")
    key = request_key(CHANNEL, mention.ts)
    state = await stored_run(store, key)
    slack = make_client(SLACK_TOKEN, fake.base_url)
    job = KeepJob.of(keep_payload(CANVAS, key, mention.ts, BOB, "T0FAKE", "1.5"))
    yield Thread(fake, Keeper(slack, store, redis, Settings()), state, job, mention)


def test_the_document_is_the_thread_report_and_parts_at_their_latest_versions() -> None:
    state = RunState.new(QUESTION, AS_OF, Settings())
    state.evidence = [evidence(SALES, "Sales statistics", "https://stats.example/q3"),
                      evidence(PRICES, "Heat pump prices fall", "https://prices.example/oct")]
    state.publications = publications(state.run_id)
    document = research_document(state, "https://fake.slack.test/archives/C1/p1")
    assert document is not None and document.title == QUESTION
    text = document.markdown
    describe = describe_evidence(state.evidence)
    for part in (state.publications[1], state.publications[2]):  # what the thread shows
        _, blocks = answer_message(part.text, part.sources, describe=describe)
        assert hard_breaks(blocks[0]["text"]) in text, \
            "the section is the thread's message, numbered alike"
    assert "Sales rose [" not in text and r"rose [\[2\]](https://stats.example/q3)" in text, \
        "the revision, not the first version, with the thread's numbers"
    report_part = text.split("## Report", 1)[1].split("## Answer parts", 1)[0]
    assert r"548,000 units in Q3 2026 [\[1\]](https://stats.example/q3)" in report_part
    assert r"fell 9.5% [\[2\]](https://prices.example/oct)" in report_part, "first use numbers"
    assert "1. [Sales statistics](https://stats.example/q3)\n2. [Heat pump prices fall]" \
        in report_part
    assert "_revised: correction from \\[1\\]_" in text, "the revision's note, by number"
    assert "[Open the thread in Slack](https://fake.slack.test/archives/C1/p1)" in text
    assert document.filename == f"research-{AS_OF.isoformat()}-{state.run_id}.md"


def test_a_run_without_a_report_has_no_document_yet() -> None:
    state = RunState.new(QUESTION, AS_OF, Settings())
    state.publications = publications(state.run_id)[:2]
    assert research_document(state) is None


async def test_save_as_canvas_makes_one_canvas_shares_it_and_links_it(thread: Thread) -> None:
    assert await save_canvas(thread.keeper, thread.job) == "canvas F0CANVAS0001 saved"
    [canvas] = thread.fake.canvases.live()
    document = research_document(thread.state, f"{thread.fake.permalink_base}/archives/"
                                 f"{CHANNEL}/p{thread.mention.ts.replace('.', '')}")
    assert document is not None
    assert (canvas.title, canvas.markdown) == (QUESTION, document.body), "titled once"
    assert document.markdown == f"# {QUESTION}\n\n{document.body}", "the file's heading"
    assert canvas.access == {CHANNEL: "read"} and canvas.channel == ""
    [link] = thread.replies()
    assert f"/canvases/{canvas.id}|{QUESTION}>" in link.text and f"<@{BOB}>" in link.text

    # the click again (Slack retried it, or someone clicked twice): no second canvas
    assert await save_canvas(thread.keeper, thread.job) == f"canvas {canvas.id} kept up to date"
    assert len(thread.fake.calls("canvases.create")) == 1
    assert len(thread.replies()) == 1, "the link is in the thread once"
    assert thread.fake.calls("canvases.edit") == [], "nothing changed: nothing edited"
    [note] = thread.fake.ephemerals(CHANNEL, BOB)
    assert "already saved as a canvas" in note.text

    # a watch cycle revised the report since: the same canvas shows the new version
    await thread.keeper.store.record_publication(Publication(
        thread.state.run_id, "report", 2, "part", report().render().replace("548,000",
                                                                           "551,000"),
        report().cited_source_ids(), "update", replaces="1.000002"))
    assert await save_canvas(thread.keeper, thread.job) == f"canvas {canvas.id} kept up to date"
    assert len(thread.fake.canvases.live()) == 1 and canvas.edits == 1
    assert "551,000" in canvas.markdown and "548,000 units in Q3" not in canvas.markdown


async def test_a_free_workspace_gets_the_canvas_as_a_tab_of_the_channel(thread: Thread) -> None:
    thread.fake.canvases.free_team = True
    assert await save_canvas(thread.keeper, thread.job) == "canvas F0CANVAS0001 saved"
    [canvas] = thread.fake.canvases.live()
    assert canvas.channel == CHANNEL and thread.fake.calls("canvases.access.set") == []
    [_, tabbed] = thread.fake.calls("canvases.create")
    assert tabbed.params["channel_id"] == CHANNEL


@pytest.mark.parametrize(("fault", "said"), [
    ("scope", "lacks the Slack permission canvases:write"),
    ("ratelimited", "limiting how often the app may call it"),
    ("html-502", "Slack's answer could not be read (HTTP 502)"),
    ("truncated-json", "Slack's answer was not the JSON it sends"),
    ("disabled", "canvases are not available to the app in this workspace"),
])
async def test_a_slack_error_is_a_clear_reply_in_the_thread(thread: Thread, fault: str,
                                                            said: str) -> None:
    fake = thread.fake
    if fault == "scope":
        fake.scopes = tuple(s for s in fake.scopes if s != "canvases:write")
    elif fault == "ratelimited":
        fake.force_ratelimit(count=10, method="canvases.create", retry_after=0)
    elif fault == "disabled":
        fake.fail("canvases.create", "canvas_disabled_user_team")
    else:
        fake.fault(fault, "canvases.create")
    outcome = await save_canvas(thread.keeper, thread.job)
    assert outcome.startswith("canvas not saved")
    [reply] = thread.replies()
    assert reply.text.startswith("I could not save this research as a canvas: ")
    assert said in reply.text
    assert fake.canvases.live() == []
    creates = len(fake.calls("canvases.create"))
    assert creates == (4 if fault == "ratelimited" else 1), \
        "a 429 is retried after Retry-After; a 5xx that may have made one is not"


async def test_export_uploads_the_same_document_once_per_click(thread: Thread) -> None:
    job_id = "export:x:1"
    assert (await export_markdown(thread.keeper, thread.job, job_id)).startswith("exported as F")
    [shared] = thread.replies()
    [file] = thread.fake.files.live()
    assert shared.files and shared.files[0]["id"] == file.id
    assert shared.text == f"<@{BOB}> exported this research as Markdown."
    document = research_document(thread.state, f"{thread.fake.permalink_base}/archives/"
                                 f"{CHANNEL}/p{thread.mention.ts.replace('.', '')}")
    assert document is not None and file.filename == document.filename
    assert file.content == document.markdown.encode()
    assert await export_markdown(thread.keeper, thread.job, job_id) == "already exported"
    assert len(thread.fake.files.live()) == 1, "a job that runs again uploads nothing twice"

    thread.fake.fault("html-502", "files.completeUploadExternal")
    assert (await export_markdown(thread.keeper, thread.job, "export:x:2")).startswith(
        "not exported")
    assert "Slack's answer could not be read (HTTP 502)" in thread.replies()[-1].text
    assert len(thread.fake.calls("files.completeUploadExternal")) == 2, "not repeated"


def click_body(user: str, action_id: str, msg: Message, action_ts: str) -> str:
    """A click on a thread message's button, as Slack sends it (the container names the
    message's thread)."""
    value = next(e["value"] for b in msg.blocks if b.get("type") == "actions"
                 for e in b["elements"] if e.get("action_id") == action_id)
    payload = {"type": "block_actions", "team": {"id": "T0FAKE"}, "user": {"id": user},
               "api_app_id": "A0RED", "trigger_id": "1.2.3",
               "channel": {"id": msg.channel, "name": "research"},
               "container": {"type": "message", "message_ts": msg.ts, "channel_id": msg.channel,
                             "thread_ts": msg.thread_ts, "is_ephemeral": False},
               "message": {"type": "message", "ts": msg.ts, "thread_ts": msg.thread_ts,
                           "text": msg.text, "blocks": msg.blocks},
               "actions": [{"type": "button", "block_id": "keep_research",
                            "action_id": action_id, "value": value, "action_ts": action_ts}]}
    return urllib.parse.urlencode({"payload": json.dumps(payload)})


@dataclass
class Bot:
    driver: SlackDriver
    pool: ArqRedis
    services: Services


@pytest.fixture
async def bot(fake: FakeSlack, store: SqlStore, redis_url: str,
              backend: RecordingBackend, tmp_path: Path) -> AsyncIterator[Bot]:
    pool = await connect(redis_url)
    app = build_app(bot_token=SLACK_TOKEN, signing_secret=SECRET, api_url=fake.base_url,
                    redis=pool, queue=JobQueue(pool), process_before_response=True)
    runner = web.AppRunner(web_app(app, SECRET))
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    session = aiohttp.ClientSession()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}/slack/events"
    services = Services(Settings(), {}, default_similarity(), backend, store,
                        make_client(SLACK_TOKEN, fake.base_url), pool)
    try:
        yield Bot(SlackDriver(url, session, fake), pool, services)
    finally:
        await session.close()
        await runner.cleanup()
        await pool.aclose()


async def run_queued(bot: Bot) -> list[str]:
    """Run the queued jobs as a worker does; their outcomes."""
    outcomes = []
    for job in await bot.pool.queued_jobs():
        await bot.pool.zrem("arq:queue", job.job_id or "")
        outcomes.append(await run_job({"services": bot.services, "job_try": 1}, job.args[0]))
    return outcomes


async def test_the_report_buttons_queue_one_job_per_click_that_a_worker_runs(
        bot: Bot, fake: FakeSlack, store: SqlStore) -> None:
    mention = fake.post_user_message(CHANNEL, ALICE, f"@RED {QUESTION}")
    key = request_key(CHANNEL, mention.ts)
    state = await stored_run(store, key)  # Redis has forgotten the request: its thread names it
    publisher = SlackPublisher(make_client(SLACK_TOKEN, fake.base_url), CHANNEL, mention.ts)
    answer = state.publications[-1]
    ts = await publisher.answer_part(state.run_id, "report", answer.text, answer.sources)
    reported = fake.message(CHANNEL, str(ts))
    assert reported is not None
    labels = [e["text"]["text"] for b in reported.blocks if b["type"] == "actions"
              for e in b["elements"]]
    assert labels == ["Save as canvas", "Export as Markdown"]

    for _ in range(2):  # Slack delivers the same click twice: one job
        status = await bot.driver.post(click_body(BOB, CANVAS_ACTION, reported, "9.1"),
                                       "application/x-www-form-urlencoded")
        assert status == 200
    await bot.driver.post(click_body(BOB, EXPORT_ACTION, reported, "9.2"),
                          "application/x-www-form-urlencoded")
    jobs = await bot.pool.queued_jobs()
    assert sorted(j.args[0]["kind"] for j in jobs) == [CANVAS, EXPORT]
    assert {e.text for e in fake.ephemerals(CHANNEL, BOB)} == {
        "Saving this research as a canvas; its link will follow in the thread.",
        "Exporting this research as a Markdown file into the thread."}
    outcomes = sorted(await run_queued(bot))
    assert outcomes[0] == "canvas F0CANVAS0001 saved" and outcomes[1].startswith("exported")
    assert len(fake.canvases.live()) == 1 and len(fake.files.live()) == 1


async def test_a_click_on_a_thread_the_bot_cannot_place_is_refused(
        bot: Bot, fake: FakeSlack) -> None:
    mention = fake.post_user_message(CHANNEL, ALICE, "hello")
    msg = fake.call("chat.postMessage", channel=CHANNEL, thread_ts=mention.ts, text="r",
                    blocks=[{"type": "actions", "elements": [
                        {"type": "button", "action_id": CANVAS_ACTION, "value": "s0123456789a",
                         "text": {"type": "plain_text", "text": "Save as canvas"}}]}])
    reported = fake.message(CHANNEL, msg["ts"])
    assert reported is not None
    await bot.driver.post(click_body(BOB, CANVAS_ACTION, reported, f"{time.time():.6f}"),
                          "application/x-www-form-urlencoded")
    assert await bot.pool.queued_jobs() == []
    [note] = fake.ephemerals(CHANNEL, BOB)
    assert note.text.startswith("I no longer know which research this thread holds")


async def slash(bot: Bot, text: str, user: str) -> str:
    """`/research <text>` as Slack sends it; the bot's answer (shown to that person)."""
    body = urllib.parse.urlencode({
        "token": "legacy", "team_id": "T0FAKE", "channel_id": "C0ELSEWHERE", "user_id": user,
        "command": "/research", "text": text, "api_app_id": "A0RED", "trigger_id": "1.2.3",
        "response_url": "http://127.0.0.1:9/unused"})
    headers = signed_headers(body, "application/x-www-form-urlencoded")
    async with bot.driver.session.post(bot.driver.url, data=body.encode(),
                                       headers=headers) as resp:
        assert resp.status == 200
        return await resp.text()


async def test_the_command_keeps_the_persons_own_research_in_its_thread(
        bot: Bot, fake: FakeSlack, store: SqlStore) -> None:
    mention = fake.post_user_message(CHANNEL, ALICE, f"@RED {QUESTION}")
    key = request_key(CHANNEL, mention.ts)
    request = ResearchRequestMsg(key, ALICE, CHANNEL, mention.ts, mention.ts, QUESTION,
                                 FINISHED, "standard", team="T0FAKE")
    await Requests(bot.pool).save(request)
    await remember(bot.pool, request)
    await stored_run(store, key)

    assert "no research s0123456789a among your recent research" in await slash(
        bot, "canvas s0123456789a", ALICE)
    assert "You have no recent research that has ended" in await slash(bot, "export", BOB)
    assert await bot.pool.queued_jobs() == []
    assert "Saving this research as a canvas" in await slash(
        bot, f"canvas {request.run_id}", ALICE)
    assert "Exporting this research" in await slash(bot, "EXPORT", ALICE)  # the newest
    assert sorted(await run_queued(bot)) == ["canvas F0CANVAS0001 saved",
                                             "exported as F000000001"]
    assert [m.text.split(":")[0] for m in fake.messages(CHANNEL, mention.ts)[1:]] == [
        f"<@{ALICE}> saved this research as a canvas", f"<@{ALICE}> exported this research "
                                                       "as Markdown."]
