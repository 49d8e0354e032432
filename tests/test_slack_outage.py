"""A Slack outage during a run, end to end (the bot's endpoint, Redis, ARQ, a worker, the fake
Slack answering faults): the job is put off and resumed, never failed, and nothing is posted
twice. It used to end the run: a text body raised AttributeError in the error path, and ARQ
could not even store the job's result."""

from __future__ import annotations

import collections
import logging

import pytest

from playground.fake_slack import BOT_USER_ID
from playground.fake_slack_faults import FAULTS
from tests.conftest import RecordingBackend
from tests.scripted import Script
from tests.slack_driver import ALICE
from tests.slack_stack import StartStack, wait_for
from workers.slack_outbox import key_of

QUESTION = "How did heat pump sales and prices move in 2026?"
# The Web API methods a research job calls.
WORKER_METHODS = ("chat.postMessage", "chat.update", "conversations.replies",
                  "chat.getPermalink", "views.publish", "assistant.threads.setStatus",
                  "auth.test", "chat.startStream", "chat.appendStream", "chat.stopStream")


@pytest.mark.timeout(150)
@pytest.mark.parametrize("kind", FAULTS)
async def test_a_slack_outage_costs_retries_never_the_run(
        start_stack: StartStack, backend: RecordingBackend, caplog: pytest.LogCaptureFixture,
        kind: str) -> None:
    caplog.set_level(logging.INFO)
    stack = await start_stack(Script(), backend)
    _, mention = await stack.driver.mention(f"<@{BOT_USER_ID}> {QUESTION}")
    [picker] = stack.thread(mention)
    assert await stack.driver.click(ALICE, "depth_standard", picker) == 200
    for method in WORKER_METHODS:  # from now on each answers the fault a few times
        stack.fake.fault(kind, method, count=6 if method == "chat.postMessage" else 3)
    await wait_for(lambda: bool(stack.finals(mention)), 120, "the final message")
    await stack.settled(30)
    thread = stack.thread(mention)
    assert len(stack.finals(mention)) == 1
    assert not [m for m in thread if m.text.startswith("Research failed")]
    keys = collections.Counter(key_of(m.to_dict(with_metadata=True)) for m in thread)
    keys.pop(None, None)
    assert keys and max(keys.values()) == 1, keys  # nothing posted twice
    assert len([c for c in stack.fake.calls() if c.error == kind]) >= 6
    assert "Slack is away" in caplog.text  # the job was put off, then resumed
    assert "Traceback" not in caplog.text
    assert "error serializing result" not in caplog.text
