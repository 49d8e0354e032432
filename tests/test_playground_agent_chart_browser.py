"""A chart and a steer in the playground (issue 30), in headless Chromium against the real bot.
A stand-in worker runs the real pieces a worker runs (the SlackPublisher with the run's plan,
the steers kept in Redis and read by `research_core.loop.review.steering`, the series of the part's
evidence, drawn and uploaded with files_upload_v2 to the playground's fake Slack): the
requester steers the research while it works, the plan shows who asked and what changed,
the part shows its chart as an image, and a revision replaces it."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from bot.app import ResearchRequestMsg
from contract.keys import ACTIVE_KEY
from contract.redis_server import awaited
from contract.slack_client import make_client
from contract.steers import ThreadSteers
from research_core.budget.owner import BudgetOwner
from research_core.loop.memory.evidence import Evidence
from research_core.loop.memory.state import RunState
from research_core.loop.publishing.plan_view import plan_view
from research_core.loop.publishing.series import Series, series_of
from research_core.loop.review import steering
from research_core.models.gateway import Gateway
from research_core.settings import Settings
from tests.conftest import AS_OF
from tests.engine_run import default_similarity
from tests.playground_stack import TOKEN, StandInQueue, playground_stack
from tests.test_playground_browser import browser, open_page, redis, save_screenshot, say
from tests.test_playground_browser import pytestmark as browser_marks
from workers.slack_charts import PartCharts
from workers.slack_publisher import SlackPublisher

__all__ = ["browser", "redis"]  # fixtures
pytestmark = browser_marks

from playwright.async_api import Browser, expect  # noqa: E402  (after the skip guard above)

QUESTION = "how did heat pump sales move in 2026?"
SUBQUESTIONS = ("What were heat pump sales?", "What were heat pump prices?",
                "What happened to heat pump exports?")
FIRST = "Heat pump sales were 515,000 units in Q1 2025, 474,000 units in Q1 2026 and " \
        "571,000 units in Q2 2026."
LATER = "Heat pump sales reached 548,000 units in Q3 2026."


def evidence(source_id: str, title: str, text: str) -> Evidence:
    return Evidence(source_id[:6], "N1", "q1", source_id, title, f"https://{source_id}.example/",
                    dt.date(2026, 10, 20), "industry_association", "CHPA", text, 0.9, 0.85,
                    1.0, 0.9, "", True)


class ChartingWorker(StandInQueue):
    """Stands in for the ARQ worker of one research: the plan while it works, the steers it
    reads, then one part with its chart, revised with a later quarter."""

    def __init__(self, redis: aioredis.Redis) -> None:
        self.redis = redis
        self.api_url = ""
        self.tasks: list[asyncio.Task[None]] = []
        self.seen = asyncio.Event()

    async def research(self, request: ResearchRequestMsg) -> bool:
        await awaited(self.redis.hset(ACTIVE_KEY, request.job_id, "{}"))  # as the queue does
        self.tasks.append(asyncio.create_task(self.run(request)))
        return True

    async def run(self, request: ResearchRequestMsg) -> None:
        state = RunState.new(request.question, AS_OF, Settings(), mode="standard")
        for i, question in enumerate(SUBQUESTIONS):
            state.tree.add_child("N0", question, 0.9 - i / 10)
        pub = SlackPublisher(make_client(TOKEN, self.api_url), request.channel,
                             request.thread_ts, progress_interval=0.2)
        pub.show_plan(lambda: plan_view(state))
        await pub.progress(state.run_id, "Checking: What were heat pump sales?")
        await self.steered(state, request, pub)
        state.evidence = [evidence("chpa-q", "Quarterly heat pump sales", FIRST)]

        def chart_for(part: str, sources: list[str]) -> tuple[Series, dict[str, str]] | None:
            found = series_of([e for e in state.evidence if e.source_id in sources],
                              QUESTION)
            return (found, {e.source_id: e.title for e in state.evidence}) if found else None

        pub.charts = PartCharts(pub.client, chart_for)
        ts = await pub.answer_part(state.run_id, "N1", "Sales fell in Q1, then rose [chpa-q].",
                                   ["chpa-q"])
        await self.seen.wait()  # the test saw the first chart
        state.evidence.append(evidence("later-q3", "Third-quarter heat pump sales", LATER))
        await pub.answer_part(state.run_id, "N1",
                              "Sales fell in Q1, then rose in Q2 and Q3 [chpa-q][later-q3].",
                              ["chpa-q", "later-q3"], replaces=ts, reason="a later quarter")
        state.status = "finished"
        pub.plan_changed()
        await pub.close()
        await awaited(self.redis.hdel(ACTIVE_KEY, request.job_id))

    async def steered(self, state: RunState, request: ResearchRequestMsg,
                      pub: SlackPublisher) -> None:
        """Wait for the requester's steer and read it as the engine does before a step."""
        source = ThreadSteers(self.redis, request.key)
        gateway = Gateway({}, state.ledger, state.log)
        owner = BudgetOwner.start(Settings().budget, "standard", request.user)
        for _ in range(300):
            if await steering.read_steers(source, gateway, state, owner, default_similarity(),
                                          Settings().engine, use_planner=False):
                pub.plan_changed()
                return
            await asyncio.sleep(0.05)
        raise AssertionError("no steer came")


@pytest.mark.timeout(90)
async def test_a_steer_and_a_chart_in_the_playground(redis: aioredis.Redis, browser: Browser,
                                                     tmp_path: Path) -> None:
    worker = ChartingWorker(redis)
    async with playground_stack(redis, queue=worker) as (pg, _):
        worker.api_url = pg.api_url
        page = await open_page(browser, pg)
        await say(page, "#composer-text", f"@RED {QUESTION}")
        await page.locator("#messages").get_by_role("button", name="1 reply").click()
        thread = page.locator("#thread-messages")
        await thread.get_by_role("button", name="Standard").click()
        await expect(thread.locator("li.task")).to_have_count(4)  # split, three sub-questions

        await say(page, "#thread-text", "skip exports, focus on prices")
        await expect(thread.locator(".ephemeral").first).to_contain_text(
            "Noted: at its next step the research will drop the open sub-questions about "
            "“exports”; research “prices” next")
        steer = thread.locator("li.task", has_text="Steer:")
        await expect(steer).to_contain_text("“skip exports, focus on prices”")
        await expect(steer.locator(".mention")).to_have_text("@Alice")
        await expect(steer).to_contain_text("Dropped: What happened to heat pump exports?")
        await expect(steer).to_contain_text("First: What were heat pump prices?")
        exports = thread.locator("li.task", has_text="What happened to heat pump exports?")
        await expect(exports.last).to_contain_text("Dropped, as asked in the thread")

        part = thread.locator(".message", has_text="Sales fell in Q1")
        chart = part.locator("figure.block-image img")
        await expect(chart).to_have_count(1)
        await expect(chart).to_have_attribute("alt", f"Chart: units by quarter, for “{QUESTION}”."
                                              " Q1 2025: 515,000; Q1 2026: 474,000; Q2 2026: "
                                              "571,000. Sources: Quarterly heat pump sales.")
        first_src = await chart.get_attribute("src")
        worker.seen.set()
        await expect(part).to_contain_text("then rose in Q2 and Q3")  # the revision
        await expect(chart).to_have_count(1)  # replaced, not a second image
        await expect(chart).not_to_have_attribute("src", first_src or "")
        await expect(chart).to_have_attribute("alt", f"Chart: units by quarter, for “{QUESTION}”."
                                              " Q1 2025: 515,000; Q1 2026: 474,000; Q2 2026: "
                                              "571,000; Q3 2026: 548,000. Sources: Quarterly "
                                              "heat pump sales; Third-quarter heat pump sales.")
        await page.wait_for_function(  # the PNG really loaded from the fake's /files/
            "() => [...document.querySelectorAll('figure.block-image img')]"
            ".some(img => img.complete && img.naturalWidth > 300)")
        for task in worker.tasks:
            await task
        await expect(page.locator("#thread-status")).to_be_hidden()  # cleared at the end
        save_screenshot(await page.screenshot(full_page=True), tmp_path,
                        "playground-steer.png")
        await chart.scroll_into_view_if_needed()
        save_screenshot(await page.screenshot(full_page=True), tmp_path,
                        "playground-chart.png")
        assert len(pg.fake.files.live()) == 1  # the first chart's file was deleted
        await page.close()
