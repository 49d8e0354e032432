"""The plan preview in the playground, in headless Chromium, against the real bot: "Preview
plan" on the picker, the sub-questions shown with Start and Edit, a stranger's Edit refused,
the Edit modal (views.open) with the sub-questions as lines and the depth, a submission the bot
refuses (too many lines) with the error under its input, one it accepts (the preview redrawn),
and Start queuing the research with the edited plan. A scripted worker makes the preview
(instead of a planner call) and records what is queued."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from bot.app import ResearchRequestMsg
from contract.mrkdwn import NO_PARSE
from contract.plan_blocks import preview_blocks, preview_text
from contract.requests import PREVIEW, Requests
from contract.slack_client import make_client
from tests.playground_stack import TOKEN, StandInQueue, playground_stack
from tests.test_playground_browser import (
    browser,
    open_page,
    redis,
    save_screenshot,
    say,
    switch_user,
)
from tests.test_playground_browser import pytestmark as browser_marks

__all__ = ["browser", "redis"]  # fixtures
pytestmark = browser_marks

from playwright.async_api import Browser, expect  # noqa: E402  (after the skip guard above)

QUESTION = "how did heat pump prices move in 2026?"
PLAN = ["What happened to heat pump equipment prices?", "What happened to installed prices?"]
ADDED = "Why did heat pump prices change in 2026?"
ALICE, BOB = "U0ALICE", "U0BOB"


class PreviewWorker(StandInQueue):
    """Stands in for the ARQ worker: a plan preview (as `workers.team_rules.preview_job`
    shows one, without the planner call), and the research requests it is given."""

    def __init__(self, redis: aioredis.Redis) -> None:
        self.api_url = ""
        self.requests = Requests(redis)
        self.researched: list[ResearchRequestMsg] = []

    async def research(self, request: ResearchRequestMsg) -> bool:
        self.researched.append(request)
        return True

    async def preview(self, request: ResearchRequestMsg) -> bool:
        shown = await self.requests.update(request.key, lambda r: r.with_(
            status=PREVIEW, plan=PLAN, preview_at=time.time()))
        assert shown is not None
        posted = await make_client(TOKEN, self.api_url).chat_postMessage(
            channel=shown.channel, thread_ts=shown.thread_ts, text=preview_text(shown),
            blocks=preview_blocks(shown), **NO_PARSE)
        await self.requests.update(request.key, lambda r: r.with_(preview_ts=posted["ts"]))
        return True

    async def watch_set(self, request: ResearchRequestMsg, user: str, cadence: str) -> bool:
        return False  # no watches in this test


@pytest.mark.timeout(90)
async def test_a_plan_is_previewed_edited_in_a_modal_and_started(
        redis: aioredis.Redis, browser: Browser, tmp_path: Path) -> None:
    worker = PreviewWorker(redis)
    async with playground_stack(redis, queue=worker) as (pg, _):
        worker.api_url = pg.api_url
        page = await open_page(browser, pg)
        await say(page, "#composer-text", f"@RED {QUESTION}")
        await page.locator("#messages").get_by_role("button", name="1 reply").click()
        thread = page.locator("#thread-messages")
        await thread.get_by_role("button", name="Preview plan").click()
        await expect(thread).to_contain_text(PLAN[0])
        edit = thread.get_by_role("button", name="Edit")

        await switch_user(page, BOB)  # a stranger's Edit: refused, no modal
        await edit.click()
        await expect(thread.locator(".ephemeral")).to_contain_text(
            "Only @Alice can edit this plan.")
        await expect(page.locator("#modal")).to_be_hidden()
        await switch_user(page, ALICE)

        await edit.click()
        modal = page.get_by_role("dialog", name="Edit the plan")
        await expect(modal).to_be_visible()
        lines = modal.get_by_role("textbox")
        await expect(lines).to_have_value("\n".join(PLAN))
        await lines.fill("\n".join(f"Sub-question number {i} on prices?" for i in range(5)))
        await modal.get_by_role("button", name="Save").click()
        await expect(modal.locator(".modal-error").first).to_have_text(
            "at most 4 sub-questions, please (you gave 5)")
        await lines.fill("\n".join([PLAN[1], ADDED]))
        await modal.get_by_role("combobox").select_option("standard")
        save_screenshot(await page.screenshot(full_page=True), tmp_path,
                        "playground-plan-modal.png")
        await modal.get_by_role("button", name="Save").click()
        await expect(page.locator("#modal")).to_be_hidden()
        await expect(thread).to_contain_text(ADDED)
        await expect(thread).to_contain_text("Depth: Standard")
        await expect(thread).not_to_contain_text(PLAN[0])

        await thread.get_by_role("button", name="Start").click()
        await expect(thread).to_contain_text("Started with this plan.")
        await expect(thread).to_contain_text("Depth: Standard — queued")
        [request] = worker.researched
        assert request.plan == [PLAN[1], ADDED] and request.depth == "standard"
        save_screenshot(await page.screenshot(full_page=True), tmp_path,
                        "playground-plan-started.png")
        await page.close()
