"""Exactly-once posting: the intent is recorded before the call, the message carries its key in
Slack's metadata, and a crash between the post and its record is reconciled by reading the
thread, not by posting again. A resumed job on a finished run only re-delivers what is
missing, without a model call."""

from __future__ import annotations

import pytest
from slack_sdk.errors import SlackApiError
from sqlalchemy import delete

from contract.requests import ResearchRequestMsg
from contract.slack_client import make_client
from playground.fake_slack import FakeSlack
from research_core.delivery.publications import Delivery, Publication
from research_core.delivery.publishers import MemoryPublisher
from research_core.runlog import RunLog
from research_core.store.models import PublicationIntentRow, PublicationRow
from research_core.store.restore import load_state
from research_core.store.sql import SqlStore
from tests.conftest import SLACK_TOKEN, RecordingBackend, scripted_settings
from tests.engine_run import Serve, run_engine, run_state
from tests.scripted import Script
from workers import thread_messages
from workers.slack_outbox import EVENT_TYPE
from workers.slack_publisher import SlackPublisher

CH = "C0ONCE"


class Crash(Exception):
    """The worker dies here."""


class CrashingStore(SqlStore):
    """The real store, whose next `record_publication` dies before it writes (the worker was
    killed after Slack accepted the message)."""

    crash_next = False

    async def record_publication(self, publication: Publication) -> None:
        if self.crash_next:
            self.crash_next = False
            raise Crash(publication.key)
        await super().record_publication(publication)


@pytest.fixture
async def crashing(store: SqlStore) -> CrashingStore:
    return CrashingStore(store.engine)


def thread(fake: FakeSlack) -> tuple[SlackPublisher, str]:
    parent = fake.post_user_message(CH, "U1", "<@U0FAKEBOT> how did copper move?")
    return SlackPublisher(make_client(SLACK_TOKEN, fake.base_url), CH, parent.ts), parent.ts


async def test_a_crash_between_post_and_record_posts_no_duplicate(
        fake: FakeSlack, crashing: CrashingStore) -> None:
    publisher, thread_ts = thread(fake)
    crashing.crash_next = True
    with pytest.raises(Crash):
        await Delivery("run1", publisher, crashing, RunLog()).part("N1", "Copper rose 12% [1].",
                                                                   ["s1"])
    [posted] = fake.calls("chat.postMessage")
    assert posted.params["metadata"] == {"event_type": EVENT_TYPE,
                                         "event_payload": {"key": "run1/N1/v1"}}
    assert await crashing.sent_publication("run1/N1/v1") is None
    resumed_publisher = SlackPublisher(make_client(SLACK_TOKEN, fake.base_url), CH, thread_ts)
    resumed = Delivery("run1", resumed_publisher, crashing, RunLog())
    again = await resumed.part("N1", "Copper rose 12% [1].", ["s1"])
    assert len(fake.calls("chat.postMessage")) == 1
    assert fake.calls("conversations.replies")[0].params["include_all_metadata"] in ("1", True)
    assert again is not None and again.channel_id == posted_ts(fake)
    recorded = await crashing.sent_publication("run1/N1/v1")
    assert recorded is not None and recorded.channel_id == posted_ts(fake)
    assert await crashing.pending_publication("run1/N1/v1") is None
    assert any("before the crash" in e.message for e in resumed.log.of_kind("outbox"))


def posted_ts(fake: FakeSlack) -> str:
    [part] = [m for m in fake.messages(CH) if m.thread_ts]
    return part.ts


async def test_an_intent_that_never_reached_slack_is_sent_on_resume(
        fake: FakeSlack, store: SqlStore) -> None:
    publisher, _ = thread(fake)
    fake.fail("chat.postMessage", "internal_error")
    with pytest.raises(SlackApiError):
        await Delivery("run1", publisher, store, RunLog()).part("N1", "Copper rose.", [])
    assert await store.pending_publication("run1/N1/v1") is not None
    fake.fail("chat.postMessage", None)
    resumed = Delivery("run1", publisher, store, RunLog())
    await resumed.part("N1", "Copper rose.", [])
    assert len([m for m in fake.messages(CH) if m.thread_ts]) == 1
    assert (await store.sent_publication("run1/N1/v1")) is not None


async def test_a_closing_message_is_posted_once_across_a_crash(
        fake: FakeSlack, crashing: CrashingStore) -> None:
    _, thread_ts = thread(fake)
    slack = make_client(SLACK_TOKEN, fake.base_url)
    request = ResearchRequestMsg(key="red:req:x", user="U1", channel=CH, thread_ts=thread_ts,
                                 ts=thread_ts, question="q", status="running")
    note, blocks = thread_messages.failed_message("run1", "job1", "the <!channel> broke")
    crashing.crash_next = True
    with pytest.raises(Crash):
        await thread_messages.post_once(slack, crashing, request, note, blocks)
    again, blocks = thread_messages.failed_message("run1", "job1", "the <!channel> broke")
    ts = await thread_messages.post_once(slack, crashing, request, again, blocks)
    [posted] = fake.calls("chat.postMessage")
    assert ts == posted_ts(fake) and posted.params["parse"] == "none"
    assert "<!channel>" not in posted.params["text"]


async def test_the_progress_message_is_found_when_its_ts_was_lost(fake: FakeSlack) -> None:
    _, thread_ts = thread(fake)
    first = SlackPublisher(make_client(SLACK_TOKEN, fake.base_url), CH, thread_ts,
                           progress_interval=0, progress_key="run1/progress/job1")
    await first.progress("run1", "Checking: copper")
    await first.close()
    second = SlackPublisher(make_client(SLACK_TOKEN, fake.base_url), CH, thread_ts,
                            progress_interval=0, progress_key="run1/progress/job1")
    await second.progress("run1", "Checking: copper again")
    await second.close()
    assert len(fake.calls("chat.postMessage")) == 1
    assert second.progress_ts == first.progress_ts
    assert "copper again" in fake.messages(CH)[-1].text


async def test_a_finished_run_resumed_redelivers_only_what_is_missing(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    publisher = MemoryPublisher()
    out = await run_engine(serve, Script(), backend, store, publisher=publisher)
    calls = len(out.server.requests)
    run_id = out.state.run_id
    async with store.sessions.begin() as session:  # the report's record was lost
        await session.execute(delete(PublicationRow).where(PublicationRow.key ==
                                                           f"{run_id}/report/v1"))
    state = await load_state(store, run_id, scripted_settings(out.server.base_url))
    again = MemoryPublisher()
    resumed = await run_state(out.server, state, backend, store, publisher=again)
    assert len(out.server.requests) == calls, "no model call on a finished run"
    assert [p.part_key for p in again.parts] == ["report"]
    assert again.parts[0].text == publisher.latest()["report"].text == resumed.render()
    assert not await store.rows(PublicationIntentRow, run_id)


async def test_a_thread_that_cannot_be_read_back_does_not_fail_the_run(
        fake: FakeSlack, crashing: CrashingStore) -> None:
    publisher, _ = thread(fake)
    crashing.crash_next = True
    with pytest.raises(Crash):
        await Delivery("run1", publisher, crashing, RunLog()).part("N1", "Copper rose.", [])
    fake.fail("conversations.replies", "missing_scope")
    again = await Delivery("run1", publisher, crashing, RunLog()).part("N1", "Copper rose.", [])
    assert again is not None and again.channel_id is not None
    assert len(fake.calls("chat.postMessage")) == 2  # at-least-once when Slack cannot tell
