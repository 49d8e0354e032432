"""The playground in headless Chromium (Debian's, driven by Playwright): the whole thread
experience against the real bot, with a scripted worker that publishes through the real
SlackPublisher and slack_sdk client."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from bot.app import ResearchRequestMsg
from contract.slack_client import make_client
from playground.fake_slack import BOT_USER_ID
from playground.server import Playground
from tests.playground_stack import (
    ALICE,
    BOB,
    TOKEN,
    StandInQueue,
    playground_stack,
    real_redis,
)
from workers.slack_publisher import SlackPublisher

try:
    from playwright.async_api import Browser, Locator, Page, async_playwright, expect
except ImportError:  # pragma: no cover - `make test` installs the dev extras
    pytest.skip("playwright is not installed (pip install -e '.[dev]')", allow_module_level=True)

CHROMIUM = Path(os.environ.get("RED_CHROMIUM", "/usr/bin/chromium"))
ROOT = Path(__file__).resolve().parent.parent
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK),
                       reason=f"{CHROMIUM} missing: `make test` installs Debian's chromium "
                              "(apt-get, as root or through sudo)"),
]
QUESTION = "what moved copper foil prices in 2026?"
SMM = "https://example.com/smm"
FIRST = f"Copper foil prices rose **12%** in 2026 as battery demand grew [{SMM}]."
REVISED = f"Copper foil prices rose **14%** in 2026 as battery demand grew [{SMM}]."
WAIT_MS = 15_000  # generous for a loaded 2-core CI machine; a passing run waits far less


class ScriptedWorker(StandInQueue):
    """Stands in for the ARQ worker: progress edited in place, an answer part, a revision."""

    def __init__(self, api_url: str, pause_s: float = 0.6) -> None:
        self.api_url = api_url
        self.pause_s = pause_s
        self.tasks: list[asyncio.Task[None]] = []

    async def research(self, request: ResearchRequestMsg) -> bool:
        self.tasks.append(asyncio.create_task(self.run(request)))
        return True

    async def run(self, request: ResearchRequestMsg) -> None:
        publisher = SlackPublisher(make_client(TOKEN, self.api_url), request.channel,
                                   request.thread_ts, progress_interval=0.2)
        run_id = request.job_id
        await publisher.progress(run_id, "Planning the goal tree")
        await asyncio.sleep(self.pause_s)
        await publisher.progress(run_id, "Searching: copper foil price 2026")
        await publisher.flush()
        sources = ["https://example.com/smm"]  # a URL the publisher links itself
        part = await publisher.answer_part(run_id, "p1", FIRST, sources)
        await asyncio.sleep(self.pause_s * 2)
        await publisher.answer_part(run_id, "p1", REVISED, sources, replaces=part,
                                    reason="newer statistics")
        await publisher.progress(run_id, "Writing the report")
        await publisher.close()

    async def wait(self) -> None:
        await asyncio.gather(*self.tasks)


@pytest.fixture
async def redis() -> AsyncIterator[aioredis.Redis]:
    async with real_redis() as client:
        yield client


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    expect.set_options(timeout=WAIT_MS)
    async with async_playwright() as pw:
        launched = await pw.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        try:
            yield launched
        finally:
            await launched.close()


async def open_page(browser: Browser, pg: Playground, fragment: str = "") -> Page:
    page = await browser.new_page(viewport={"width": 1400, "height": 900})
    page.set_default_timeout(WAIT_MS)
    await page.goto(pg.url + "/" + fragment)
    await page.wait_for_selector("body[data-ready='1']")
    return page


async def switch_user(page: Page, user: str) -> None:
    await page.select_option("#user-select", user)
    await page.wait_for_selector("body[data-ready='1']")


async def say(page: Page, box: str, text: str) -> None:
    await page.fill(box, text)
    await page.press(box, "Enter")


def save_screenshot(shot: bytes, tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_bytes(shot)
    folder = Path(os.environ.get("RED_DATA_DIR") or ROOT / ".redsearch-data") / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(tmp_path / name, folder / name)


async def test_mention_pick_deep_watch_the_thread_fill_and_revise(
        redis: aioredis.Redis, browser: Browser, tmp_path: Path) -> None:
    worker = ScriptedWorker("")
    async with playground_stack(redis, queue=worker) as (pg, _):
        worker.api_url = pg.api_url
        pg.deliverer.retry_delay_s = 0.05  # this bot has no `message` handler yet: it 404s
        page = await open_page(browser, pg)
        await say(page, "#composer-text", f"@RED {QUESTION}")
        channel = page.locator("#messages")
        await expect(channel).to_contain_text(f"@RED Searcher {QUESTION}")
        await channel.get_by_role("button", name="1 reply").click()
        thread = page.locator("#thread-messages")
        deep = thread.get_by_role("button", name="Deep")
        await expect(deep).to_be_visible()
        await expect(thread.get_by_role("button", name="Auto")).to_have_class("btn primary")

        # Someone else's click: refused, only they see it.
        await switch_user(page, BOB)
        await deep.click()
        await expect(thread.locator(".ephemeral")).to_contain_text(
            "Only @Alice can choose the depth for this request.")
        await expect(thread.locator(".ephemeral")).to_contain_text("Only visible to you")
        await switch_user(page, ALICE)
        await expect(thread.locator(".ephemeral")).to_have_count(0)

        await deep.click()
        await expect(thread).to_contain_text("Depth: Deep — queued")
        await expect(thread).to_contain_text("Searching: copper foil price 2026")
        await expect(page.locator("#thread-status")).to_contain_text("RED Searcher is ")
        part = thread.locator(".message", has_text="battery demand")
        await expect(part).to_contain_text("rose 12% in 2026")
        await expect(part.locator("b")).to_have_text("12%")
        links = part.locator("a")  # the citation [1], then the sources line's link
        await expect(links).to_have_count(2)
        await expect(links.first).to_have_text("[1]")
        await expect(links.first).to_have_attribute("href", "https://example.com/smm")
        await expect(part).not_to_contain_text("[https://")
        await expect(part).to_contain_text("rose 14% in 2026")
        await expect(part).to_contain_text("revised: newer statistics")
        await expect(part.locator(".edited")).to_have_text("(edited)")
        await expect(thread.locator(".message", has_text="12%")).to_have_count(0)
        await worker.wait()
        await expect(thread).to_contain_text("Writing the report")

        # A follow-up in the thread reaches the bot as a thread message.
        await say(page, "#thread-text", "and what about @Bob's numbers?")
        await expect(thread).to_contain_text("and what about @Bob's numbers?")
        await pg.deliverer.idle()
        [follow_up] = [d for d in pg.deliverer.deliveries if "what about <@U0BOB>" in d.body]
        assert follow_up.kind == "event" and '"thread_ts"' in follow_up.body

        # Another tab and a reload see the same thread, revision included.
        other = await open_page(browser, pg, f"#thread={await part_parent(pg)}")
        await expect(other.locator("#thread-messages")).to_contain_text("rose 14% in 2026")
        await page.reload()
        await page.wait_for_selector("body[data-ready='1']")
        await expect(page.locator("#thread-messages")).to_contain_text("revised: newer statistics")
        await expect(page.locator("#thread-messages .ephemeral")).to_have_count(0)
        save_screenshot(await page.screenshot(full_page=True), tmp_path, "playground-thread.png")
        await other.close()
        await page.close()


async def part_parent(pg: Playground) -> str:
    [root] = [m for m in pg.fake.messages(pg.channel) if m.thread_ts is None]
    return root.ts


async def test_a_bot_restart_is_waited_out_and_untrusted_text_stays_text(
        redis: aioredis.Redis, browser: Browser, tmp_path: Path) -> None:
    async with playground_stack(redis, start_bot=False, down_retry_s=0.2) as (pg, bot):
        pg.deliverer.retry_delay_s = 0.05
        page = await open_page(browser, pg)
        await say(page, "#composer-text", "@RED <img src=x onerror=window.pwned=1> *copper*?")
        await expect(page.locator("#banner")).to_contain_text("RED Searcher is not answering")
        await bot.start()
        await page.get_by_role("button", name="1 reply").click()
        thread = page.locator("#thread-messages")
        await expect(thread.get_by_role("button", name="Deep")).to_be_visible()
        await expect(page.locator("#banner")).to_be_hidden()
        await expect(page.locator("#messages")).to_contain_text("<img src=x onerror=")
        assert await page.evaluate("window.pwned") is None
        await expect(page.locator("#messages img")).to_have_count(0)

        pg.fake.call("chat.postMessage", channel=pg.channel, blocks=MRKDWN_BLOCKS, text="x")
        shown = page.locator(".message", has_text="Report")
        await expect(shown.locator(".block-header")).to_have_text("Report")
        await check_mrkdwn(shown)
        assert await page.evaluate("window.pwned") is None
        save_screenshot(await page.screenshot(full_page=True), tmp_path, "playground-blocks.png")
        await page.close()


MRKDWN_BLOCKS = [
    {"type": "header", "text": {"type": "plain_text", "text": "Report"}},
    {"type": "section", "text": {"type": "mrkdwn", "text": (
        "*bold* _italic_ ~gone~ `a<b` and <https://example.com/x?a=1&amp;b=2|a link> "
        f"for <@{ALICE}> in <#C0PLAYGROUND>\n&gt; a quote\n• one\n• two\n"
        "```x = 1 &lt; 2\n<script>window.pwned=1</script>```\n"
        "<javascript:window.pwned=1|bad link> &lt;b&gt;not bold&lt;/b&gt;\n"
        "escaped: &lt;!channel&gt; &lt;@U123&gt; &amp;lt;")},
     "fields": [{"type": "mrkdwn", "text": "*Depth*\nDeep"},
                {"type": "plain_text", "text": "<i>plain</i>"}]},
    {"type": "divider"},
    {"type": "context", "elements": [{"type": "mrkdwn", "text": "_revised: checked_"}]},
    {"type": "actions", "elements": [
        {"type": "button", "action_id": "stop_research", "style": "danger", "value": "k",
         "text": {"type": "plain_text", "text": "Stop"}}]},
    {"type": "rich_text", "elements": [{"type": "rich_text_section", "elements": [
        {"type": "text", "text": "rich ", "style": {"bold": True}},
        {"type": "user", "user_id": BOT_USER_ID}]}]},
]


async def check_mrkdwn(shown: Locator) -> None:
    await expect(shown.locator("b", has_text="bold").first).to_have_text("bold")
    await expect(shown.locator("i", has_text="italic")).to_have_text("italic")
    await expect(shown.locator("s")).to_have_text("gone")
    await expect(shown.locator("code")).to_have_text("a<b")
    await expect(shown.locator("a", has_text="a link")).to_have_attribute(
        "href", "https://example.com/x?a=1&b=2")
    await expect(shown.locator(".mention", has_text="@Alice")).to_have_count(1)
    await expect(shown.locator(".mention", has_text="#research")).to_have_count(1)
    await expect(shown.locator("blockquote")).to_have_text("a quote")
    await expect(shown.locator("li")).to_have_text(["one", "two"])
    await expect(shown.locator("pre")).to_contain_text("<script>window.pwned=1</script>")
    await expect(shown.locator("a", has_text="bad link")).to_have_count(0)
    await expect(shown).to_contain_text("<b>not bold</b>")
    await expect(shown).to_contain_text("escaped: <!channel> <@U123> &lt;")
    await expect(shown.locator(".mention", has_text="@channel")).to_have_count(0)
    await expect(shown.locator(".fields")).to_contain_text("<i>plain</i>")
    await expect(shown.locator("hr")).to_have_count(1)
    await expect(shown.get_by_role("button", name="Stop")).to_have_class("btn danger")
    await expect(shown.locator(".mention", has_text="@RED Searcher")).to_have_count(1)
    await expect(shown.locator("script")).to_have_count(0)
