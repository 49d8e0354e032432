"""The playground's agent surfaces in headless Chromium, against the real bot: a plan whose
tasks go from pending to in progress to complete with their sources, an answer streamed with a
cursor into its message and then shown as Markdown (a page's disguised link stays text), a
feedback click, `/research` typed in the composer, and the Home tab. A scripted worker
publishes through the real SlackPublisher and slack_sdk client."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from bot.app import ResearchRequestMsg
from contract.slack_client import make_client
from research_core.plan import PlanSource, PlanTask, PlanView
from tests.playground_stack import TOKEN, StandInQueue, playground_stack
from tests.slack_stack import wait_for
from tests.test_playground_browser import browser, open_page, redis, save_screenshot, say
from tests.test_playground_browser import pytestmark as browser_marks
from workers.slack_publisher import SlackPublisher

__all__ = ["browser", "redis"]  # fixtures
pytestmark = browser_marks

from playwright.async_api import Browser, expect  # noqa: E402  (after the skip guard above)

QUESTION = "how did heat pump prices move in 2026?"
SOURCE = PlanSource("https://example.com/prices", "Price tracker")
STREAMED = ["Heat pump prices **fell 9.5%** to 7,150 euros in October 2026, ",
            "while installed prices rose 2.8% to 14,600 euros [1]. ",
            "A page wrote [your bank](https://evil.example/login) and <!channel>. "]
REPORT = "".join(STREAMED) + "\n\n- equipment down\n- installation up [https://example.com/prices]"


def plan(step: int) -> PlanView:
    """The plan after `step` steps: the first sub-question done at step 2, the second at 4."""
    def status(done_at: int) -> str:
        return "complete" if step >= done_at else "in_progress" if step == done_at - 1 \
            else "pending"
    first = PlanTask("N1", "What happened to equipment prices?", status(2),  # type: ignore[arg-type]
                     output="Prices fell 9.5% to 7,150 euros" if step >= 2 else "",
                     sources=(SOURCE,) if step >= 2 else (),
                     details=("Reflection: answers goal: True",) if step >= 2 else ())
    second = PlanTask("N2", "What happened to installed prices?", status(4),  # type: ignore[arg-type]
                      output="Installed prices rose 2.8%" if step >= 4 else "")
    return PlanView(f"Researching — step {step} of 36, standard",
                    (PlanTask("N0", "Split the question into sub-questions", "complete",
                              "2 sub-questions"), first, second))


class PlanWorker(StandInQueue):
    """Stands in for the ARQ worker: a plan filling in, then a streamed, rated answer."""

    def __init__(self, pause_s: float = 0.7, step_s: float = 1.6) -> None:
        self.api_url = ""
        self.pause_s = pause_s
        self.step_s = step_s  # long enough for the page to show each state of the plan
        self.tasks: list[asyncio.Task[None]] = []
        self.researched: list[ResearchRequestMsg] = []
        self.verdicts: list[tuple[str, str, str]] = []
        self.go = asyncio.Event()  # set by the test once it watches the thread

    async def research(self, request: ResearchRequestMsg) -> bool:
        self.researched.append(request)
        self.tasks.append(asyncio.create_task(self.run(request)))
        return True

    async def feedback(self, request: ResearchRequestMsg, message_ts: str, user: str,
                       part_key: str, verdict: str) -> bool:
        self.verdicts.append((user, part_key, verdict))
        return True

    async def run(self, request: ResearchRequestMsg) -> None:
        publisher = SlackPublisher(make_client(TOKEN, self.api_url), request.channel,
                                   request.thread_ts, progress_interval=0.2,
                                   recipient=(request.team, request.user))
        now = {"step": 0}
        await self.go.wait()
        publisher.show_plan(lambda: plan(now["step"]))
        for step in range(1, 5):
            await asyncio.sleep(self.step_s)
            now["step"] = step
            publisher.plan_changed()
        key = f"{request.run_id}/report/v1"
        stream = publisher.stream_part(request.run_id, "report", key)
        for piece in STREAMED:
            await asyncio.sleep(self.pause_s)
            await stream.write(piece)
        await asyncio.sleep(self.pause_s * 2)
        await stream.end()
        await publisher.answer_part(request.run_id, "report", REPORT, [SOURCE.url], key=key)
        await publisher.close()


@pytest.mark.timeout(90)
async def test_a_plan_fills_in_an_answer_streams_and_takes_feedback_and_home_shows_the_run(
        redis: aioredis.Redis, browser: Browser, tmp_path: Path) -> None:
    worker = PlanWorker()
    async with playground_stack(redis, queue=worker) as (pg, _):
        worker.api_url = pg.api_url
        page = await open_page(browser, pg)
        await say(page, "#composer-text", f"/research standard {QUESTION}")
        status = page.locator("#messages .message", has_text="Depth: Standard")
        await expect(status).to_contain_text(QUESTION)
        # the status message is posted before the job is handed to the worker: wait for it
        await wait_for(lambda: bool(worker.researched), 10, "the job to reach the worker")
        [request] = worker.researched
        assert request.depth == "standard" and request.team == "T0FAKE"

        await pg.deliverer.idle()
        await page.goto(f"{pg.url}/#thread={request.thread_ts}")
        await page.wait_for_selector("body[data-ready='1']")
        thread = page.locator("#thread-messages")
        await expect(thread).to_contain_text(QUESTION)
        worker.go.set()
        tasks = thread.locator(".block-plan .task")
        await expect(tasks).to_have_count(3)
        await expect(tasks.nth(1)).to_have_attribute("data-status", "in_progress")
        await expect(tasks.nth(2)).to_have_attribute("data-status", "pending")
        await expect(tasks.nth(1)).to_have_attribute("data-status", "complete")
        await expect(tasks.nth(1).locator(".task-sources a")).to_have_attribute(
            "href", SOURCE.url)
        await expect(tasks.nth(1)).to_contain_text("Prices fell 9.5% to 7,150 euros")
        await expect(tasks.nth(2)).to_have_attribute("data-status", "in_progress")
        await expect(thread.locator(".plan-title")).to_have_text(
            "Researching — step 4 of 36, standard")
        await expect(thread.locator(".block-plan")).to_have_count(1)  # edited in place

        streaming = thread.locator(".message.streaming")
        await expect(streaming.locator(".cursor")).to_be_visible()
        await expect(streaming).to_contain_text("fell 9.5%")
        save_screenshot(await page.screenshot(full_page=True), tmp_path,
                        "playground-plan-streaming.png")
        answer = thread.locator(".message", has_text="installation up")
        await expect(answer.locator(".block-markdown b")).to_have_text("fell 9.5%")
        await expect(answer.locator(".cursor")).to_have_count(0)
        await expect(answer).to_contain_text("[your bank](https://evil.example/login)")
        cite = answer.locator(".block-markdown a")  # the one live link: the bot's citation
        await expect(cite).to_have_text("[1]")
        await expect(cite).to_have_attribute("href", SOURCE.url)
        await expect(answer.locator(".block-context a")).to_have_attribute("href", SOURCE.url)

        await answer.get_by_role("button", name="Mark this answer as good").click()
        await expect(thread.locator(".ephemeral")).to_contain_text("your feedback on this "
                                                                   "answer is recorded")
        await expect(answer.locator(".icon-btn.selected")).to_have_count(1)
        assert worker.verdicts == [("U0ALICE", "report", "positive")]
        save_screenshot(await page.screenshot(full_page=True), tmp_path,
                        "playground-plan-finished.png")

        await page.get_by_role("button", name="RED Searcher").click()
        home = page.locator("#home-content")
        await expect(home).to_contain_text("Your recent research")
        await expect(home).to_contain_text(QUESTION)
        await expect(home).to_contain_text("Budgets in force")
        save_screenshot(await page.screenshot(full_page=True), tmp_path, "playground-home.png")
        await asyncio.gather(*worker.tasks)
        await page.close()


@pytest.mark.timeout(60)
async def test_an_unknown_command_and_a_bad_one_are_answered_to_their_author(
        redis: aioredis.Redis, browser: Browser) -> None:
    async with playground_stack(redis, queue=PlanWorker()) as (pg, _):
        page = await open_page(browser, pg)
        await say(page, "#composer-text", "/weather tomorrow")
        await expect(page.locator("#messages .ephemeral")).to_contain_text(
            "/weather is not a valid command")
        await say(page, "#composer-text", "/research deep")
        await expect(page.locator("#messages .ephemeral").last).to_contain_text(
            "Usage: /research [auto|standard|deep] your question")
