"""SlackPublisher against the fake Slack Web API through the real AsyncWebClient."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from typing import Any

from contract.slack_client import make_client
from playground.fake_slack import FakeSlack
from tests.conftest import SLACK_TOKEN as TOKEN
from workers.loading_status import status_line
from workers.slack_publisher import SECTION_LIMIT, SlackPublisher, split_text

CH = "C0PUB"


def publisher(fake: FakeSlack, interval: float = 0.05) -> tuple[SlackPublisher, str]:
    thread = fake.post_user_message(CH, "U1", "<@U0FAKEBOT> what moved copper prices?")
    pub = SlackPublisher(make_client(TOKEN, fake.base_url), CH, thread.ts,
                         progress_interval=interval)
    return pub, thread.ts


def block_texts(blocks: list[dict[str, Any]]) -> str:
    return json.dumps(blocks)


async def test_part_posted_in_thread_as_markdown_with_sources(fake: FakeSlack) -> None:
    pub, thread_ts = publisher(fake)
    ts = await pub.answer_part("r1", "p1", "Copper rose *12%* [https://a.example/x].",
                               ["https://a.example/x"])
    assert ts is not None
    msg = fake.message(CH, ts)
    assert msg is not None and msg.thread_ts == thread_ts
    assert [b["type"] for b in msg.blocks] == ["markdown", "context"]
    assert msg.blocks[0] == {"type": "markdown",
                             "text": "Copper rose *12%* [\\[1\\]](https://a.example/x)."}
    assert "https://a.example/x" in block_texts(msg.blocks[1:])
    assert msg.text == "Copper rose *12%* [1]."


async def test_revision_edits_the_same_message(fake: FakeSlack) -> None:
    pub, thread_ts = publisher(fake)
    ts = await pub.answer_part("r1", "p1", "Old claim.", ["s1"])
    assert ts is not None
    again = await pub.answer_part("r1", "p1", "New claim.", ["s1", "s2"], replaces=ts,
                                  reason="a better source")
    assert again == ts
    assert len(fake.calls("chat.postMessage")) == 1
    assert fake.calls("chat.update")[0].params["ts"] == ts
    assert len(fake.messages(CH, thread_ts)) == 2  # the question and the one part
    msg = fake.message(CH, ts)
    assert msg is not None and msg.text == "New claim."
    assert "revised: a better source" in block_texts(msg.blocks)
    assert [h["text"] for h in msg.history] == ["Old claim."]


async def test_unknown_replaces_posts_anew(fake: FakeSlack) -> None:
    pub, _ = publisher(fake)
    ts = await pub.answer_part("r1", "p1", "Text.", [], replaces="1.000001", reason="r")
    assert ts is not None and fake.message(CH, ts) is not None


async def test_long_part_split_within_limits(fake: FakeSlack) -> None:
    pub, _ = publisher(fake)
    paragraph = ("Copper foil demand grew strongly. " * 40).strip()
    text = "\n\n".join([paragraph] * 12) + " [s1]"
    ts = await pub.answer_part("r1", "p1", text, ["s1"])
    assert ts is not None
    msg = fake.message(CH, ts)
    assert msg is not None
    sections = [b["text"]["text"] for b in msg.blocks if b["type"] == "section"]
    assert len(sections) > 1 and len(msg.blocks) <= 50
    assert all(len(s) <= SECTION_LIMIT for s in sections)
    assert " ".join(" ".join(sections).split()) == " ".join(text.replace("[s1]", "[1]").split())
    huge = split_text("x" * (SECTION_LIMIT * 60))
    assert all(len(c) <= SECTION_LIMIT for c in huge)
    ts2 = await pub.answer_part("r1", "p2", "word " * 40_000 + "[s1]", ["s1"])
    big = fake.message(CH, ts2 or "")
    assert big is not None and len(big.blocks) == 50  # 49 sections cut, then the sources


async def test_progress_coalesced_into_one_message(fake: FakeSlack) -> None:
    pub, thread_ts = publisher(fake, interval=0.05)
    notes = [f"step {i}" for i in range(12)]
    for note in notes:
        await pub.progress("r1", note)
        await asyncio.sleep(0.01)
    await pub.close()
    posts, updates = fake.calls("chat.postMessage"), fake.calls("chat.update")
    assert len(posts) == 1 and 1 <= len(updates) <= len(notes)
    writes = sorted(c.at for c in posts + updates)
    assert all(b - a >= 0.04 for a, b in itertools.pairwise(writes))
    assert len(fake.messages(CH, thread_ts)) == 2
    msg = fake.message(CH, pub.progress_ts or "")
    assert msg is not None and "step 11" in msg.text
    assert "step 3" not in msg.text and msg.text.count("•") == 8
    statuses = [c.params.get("status") for c in fake.calls("assistant.threads.setStatus")]
    assert statuses[-2:] == ["step 11", ""]
    assert fake.status(CH, thread_ts) == ""  # closed: the loading status is cleared


async def test_set_status_carries_the_note(fake: FakeSlack) -> None:
    pub, thread_ts = publisher(fake)
    await pub.progress("r1", "Searching the corpus")
    await pub.close()
    call, cleared = fake.calls("assistant.threads.setStatus")
    assert call.params["status"] == "Searching the corpus"
    assert call.params["thread_ts"] == thread_ts and call.params["channel_id"] == CH
    assert cleared.params["status"] == "" and cleared.params["thread_ts"] == thread_ts


async def test_status_unsupported_is_not_raised(fake: FakeSlack) -> None:
    fake.fail("assistant.threads.setStatus", "missing_scope")
    pub, _ = publisher(fake, interval=0.0)
    await pub.progress("r1", "one")
    await pub.progress("r1", "two")
    await pub.close()
    assert len(fake.calls("assistant.threads.setStatus")) == 1  # not tried again
    msg = fake.message(CH, pub.progress_ts or "")
    assert msg is not None and "two" in msg.text


async def test_forced_429_is_retried_after_retry_after(fake: FakeSlack) -> None:
    pub, _ = publisher(fake)
    fake.force_ratelimit(1, method="chat.postMessage", retry_after=0)
    started = time.monotonic()
    ts = await pub.answer_part("r1", "p1", "Answer.", ["s1"])
    assert ts is not None and fake.message(CH, ts) is not None
    assert [c.status for c in fake.calls("chat.postMessage")] == [429, 200]
    assert time.monotonic() - started < 3


async def test_real_rate_limit_waits_for_retry_after() -> None:
    async with FakeSlack(token=TOKEN, post_interval=0.5) as fake:
        pub, _ = publisher(fake)
        first = await pub.answer_part("r1", "p1", "One.", [])
        second = await pub.answer_part("r1", "p2", "Two.", [])
    assert first and second and float(second) > float(first)
    assert [c.status for c in fake.calls("chat.postMessage")] == [200, 429, 200]


async def test_resumed_publisher_edits_its_progress_message(fake: FakeSlack) -> None:
    pub, thread_ts = publisher(fake)
    await pub.progress("r1", "before the crash")
    await pub.close()
    resumed = SlackPublisher(make_client(TOKEN, fake.base_url), CH, thread_ts,
                             progress_interval=0.0, progress_ts=pub.progress_ts)
    await resumed.progress("r1", "resumed")
    await resumed.close()
    assert len(fake.calls("chat.postMessage")) == 1
    msg = fake.message(CH, pub.progress_ts or "")
    assert msg is not None and "resumed" in msg.text


async def test_failed_progress_write_is_not_raised(fake: FakeSlack) -> None:
    pub, _ = publisher(fake, interval=0.0)
    fake.fail("chat.postMessage", "channel_not_found")
    await pub.progress("r1", "lost")
    fake.fail("chat.postMessage", None)
    await pub.progress("r1", "kept")
    await pub.close()
    msg = fake.message(CH, pub.progress_ts or "")
    assert msg is not None and "kept" in msg.text


async def test_a_part_streamed_before_a_crash_is_edited_not_posted_again(
        fake: FakeSlack) -> None:
    pub, thread_ts = publisher(fake)
    pub.recipient = ("T0FAKE", "U1")
    stream = pub.stream_part("r1", "report", "r1/report/v1")
    await stream.write("The report, as far as it was written before the worker died")
    await stream.write(" — long enough to have been appended to the stream twice over. " * 2)
    [streamed] = [m for m in fake.messages(CH, thread_ts) if m.stream is not None]
    assert fake.streams.live(streamed)  # the worker died with its stream open
    resumed = SlackPublisher(make_client(TOKEN, fake.base_url), CH, thread_ts,
                             progress_interval=0.0, streamed=dict(pub.streamed))
    ts = await resumed.answer_part("r1", "report", "The report [1].", ["s1"],
                                   key="r1/report/v1")
    assert ts == streamed.ts and len(fake.calls("chat.postMessage")) == 0
    assert [c.error for c in fake.calls("chat.update")] == ["streaming_state_conflict", None]
    assert len(fake.calls("chat.stopStream")) == 1  # stopped, then edited
    assert streamed.text == "The report [1]." and streamed.blocks[-1]["type"] == \
        "context_actions"


async def test_a_stream_that_expires_carries_on_as_edits_of_its_message() -> None:
    async with FakeSlack(token=TOKEN, post_interval=0.0, stream_idle_s=0.3) as fake:
        pub, thread_ts = publisher(fake)
        pub.recipient = ("T0FAKE", "U1")
        stream = pub.stream_part("r1", "followup-1.2", "r1/followup-1.2/v1")
        await stream.write("A first paragraph of the answer, long enough to be sent. " * 3)
        await asyncio.sleep(0.4)  # the model thinks; the stream expires
        await stream.write("And the rest of it, " * 8)
        await stream.end()
    [message] = [m for m in fake.messages(CH, thread_ts) if m.stream is not None]
    assert [c.error for c in fake.calls("chat.appendStream")][-1] == \
        "message_not_in_streaming_state"
    assert "And the rest of it" in message.text and message.history  # edited instead
    assert message.text.count("A first paragraph of the answer") == 3  # nothing lost
    assert len(fake.calls("chat.postMessage")) == 0


async def test_the_loading_status_is_kept_set_while_the_job_works_and_cleared_after() -> None:
    """Slack clears a loading status two minutes after it was set (the fake: 0.3 s); the
    publisher sets it again within that while the job works, and clears it at the end."""
    async with FakeSlack(token=TOKEN, post_interval=0.0, status_timeout_s=0.3) as fake:
        thread = fake.post_user_message(CH, "U1", "<@U0FAKEBOT> how did sales move?")
        pub = SlackPublisher(make_client(TOKEN, fake.base_url), CH, thread.ts,
                             progress_interval=0.0, status_refresh_s=0.1)
        await pub.progress("r1", "Checking: How did heat pump sales move in 2026?")
        for _ in range(8):  # 0.8 s of a slow model call: no note, the status stays
            await asyncio.sleep(0.1)
            assert fake.status(CH, thread.ts) == \
                "Checking: How did heat pump sales move in 2026?"
        await pub.close()
        assert fake.status(CH, thread.ts) == ""
        sets = len(fake.calls("assistant.threads.setStatus"))
        await asyncio.sleep(0.3)
        assert len(fake.calls("assistant.threads.setStatus")) == sets  # no refresh after


async def test_a_status_not_set_again_clears_itself_in_the_fake() -> None:
    async with FakeSlack(token=TOKEN, post_interval=0.0, status_timeout_s=0.2) as fake:
        thread = fake.post_user_message(CH, "U1", "a question")
        changes, stop = fake.subscribe()
        await make_client(TOKEN, fake.base_url).assistant_threads_setStatus(
            channel_id=CH, thread_ts=thread.ts, status="thinking…")
        assert fake.status(CH, thread.ts) == "thinking…"
        await asyncio.sleep(0.3)
        assert fake.status(CH, thread.ts) == "" and fake.statuses(CH) == {}
        shown: list[str] = []
        while not changes.empty():
            change = changes.get_nowait()
            if change.kind == "status":
                shown.append(change.data["status"])
        assert shown == ["thinking…", ""]  # the page is told when it goes
        stop()


def test_the_status_line_says_what_the_job_does_never_a_notes_internals() -> None:
    conflict = ("Conflict on 'What were heat pump sales in 2026?' (2026-Q1): 474,000 units "
                "(heat-home-weekly-q1-2026-sales-fall) vs 214,000 units "
                "(eurobuild-daily-september-2026-sales)")
    assert status_line(conflict) == "weighing sources that disagree"
    long = "Checking: " + "which European markets sold the most heat pumps " * 4
    line = status_line(long)
    assert len(line) <= 100 and line.endswith("…") and line[:-1] in long
    assert not line[:-1].endswith((" ", ":"))  # cut after a whole word
    assert status_line("Checking: How did prices move?") == "Checking: How did prices move?"
