"""Keeping a research in the playground (issue 46), in headless Chromium against the real bot: a
person clicks "Save as canvas" and "Export as Markdown" under a finished report; the bot queues
the jobs in real Redis (ARQ) and a stand-in worker runs them through the worker's real
`run_job`, whose real slack_sdk client calls the playground's fake Slack (canvases.create,
files_upload_v2). The thread shows the canvas's link and the file, and each opens in the
browser: the canvas with the report, its part and its numbered sources; the file as the same
Markdown."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from arq.connections import ArqRedis

from contract.keys import request_key
from contract.queue import JobQueue, connect
from contract.research_document import research_document
from contract.slack_client import make_client
from research_core.settings import Settings
from research_core.store.restore import load_state
from research_core.store.sql import SqlStore
from tests.conftest import RecordingBackend
from tests.engine_run import default_similarity
from tests.playground_stack import ALICE, BOB, PLAYGROUND_REDIS_URL, TOKEN, playground_stack
from tests.redis_db import empty_redis
from tests.test_canvas_export import QUESTION, SALES, stored_run
from tests.test_playground_browser import browser, open_page, save_screenshot, switch_user
from tests.test_playground_browser import pytestmark as browser_marks
from workers.jobs import run_job
from workers.services import Services
from workers.slack_publisher import SlackPublisher

__all__ = ["browser"]  # fixtures
pytestmark = browser_marks

from playwright.async_api import Browser, expect  # noqa: E402  (after the skip guard above)


@pytest.fixture
async def pool() -> AsyncIterator[ArqRedis]:
    async with empty_redis(PLAYGROUND_REDIS_URL) as url:
        arq = await connect(url)
        try:
            yield arq
        finally:
            await arq.aclose()


async def work(pool: ArqRedis, services: Services) -> None:
    """The worker's loop, in short: every queued job run with `run_job`."""
    while True:
        for job in await pool.queued_jobs():
            await pool.zrem("arq:queue", job.job_id or "")
            await run_job({"services": services, "job_try": 1}, job.args[0])
        await asyncio.sleep(0.1)


async def test_save_as_canvas_and_export_open_in_the_browser(
        pool: ArqRedis, browser: Browser, store: SqlStore, backend: RecordingBackend,
        tmp_path: Path) -> None:
    async with playground_stack(pool, queue=JobQueue(pool)) as (pg, _):
        mention = pg.fake.post_user_message(pg.channel, ALICE, f"@RED {QUESTION}")
        state = await stored_run(store, request_key(pg.channel, mention.ts))
        slack = make_client(TOKEN, pg.api_url)
        report = state.publications[-1]
        await SlackPublisher(slack, pg.channel, mention.ts).answer_part(
            state.run_id, "report", report.text, report.sources)
        services = Services(Settings(), {}, default_similarity(), backend, store, slack, pool)
        worker = asyncio.create_task(work(pool, services))
        try:
            page = await open_page(browser, pg, f"#thread={mention.ts}")
            await switch_user(page, BOB)
            thread = page.locator("#thread-messages")
            await thread.get_by_role("button", name="Save as canvas").click()
            await expect(thread.locator(".ephemeral")).to_contain_text(
                "Saving this research as a canvas")
            link = thread.get_by_role("link", name=QUESTION)
            await expect(thread).to_contain_text("@Bob saved this research as a canvas:")
            async with page.expect_popup() as opened:
                await link.click()
            canvas = await opened.value
            await expect(canvas.locator("#canvas-title")).to_have_text(QUESTION)
            body = canvas.locator("#canvas-body")
            await expect(body.locator(".md-heading.md-h2").first).to_have_text("Report")
            await expect(body).to_contain_text("548,000 units in Q3 2026 [1]")
            await expect(body.get_by_role("link", name="Sales statistics").first) \
                .to_have_attribute("href", "https://stats.example/q3")
            await expect(body).to_contain_text("revised: correction from [1]")
            save_screenshot(await canvas.screenshot(full_page=True), tmp_path,
                            "playground-canvas.png")

            await thread.get_by_role("button", name="Export as Markdown").click()
            file_link = thread.locator("a.message-file")
            await expect(file_link).to_contain_text(QUESTION)
            await expect(thread).to_contain_text("@Bob exported this research as Markdown.")
            async with page.expect_popup() as opened:
                await file_link.click()
            shown = await opened.value
            document = research_document(
                await load_state(store, state.run_id, Settings()),
                await services_link(services, pg.channel, mention.ts))
            assert document is not None
            await expect(shown.locator("body")).to_contain_text(f"# {QUESTION}")
            assert (await shown.locator("body").inner_text()).strip() == \
                document.markdown.strip()
            assert SALES not in document.markdown, "sources are named, not shown by id"
        finally:
            worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await worker


async def services_link(services: Services, channel: str, thread_ts: str) -> str:
    resp = await services.slack.chat_getPermalink(channel=channel, message_ts=thread_ts)
    return str(resp["permalink"])
