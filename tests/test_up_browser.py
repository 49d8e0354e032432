"""`redsearch up` in-process with scripted tiers, used from headless Chromium like a person
would: mention, Deep, progress and parts, a revision in place, the final message, a follow-up."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from contract.redis_server import free_port
from redsearch.up import UpStack, start_up
from research_core.settings import WorkerSettings
from tests.conftest import AS_OF, RecordingBackend, scripted_settings
from tests.engine_run import Serve, default_similarity
from tests.playground_stack import ALICE, BOB
from tests.test_playground_browser import browser, open_page, save_screenshot, say, switch_user
from tests.test_playground_browser import pytestmark as browser_marks
from tests.test_slack_flow import QUESTION, correction_script, late_correction

__all__ = ["browser"]
pytestmark = browser_marks

from playwright.async_api import Browser, expect  # noqa: E402  (after the skip guard above)


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
    await expect(thread).to_contain_text("Checking:")
    await expect(thread).to_contain_text("Sources:")
    await expect(thread).to_contain_text("revised: new evidence from", timeout=60_000)
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
