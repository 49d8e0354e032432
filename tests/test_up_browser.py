"""`redsearch up` in-process with scripted tiers, used from headless Chromium like a person
would: mention, Deep, the plan and parts, a revision in place, the final message, a follow-up;
`/research` with a plan that fills in task by task across a worker restart, a feedback click
stored with the run, and the Home tab."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from contract.redis_server import free_port
from playground.fake_slack import Change
from redsearch.up import UpStack, start_up
from research_core.evaluation.replay import render_feedback, stored_feedback
from research_core.settings import WorkerSettings
from research_core.store.models import RunRow
from research_core.store.sql import SqlStore
from tests.conftest import AS_OF, RecordingBackend, scripted_settings
from tests.engine_run import Serve, default_similarity
from tests.fakes.openai_server import Handler, Reply
from tests.playground_stack import ALICE, BOB
from tests.scripted import Script
from tests.test_playground_browser import browser, open_page, save_screenshot, say, switch_user
from tests.test_playground_browser import pytestmark as browser_marks
from tests.test_slack_flow import QUESTION, correction_script, late_correction
from workers.worker import run_worker

__all__ = ["browser"]
pytestmark = browser_marks

from playwright.async_api import Browser, expect  # noqa: E402  (after the skip guard above)

StartUp = Callable[[Handler], Awaitable[UpStack]]


@pytest.fixture
async def start(serve: Serve, redis_url: str, backend: RecordingBackend,
                tmp_path: Path) -> AsyncIterator[StartUp]:
    """`redsearch up` with its worker in this process, on the given scripted tiers."""
    stacks: list[UpStack] = []

    async def started(handler: Handler) -> UpStack:
        stack = await start_up(await up_settings(serve, handler, redis_url, tmp_path),
                               port=free_port(), say=lambda _: None, inline_worker={
                                   "backend": backend, "similarity": default_similarity()})
        stacks.append(stack)
        return stack

    yield started
    for stack in stacks:
        await stack.stop()


async def up_settings(serve: Serve, handler: Handler, redis_url: str, tmp_path: Path) -> Any:
    server = await serve(handler)
    return dataclasses.replace(
        scripted_settings(server.base_url), as_of=AS_OF, data_dir=tmp_path,
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'runs.db'}",
        worker=WorkerSettings(redis_url=redis_url, lease_s=4.0, heartbeat_s=0.5,
                              reconcile_every_s=0.5))


@pytest.fixture
async def up(serve: Serve, redis_url: str, backend: RecordingBackend,
             tmp_path: Path) -> AsyncIterator[UpStack]:
    server = await serve(correction_script())
    settings = dataclasses.replace(
        scripted_settings(server.base_url), as_of=AS_OF, data_dir=tmp_path,
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'runs.db'}",
        worker=WorkerSettings(redis_url=redis_url, lease_s=4.0, heartbeat_s=0.5,
                              reconcile_every_s=0.5))
    stack = await start_up(settings, port=free_port(), say=lambda _: None, inline_worker={
        "backend": backend, "similarity": default_similarity()})
    late = tmp_path / "late"
    late.mkdir()
    assert stack.playground is not None
    stack.playground.fake.add_listener(late_correction(backend, late))
    try:
        yield stack
    finally:
        await stack.stop()


@pytest.mark.timeout(120)
async def test_the_whole_thread_in_the_browser_against_redsearch_up(
        up: UpStack, browser: Browser, tmp_path: Path) -> None:
    assert up.playground is not None
    page = await open_page(browser, up.playground)
    await say(page, "#composer-text", f"@RED {QUESTION}")
    await page.get_by_role("button", name="1 reply").click()
    thread = page.locator("#thread-messages")
    await thread.get_by_role("button", name="Deep").click()
    await expect(thread).to_contain_text("Depth: Deep —")
    await expect(thread.locator(".block-plan .task").nth(1)).to_be_visible()
    await expect(thread).to_contain_text("Sources:")
    # the late notice corrects a published figure (issue 25: "corrected by"), or adds to it
    await expect(thread).to_contain_text(re.compile(r"revised: (?:corrected by|new evidence "
                                                    r"from)"), timeout=60_000)
    await expect(thread).to_contain_text("209,000")
    await expect(thread).to_contain_text("Research finished", timeout=60_000)
    await expect(thread).to_contain_text("Depth: Deep — finished")

    await say(page, "#thread-text", "What were heat pump sales in September?")
    await expect(thread).to_contain_text("According to the research", timeout=60_000)
    save_screenshot(await page.screenshot(full_page=True), tmp_path, "redsearch-up-thread.png")
    await page.close()


@pytest.mark.timeout(120)
async def test_a_bad_click_and_a_bot_restart_mid_run(up: UpStack, browser: Browser,
                                                     tmp_path: Path) -> None:
    assert up.playground is not None and up.bot is not None
    bot_port = up.bot.port
    page = await open_page(browser, up.playground)
    await say(page, "#composer-text", f"@RED {QUESTION}")
    await page.get_by_role("button", name="1 reply").click()
    thread = page.locator("#thread-messages")
    deep = thread.get_by_role("button", name="Deep")

    await switch_user(page, BOB)  # someone else's request: refused, only Bob sees why
    await deep.click()
    await expect(thread.locator(".ephemeral")).to_contain_text("Only @Alice can choose")
    await switch_user(page, ALICE)
    await deep.click()
    await expect(thread).to_contain_text("Sources:", timeout=60_000)

    await up.stop_bot()  # the bot goes away mid-run; the worker keeps publishing
    await say(page, "#thread-text", "What were heat pump sales in September?")
    await expect(page.locator("#banner")).to_contain_text("is not answering")
    await expect(thread).to_contain_text("Research finished", timeout=60_000)
    await up.start_bot(bot_port)
    await expect(page.locator("#banner")).to_be_hidden()
    await expect(thread).to_contain_text("According to the research", timeout=60_000)
    save_screenshot(await page.screenshot(full_page=True), tmp_path, "redsearch-up-restart.png")
    await page.close()


async def restart_worker(stack: UpStack, backend: RecordingBackend) -> None:
    """The in-process worker stops (its job hands the run over) and a new one starts."""
    assert stack.worker is not None and stack.playground is not None
    stack.worker.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await stack.worker
    stack.playground.notice("worker 1 restarted")
    stack.worker = asyncio.create_task(run_worker(
        stack.settings, stack.redis_url, backend=backend, similarity=default_similarity()))


class Gated(Script):
    """Scripted tiers that hang (the worker is busy) from the moment the first answer part is
    posted until `stall` is cleared: the plan stops with one sub-question answered."""

    def __init__(self) -> None:
        super().__init__()
        self.stall = False
        self.gated = False

    def __call__(self, body: dict[str, Any]) -> str | Reply:
        if self.stall:
            return Reply(content="{}", delay_s=10)
        return super().__call__(body)

    def on_change(self, change: Change) -> None:
        if not self.gated and change.kind == "posted" and "Sources:" in json.dumps(
                change.data.get("blocks")):
            self.stall = self.gated = True


@pytest.mark.timeout(180)
async def test_a_plan_fills_in_task_by_task_across_a_worker_restart_then_feedback_and_home(
        start: StartUp, backend: RecordingBackend, browser: Browser, tmp_path: Path) -> None:
    tiers = Gated()
    stack = await start(tiers)
    assert stack.playground is not None
    stack.playground.fake.add_listener(tiers.on_change)
    page = await open_page(browser, stack.playground)
    await say(page, "#composer-text", f"/research standard {QUESTION}")
    await page.get_by_role("button", name="1 reply").click()
    thread = page.locator("#thread-messages")
    tasks = thread.locator(".block-plan .task")
    done = thread.locator('.block-plan .task[data-status="complete"]')
    await expect(done.nth(1)).to_be_visible(timeout=60_000)  # the first sub-question answered
    for _ in range(600):  # and its part posted: the model hangs from then on
        if tiers.gated:
            break
        await asyncio.sleep(0.1)
    assert tiers.gated, "the first answer part was never posted"
    assert await thread.locator('.block-plan .task:not([data-status="complete"])').count()
    before = await done.count()
    await expect(thread.locator(".plan-title")).to_contain_text("Researching — step")

    await restart_worker(stack, backend)
    tiers.stall = False
    await expect(page.locator("#notice")).to_contain_text("worker 1 restarted")
    await expect(thread.locator(".plan-title")).to_contain_text("Done —",
                                                                timeout=90_000)
    await expect(thread.locator(".block-plan")).to_have_count(1)  # the same plan, edited
    assert await done.count() > before
    assert await tasks.count() == await thread.locator(
        '.block-plan .task[data-status="complete"], .block-plan .task[data-status="error"]'
    ).count(), "every task ends complete or with its reason"
    await expect(thread).to_contain_text("Research finished", timeout=60_000)
    save_screenshot(await page.screenshot(full_page=True), tmp_path, "up-plan-restart.png")

    report = thread.locator(".message", has=page.locator(".block-context-actions")).first
    await report.get_by_role("button", name="Mark this answer as good").click()
    await expect(thread.locator(".ephemeral")).to_contain_text("feedback on this answer")
    store = await SqlStore.open(stack.settings.db_url)
    try:
        for _ in range(100):
            counts = [await stored_feedback(store, r) for r in await store_runs(store)]
            if any(c for c in counts):
                break
            await asyncio.sleep(0.1)
        assert [render_feedback(c).splitlines()[:2] for c in counts if c] == [
            ["Feedback: 1 positive, 0 negative", "  report: 1 positive, 0 negative"]]
    finally:
        await store.close()

    await page.get_by_role("button", name="RED Searcher").click()
    home = page.locator("#home-content")
    await expect(home).to_contain_text(QUESTION)
    await expect(home).to_contain_text("Standard · finished")
    await expect(home.get_by_role("link", name="open the thread")).to_be_visible()
    save_screenshot(await page.screenshot(full_page=True), tmp_path, "up-home.png")
    await home.get_by_role("link", name="open the thread").click()
    await expect(page.locator("#thread-messages .block-plan")).to_have_count(1)
    await page.close()


async def store_runs(store: SqlStore) -> list[str]:
    async with store.sessions() as session:
        return list((await session.execute(select(RunRow.run_id))).scalars().all())
