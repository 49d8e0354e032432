"""A follow-up sent as a run finishes (issue 45 item 7): once the run has done its last step
it closes its thread's steers, so a message that comes after is a follow-up, acknowledged as
one ("…I'll answer it as a follow-up right after"), never "the research reads this at its next
step"; one that came after the last read but before the close is handed on as a follow-up by
the worker, and its writer told so. End to end: the bot's endpoint with signed events, real
Redis and ARQ, the worker running the engine on scripted tiers, the fake Slack."""

from __future__ import annotations

from typing import Any

import pytest
from arq.connections import ArqRedis

from contract.keys import ACTIVE_KEY, request_key
from contract.queue import connect
from contract.redis_server import awaited
from contract.requests import RUNNING, ResearchRequestMsg, followup_job_id
from contract.slack_client import make_client
from contract.steers import LATE, LATE_READ, ThreadSteers, add_steer
from playground.fake_slack import BOT_USER_ID, FakeSlack
from research_core.loop.publishing.plan_view import plan_view
from research_core.protocols import Steer
from research_core.settings import Settings
from research_core.store.sql import SqlStore
from tests.conftest import SLACK_TOKEN, RecordingBackend
from tests.engine_run import Serve, default_similarity, run_engine
from tests.fakes.openai_server import Reply, schema_name
from tests.scripted import Script
from tests.slack_driver import ALICE
from tests.slack_stack import CHANNEL, StartStack, wait_for
from tests.test_modes import THREE
from tests.test_steering import LateSteers
from workers.services import Services
from workers.thread_work import RunSteers

QUESTION = "How did heat pump sales and prices move in 2026?"
REPORT_S = 3.0  # the report takes this long: the test writes in the thread meanwhile


class ReportTakesAWhile(Script):
    """Scripted tiers whose first report call takes REPORT_S: the run has done its last step
    (its steers are closed) and is writing its answer."""

    def __init__(self) -> None:
        super().__init__(subquestions=THREE)
        self.reporting = False

    def __call__(self, body: dict[str, Any]) -> str | Reply:
        answer = super().__call__(body)
        if (schema_name(body) or "report") != "report" or self.reporting:
            return answer
        self.reporting = True
        return Reply(content=answer if isinstance(answer, str) else answer.content,
                     delay_s=REPORT_S)


@pytest.mark.timeout(120)
async def test_a_message_while_the_report_is_written_is_answered_as_a_follow_up(
        start_stack: StartStack, backend: RecordingBackend) -> None:
    script = ReportTakesAWhile()
    stack = await start_stack(script, backend)
    _, mention = await stack.driver.mention(f"<@{BOT_USER_ID}> {QUESTION}")
    [picker] = stack.thread(mention)
    await stack.driver.click(ALICE, "depth_standard", picker)
    await wait_for(lambda: script.reporting, 60, "the report being written")

    _, said = await stack.driver.say_in_thread(mention.ts, "focus on exports")
    [ack] = stack.fake.ephemerals(CHANNEL, ALICE)
    assert ack.text == LATE  # not "the research reads this at its next step"
    assert "next step" not in ack.text
    key = request_key(CHANNEL, mention.ts)
    assert await ThreadSteers(stack.pool, key).after(0) == []  # no step will read it
    assert await awaited(stack.pool.hexists(ACTIVE_KEY, followup_job_id(CHANNEL, said.ts)))

    await wait_for(lambda: bool(stack.finals(mention)), 60, "the final message")
    await wait_for(lambda: any(m.text.startswith("*Follow-up:* focus on exports")
                               for m in stack.thread(mention)), 60, "the follow-up's answer")
    await stack.settled()
    assert [e.text for e in stack.fake.ephemerals(CHANNEL, ALICE)] == [LATE]  # said once
    plan = [m for m in stack.thread(mention) if m.blocks and m.blocks[0]["type"] == "plan"]
    assert not [t for t in plan[0].blocks[0]["tasks"] if t["task_id"].startswith("steer-")]


@pytest.fixture
async def pool(redis_url: str) -> Any:
    arq = await connect(redis_url)
    yield arq
    await arq.aclose()


async def test_a_steer_the_last_step_missed_is_handed_on_as_a_follow_up(
        pool: ArqRedis, fake: FakeSlack, store: SqlStore, backend: RecordingBackend) -> None:
    """Written after the run's last read, before its close: the bot said "noted" (the list
    was open); the worker's close finds it unread, queues it as a follow-up and tells its
    writer; what comes after the close is refused as a steer."""
    request = ResearchRequestMsg(request_key(CHANNEL, "1.0"), ALICE, CHANNEL, "1.0", "1.0",
                                 QUESTION, RUNNING)
    services = Services(Settings(), {}, default_similarity(), backend, store,
                        make_client(SLACK_TOKEN, fake.base_url), pool)
    source = RunSteers(services, request)
    assert await add_steer(pool, request, Steer(ALICE, "skip the UK", "1.1"))  # read
    assert await add_steer(pool, request, Steer(ALICE, "prices first", "1.2"))  # missed
    assert [s.text for s in await source.after(0)] == ["skip the UK", "prices first"]

    late = await source.close(1)
    assert [s.text for s in late] == ["prices first"]
    job = followup_job_id(CHANNEL, "1.2")
    assert await awaited(pool.hexists(ACTIVE_KEY, job))  # answered as a follow-up
    [told] = fake.ephemerals(CHANNEL, ALICE)
    assert told.text == LATE_READ and told.thread_ts == "1.0"

    assert not await add_steer(pool, request, Steer(ALICE, "exports too", "1.3"))
    assert await source.after(1) == []  # steering has ended
    assert await source.close(1) == []  # a resumed run hands nothing on twice
    assert len(fake.ephemerals(CHANNEL, ALICE)) == 1

    await source.tell(Steer(ALICE, "x", "1.4"), "Your steer: <!channel> first")
    assert fake.ephemerals(CHANNEL, ALICE)[-1].text == "Your steer: &lt;!channel&gt; first"


async def test_the_run_logs_a_late_steer_and_the_plan_says_it_is_a_follow_up(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    steers = LateSteers(Steer(ALICE, "and exports?", "9.9"), after_calls=10_000)
    out = await run_engine(serve, Script(subquestions=THREE), backend, store,
                           mode="standard", steers=steers, max_steps=4)
    [event] = out.state.log.of_kind("steer")
    assert event.data["how"] == "late" and event.data["who"] == ALICE
    finalised = out.state.log.of_kind("finalise")[0]
    assert event.seq > finalised.seq and steers.closed == [0]
    assert steers.told == []  # no step read it
    assert out.state.extra.steers_read == 1
    [task] = [t for t in plan_view(out.state).tasks if t.task_id.startswith("steer-")]
    assert task.output == ("came after the research's last step: answered as a follow-up "
                           "instead")
    assert task.asked_by == ALICE
