"""The default flow as a person sees it (issue 44, item 9): `redsearch up` on its embedded
defaults (the sample corpus, the code path the empty model profile sends every call to, a
worker in this process), used from headless Chromium in English and in Chinese: a mention,
Standard, the run to its end, two follow-ups. The thread fails the test on what a careful
colleague would never write: a raw source id, citation numbers with a gap, a token or cost
table, an English interface string in the Chinese thread, a chart line drawn across a
missing period."""

from __future__ import annotations

import dataclasses
import io
import itertools
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from PIL import Image

from contract.redis_server import free_port
from redsearch.up import UpStack, start_up
from research_core.search.corpus import sample_corpus_dir
from research_core.settings import Settings, WorkerSettings
from research_core.wording import CHINESE, catalogue
from tests.test_playground_browser import browser, open_page, save_screenshot, say
from tests.test_playground_browser import pytestmark as browser_marks
from workers.chart_image import LINE_KEY

__all__ = ["browser"]
pytestmark = browser_marks

from playwright.async_api import Browser, Locator, Page, expect  # noqa: E402  (skip guard)

FLOWS = {
    "en": ("how did heat pump sales move in 2026?", "Standard", "Research finished",
           ("Which month had the highest sales?", "What were heat pump prices doing?")),
    "zh": ("2026年热泵销量是怎样变化的？", "标准", "研究完成",
           ("哪个月的销量最高？", "热泵价格怎么样？")),
}
CITATION = re.compile(r"\[(\d+)\]")
COST_WORDS = re.compile(r"\btokens?\b|per tier|\$0\.0", re.IGNORECASE)  # not "cost": a topic


@pytest.fixture
async def up(redis_url: str, tmp_path: Path) -> AsyncIterator[UpStack]:
    base = Settings.from_env({"RED_BUDGET_STEPS": "8"})  # `make run`'s steps, else defaults
    settings = dataclasses.replace(
        base, data_dir=tmp_path, database_url=f"sqlite+aiosqlite:///{tmp_path / 'runs.db'}",
        worker=WorkerSettings(redis_url=redis_url, lease_s=4.0, heartbeat_s=0.5,
                              reconcile_every_s=0.5))
    stack = await start_up(settings, port=free_port(), say=lambda _: None, inline_worker={})
    try:
        yield stack
    finally:
        await stack.stop()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("language", ["en", "zh"])
async def test_the_default_flow_reads_like_a_colleague_wrote_it(
        up: UpStack, browser: Browser, tmp_path: Path, language: str) -> None:
    question, depth, finished, followups = FLOWS[language]
    assert up.playground is not None
    page = await open_page(browser, up.playground)
    await say(page, "#composer-text", f"@RED {question}")
    await page.get_by_role("button", name="1 reply").click()
    thread = page.locator("#thread-messages")
    await thread.get_by_role("button", name=depth, exact=True).click()
    await expect(thread).to_contain_text(finished, timeout=240_000)
    for followup in followups:  # the asker's message, then the answer under its heading
        await say(page, "#thread-text", followup)
        await page.wait_for_function(
            "q => document.querySelector('#thread-messages').innerText.split(q).length > 2",
            arg=followup, timeout=60_000)
    save_screenshot(await page.screenshot(full_page=True), tmp_path,
                    f"default-flow-{language}.png")
    await check_thread(page, thread, language)
    await page.close()


async def check_thread(page: Page, thread: Locator, language: str) -> None:
    messages = await thread.locator(".message").all_inner_texts()
    text = "\n".join(messages)
    raw = [s.stem for s in sample_corpus_dir().glob("*.md") if s.stem in text]
    assert not raw, f"raw source ids in the thread: {raw}"
    for message in messages:
        assert_numbered_without_gaps(message)
    assert not COST_WORDS.search(text), f"internals in the thread: {COST_WORDS.search(text)}"
    if language == "zh":
        english = [text[max(0, text.index(m) - 60):text.index(m) + 60]
                   for m in interface_strings() if m in text]
        assert not english, f"English interface strings in the Chinese thread: {english}"
        buttons = await thread.locator("button:not(.shortcut)").all_inner_texts()  # the bot's
        assert not [b for b in buttons if re.search("[A-Za-z]{3}", b.replace("Markdown", ""))]
    await check_charts(page, thread)


def interface_strings() -> list[str]:
    """The catalogue's English phrases (two words or more: a single word such as "quarter" is
    also in the English sources a Chinese answer quotes)."""
    chinese = catalogue(CHINESE)
    assert chinese is not None
    fragments = (piece.strip() for m in chinese if isinstance(m.id, str)
                 for piece in re.split(r"\{[^}]*\}", m.id))
    return sorted({f for f in fragments if re.search(r"[A-Za-z]{3,} [A-Za-z]{2,}", f)})


def assert_numbered_without_gaps(message: str) -> None:
    """A message's citations are [1], [2] … in order of first use, none skipped."""
    first_uses: list[int] = []
    for found in CITATION.finditer(message):
        if int(found[1]) not in first_uses:
            first_uses.append(int(found[1]))
    assert first_uses == list(range(1, len(first_uses) + 1)), (first_uses, message)


async def check_charts(page: Page, thread: Locator) -> None:
    """Every chart in the thread draws its line only between periods next to each other (the
    PNG carries the line's drawn segments, read from the figure's own line)."""
    for src in await thread.locator("img").evaluate_all("imgs => imgs.map(i => i.src)"):
        png = await (await page.request.get(src)).body()
        segments = json.loads(Image.open(io.BytesIO(png)).info[LINE_KEY])
        for segment in segments:
            steps = [period_index(p) for p in segment]
            assert all(b - a == 1 for a, b in itertools.pairwise(steps)), segment


def period_index(period: str) -> int:
    """A period's ordinal in its own unit: months, quarters or halves since year 0."""
    year, part = period.split("-")
    per_year = {"Q": 4, "H": 2}.get(part[0], 12)
    return int(year) * per_year + int(part.lstrip("QH")) - 1
