"""The asker's language (issue 44, item 3): every message the code marks for people has a
Simplified Chinese translation in the catalogue with the same placeholders, and a thread
started in Chinese shows no catalogue English: not in its picker, status, plan, progress notes,
loading status, answer parts, charts, closing messages, replies and ephemerals, nor in the plan
preview's modal. The Home tab has no question to follow: English, unless told otherwise."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
import redis.asyncio as aioredis
from aiohttp import web
from babel.messages.extract import extract_python
from matplotlib.text import Text

from bot.app import PICK_FIRST, build_app, web_app
from bot.commands import cannot_post
from bot.start import DEEP_REFUSED, too_long
from contract.blocks import picker_blocks, picker_text, status_blocks
from contract.home import RunStats, home_view, usage_text
from contract.keys import request_key
from contract.plan_blocks import plan_modal, preview_blocks, preview_text, started_blocks
from contract.requests import ResearchRequestMsg
from contract.watch_blocks import (
    WATCH_ACTION,
    Change,
    WatchChoice,
    changes_blocks,
    changes_text,
    watch_confirmation,
)
from playground.fake_slack import BOT_USER_ID, FakeSlack
from research_core.budget.caps import CapBreach
from research_core.delivery.publishers import MemoryPublisher
from research_core.loop.memory.memory import Summary
from research_core.loop.memory.state import RunState
from research_core.loop.planning.plan_preview import edited_lines
from research_core.loop.publishing.plan_view import plan_view
from research_core.loop.publishing.series import Point, Series
from research_core.loop.report.reporter import Report
from research_core.policy import Caps
from research_core.settings import BudgetSettings, Settings
from research_core.store.sql import SqlStore
from research_core.store.usage import Usage, UsageLine
from research_core.wording import CHINESE, Words, catalogue, for_question
from tests.conftest import AS_OF, SLACK_TOKEN, RecordingBackend
from tests.engine_run import Serve, run_engine
from tests.scripted import Script
from tests.slack_driver import ALICE, BOB, CHANNEL, SECRET, RecordingQueue
from tests.test_bot_app import Bot
from tests.test_modes import FOUR
from workers import chart_image
from workers.answer_blocks import answer_blocks
from workers.chart_image import cjk_font, figure_of
from workers.loading_status import DOING, status_line
from workers.team_rules import refusal_text
from workers.thread_messages import failed_message, finished_message, stopped_message

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bot", "contract", "workers", "research_core", "redsearch")
KEYWORDS: dict[str, None] = {"w": None, "N_": None, "count": None}
FIELD = re.compile(r"\{(\w*)\}")


def marked() -> dict[str | tuple[str, str], str]:
    """Every message the code marks (Babel's Python extractor, as `pybabel extract` runs it):
    `w("…")`, `N_("…")` and `w.count(n, "one", "many")`, with where it is."""
    found: dict[str | tuple[str, str], str] = {}
    for path in (p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")):
        with path.open("rb") as source:
            for line, func, message, _ in extract_python(source, KEYWORDS, [], {}):
                key = _key(str(func), message)
                if key is not None:
                    found.setdefault(key, f"{path.relative_to(ROOT)}:{line}")
    return found


def _key(func: str, message: str | tuple[str, ...] | object) -> str | tuple[str, str] | None:
    texts = message if isinstance(message, tuple) else (message,)
    if func == "count":
        pair = tuple(t for t in texts if isinstance(t, str))
        return (pair[0], pair[1]) if len(pair) >= 2 else None
    return texts[0] if texts and isinstance(texts[0], str) else None


def test_every_marked_message_has_a_chinese_translation_with_its_placeholders() -> None:
    zh = catalogue(CHINESE)
    assert zh is not None
    found = marked()
    assert len(found) > 60, "the extraction finds the marked messages"
    for key, where in found.items():
        entry = zh.get(key)
        said = entry.string if entry is not None else None
        text = str((said[0] if isinstance(said, tuple | list) else said) or "")
        assert text, f"{where}: {key!r} has no Chinese translation"
        english = key[-1] if isinstance(key, tuple) else key
        assert set(FIELD.findall(text)) == set(FIELD.findall(english)), (where, key, text)


def request(question: str, depth: str = "deep") -> ResearchRequestMsg:
    return ResearchRequestMsg(key="red:req:C1:1.1", user="U1", channel="C1", thread_ts="1.1",
                              ts="1.1", question=question, status="running", depth=depth)


def english_in(text: str) -> list[str]:
    """The catalogue's English messages (their words outside placeholders) in `text`."""
    found = []
    for key in marked():
        english = key[0] if isinstance(key, tuple) else key
        bits = [b.strip(" *:—·.") for b in FIELD.split(english)[::2]]
        words = [b for b in bits if len(b) > 3 and " " in b]
        found += [b for b in words if b in text]
    return found


def test_a_chinese_thread_shows_chinese_everywhere_the_bot_speaks() -> None:
    asked = request("2026年热泵销量怎么变化？")
    state = RunState.new(asked.question, AS_OF, Settings())
    report = Report("销量上升 [1]。", [], cited=[], fallback=False)
    page = "https://a.example/s1"
    shown = [str(picker_blocks(asked, "")), picker_text(asked),
             str(status_blocks(asked, "running")),
             str(finished_message(state, report, asked.key)[1]),
             str(stopped_message(state, asked, "j1")[1]), str(plan_view(state)),
             str(answer_blocks(f"销量 [{page}]", [page], revised="新数据",
                               feedback=("s0123456789a", "report"),
                               w=for_question(asked.question)))]
    assert english_in("\n".join(shown)) == []
    assert "研究完成" in shown[3] and "深入" in shown[0] and "来源：" in shown[-1]
    english = request("How did heat pump sales move in 2026?")
    assert "How deep should I go?" in str(picker_blocks(english, ""))
    assert english_in(str(picker_blocks(english, "")))  # the check can fail


def test_counts_agree_in_number_in_english_and_take_one_form_in_chinese() -> None:
    assert Words().count(1, "{n} source cited", "{n} sources cited") == "1 source cited"
    assert Words().count(2, "{n} source cited", "{n} sources cited") == "2 sources cited"
    assert Words(CHINESE).count(2, "{n} source cited", "{n} sources cited") == "引用了 2 个来源"
    assert Words("fr")("Research finished") == "Research finished"  # no catalogue: English


ZH = Words(CHINESE)
QUESTION_ZH = "2026年欧洲热泵销量怎么变化，为什么？"


def no_english(*texts: object) -> None:
    """Fails on any catalogue English in what a Chinese thread shows."""
    shown = "\n".join(map(str, texts))
    assert english_in(shown) == [], shown


def test_every_notes_kind_begins_its_translations_so_the_loading_status_reads_it() -> None:
    """The loading status knows a progress note by its first words: in Chinese too, every
    note of a kind begins with that kind's words as the catalogue translates them."""
    zh = catalogue(CHINESE)
    assert zh is not None
    for start, doing in DOING:
        notes = {str(m.id): str(m.string) for m in zh
                 if isinstance(m.id, str) and m.id.startswith(start) and m.id != start}
        assert notes, start
        for english, chinese in notes.items():
            assert chinese.startswith(ZH(start)), (english, chinese)
        first = next(iter(notes))
        assert status_line(ZH(first), ZH) == ZH(doing) != doing
        assert status_line(first) == doing  # English, as before
    long = "正在核查：" + "欧洲哪些市场卖出的热泵最多" * 12
    line = status_line(long, ZH)
    assert len(line) <= 100 and line.endswith("…") and line[:-1] in long


async def test_a_chinese_runs_progress_notes_and_loading_status_are_chinese(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    publisher = MemoryPublisher()
    await run_engine(serve, Script(subquestions=FOUR), backend, store, publisher=publisher,
                     question=QUESTION_ZH, steps=6, evidence_per_done_node=9,
                     rounds_per_node=1)
    notes = publisher.progress_notes
    no_english(*notes, *(status_line(n, ZH) for n in notes))
    for said in ("规划中：", "正在核查：", "已申请深入研究：", "已启用深入研究：", "仍缺少："):
        assert any(n.startswith(said) for n in notes), (said, notes)
    assert "正在决定是否深入研究" in {status_line(n, ZH) for n in notes}


def home_runs(question: str) -> list[tuple[ResearchRequestMsg, RunStats]]:
    asked = request(question).with_(status="finished")
    return [(asked, RunStats(steps=7, tokens=12_345, cost_usd=0.01,
                             permalink="https://slack.example/archives/C1/p1",
                             watch="as of 2026-11-02: nothing changed since 2026-11-01"))]


def test_the_home_tab_speaks_either_language_and_is_english_without_a_locale() -> None:
    everyone = [UsageLine("user", "U1", "day:2026-11-02", Usage(tokens=1, runs=1))]
    english = home_view(home_runs("How did heat pump sales move?"), BudgetSettings(), True,
                        usage_text(everyone, Caps()))
    shown = str(english)
    assert "Your recent research" in shown and "Budgets in force" in shown
    assert "Deep · finished · 7 steps · 12,345 tokens" in shown and "1 token, " in shown
    chinese = home_view(home_runs(QUESTION_ZH), BudgetSettings(), False,
                        usage_text(everyone, Caps(), ZH), ZH)
    no_english(chinese)
    assert "你近期的研究" in str(chinese) and "深入 · 已完成 · 7 步 · 12,345 个令牌" in str(chinese)
    assert "深入研究：未向你开放" in str(chinese)
    empty = home_view([], BudgetSettings(), True, None, ZH)
    no_english(empty, usage_text([], Caps(), ZH))


def test_the_plan_preview_and_its_modal_follow_the_question() -> None:
    plan = ["2026年热泵销量是多少？", "为什么变化？"]
    asked = request(QUESTION_ZH).with_(status="preview", plan=plan, depth="standard")
    edits = ("", "a\nb\nc", "为什么？\n为什么？", "短")  # none, too many, the same twice, short
    problems = [edited_lines(text, 2, ZH)[1] for text in edits]
    shown = [preview_text(asked), preview_blocks(asked, ZH("about {n} min", n=3)),
             started_blocks(asked), plan_modal(asked, 6), *problems]
    assert all(problems), problems
    no_english(*shown)
    assert "计划预览：" in str(shown[0]) and "编辑计划" in str(shown[3])
    modal = plan_modal(request("How did prices move?").with_(plan=["Why?"]), 6)
    assert modal["title"]["text"] == "Edit the plan"


@pytest.fixture
async def bot(fake: FakeSlack, redis: aioredis.Redis) -> AsyncIterator[Bot]:
    app = build_app(bot_token=SLACK_TOKEN, signing_secret=SECRET, api_url=fake.base_url,
                    redis=redis, queue=RecordingQueue(), process_before_response=True,
                    deep_allowed=(), max_question_chars=40)
    runner = web.AppRunner(web_app(app, SECRET))
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    async with aiohttp.ClientSession() as session:
        yield Bot(f"http://127.0.0.1:{runner.addresses[0][1]}/slack/events", session, fake,
                  redis=redis)
    await runner.cleanup()


async def test_replies_and_ephemerals_follow_the_questions_language(bot: Bot) -> None:
    _, mention = await bot.mention(f"<@{BOT_USER_ID}> {QUESTION_ZH}")
    [picker] = bot.replies(mention)
    await bot.click(BOB, "depth_standard", picker)  # not the requester's
    await bot.click(BOB, "depth_preview", picker)
    await bot.click(ALICE, "depth_deep", picker)  # nobody may go Deep here
    await bot.say_in_thread(mention.ts, "还有价格呢？")  # before a depth is chosen
    await bot.select(BOB, WATCH_ACTION, f"weekly|{request_key(CHANNEL, mention.ts)}", picker)
    await bot.select(ALICE, WATCH_ACTION, f"weekly|{request_key(CHANNEL, mention.ts)}", picker)
    await bot.click(ALICE, "depth_standard", picker)
    await bot.click(BOB, "stop_research", picker)
    _, long = await bot.mention(f"<@{BOT_USER_ID}> " + "热泵" * 30)  # over 40 characters
    told = [e.text for e in bot.fake.ephemerals(CHANNEL)]
    thread = [m.text for m in (*bot.replies(mention), *bot.replies(long))]
    no_english(*told, *thread)
    only = f"只有 <@{ALICE}> 可以"
    assert told == [only + "为这个请求选择深度。", only + "预览这个计划。", ZH(DEEP_REFUSED),
                    only + "更改这个讨论串的关注方式。", "只有已完成的研究才能关注。",
                    only + "停止这项研究。"], told
    assert ZH(PICK_FIRST) in thread and "这个问题有 60 个字符" in thread[-1], thread
    home = await opened_home(bot)
    assert "Your recent research" in home and QUESTION_ZH in home  # Alice's locale: en-US


async def opened_home(bot: Bot) -> str:
    """Alice opens the app's Home tab: what the bot publishes there."""
    opened = {"type": "app_home_opened", "user": ALICE, "channel": "D0ALICE", "tab": "home"}
    await bot.post(json.dumps({"token": "legacy", "team_id": "T0FAKE", "type": "event_callback",
                               "event_id": bot.next_event_id(), "event": opened}),
                   "application/json")
    return json.dumps(bot.fake.surfaces.views[ALICE], ensure_ascii=False)


async def test_the_home_tab_follows_the_persons_slack_locale(bot: Bot) -> None:
    """Home has no question to follow: it speaks the person's Slack locale (users.info), and
    English where Slack gives none (no `users:read` scope)."""
    bot.fake.surfaces.locales[ALICE] = "zh-CN"
    home = await opened_home(bot)
    assert ZH("Your recent research") in home and "Your recent research" not in home
    bot.fake.scopes = tuple(s for s in bot.fake.scopes if s != "users:read")
    assert "Your recent research" in await opened_home(bot)


def test_a_chinese_chart_says_its_own_words_in_chinese(monkeypatch: pytest.MonkeyPatch) -> None:
    points = (Point("2026-07", 200_000, "200,000", "s1"), Point("2026-08", 210_000, "210,000",
                                                                "s1", "revised"),
              Point("2026-09", 214_000, "214,000", "s2", "preliminary"))
    series = Series(QUESTION_ZH, "units", "month", points, "热泵销量")
    assert series.title == "热泵销量 (units, by month)"
    assert series.title_in(ZH) == "热泵销量（数量，按月）"
    assert [p.label_in(ZH) for p in points] == ["2026年7月", "2026年8月", "2026年9月"]
    assert Point("2026-Q3", 1, "1", "s").label_in(ZH) == "2026年第3季度"
    assert Point("2026-H1", 1, "1", "s").label_in(ZH) == "2026年上半年"
    alt = series.describe({"s1": "热泵周刊"}, ZH)
    no_english(alt)
    assert alt.startswith("图表：按月的数量") and "214,000 (初步)" in alt
    if cjk_font() is not None:  # a CJK font draws the chart's words in Chinese
        figure = figure_of(series, {"s1": "热泵周刊"}, ZH)
        drawn = [t.get_text() for t in figure.findobj(Text)]
        assert "热泵销量（数量，按月）" in drawn and "2026年9月" in drawn
        assert "初步" in "".join(drawn)
        no_english(*drawn)
    monkeypatch.setattr(chart_image, "cjk_font", lambda: None)
    assert chart_image.words_drawn(ZH).language == "en"  # boxes are no words: English then
    figure = figure_of(series, {}, ZH)
    assert "Jul 2026" in [t.get_text() for t in figure.findobj(Text)]


def test_caps_refusals_failures_and_watch_changes_in_chinese() -> None:
    breach = CapBreach("user", "U1", "day", "tokens", 12_000, 10_000,
                       dt.datetime(2026, 11, 3, tzinfo=dt.UTC))
    assert breach.message() == ("your daily token cap (10,000 tokens) is reached: 12,000 tokens "
                                "used; it resets at 2026-11-03 00:00 UTC")
    asked = request(QUESTION_ZH)
    state = RunState.new(asked.question, AS_OF, Settings())
    state.extra.budget["final_reason"] = f"spending cap reached: {breach.message()}"
    report = Report("销量上升 [1]。", [], cited=[], fallback=False)
    since = dt.date(2026, 11, 1)
    changes = [Change("销量？", "新数据", [("https://a.example/s1", "热泵周刊")])]
    no_english(breach.message(ZH), refusal_text(breach, w=ZH),
               refusal_text(breach, preview=True, w=ZH),
               finished_message(state, report, asked.key)[1],
               failed_message("r1", "j1", ZH("Slack kept failing ({error})", error="x"),
                              w=ZH)[1],
               changes_text(since, changes, ZH), changes_blocks(since, changes, ZH),
               watch_confirmation(WatchChoice("weekly", asked.key), ZH),
               too_long("热泵" * 30, 40), cannot_post(TimeoutError(), ZH))
    assert breach.message(ZH).startswith("你的每日令牌上限（10,000 个令牌）已用完")
    in_english = RunState.new("How did heat pump sales move?", AS_OF, Settings())
    in_english.extra.budget["final_reason"] = state.extra.budget["final_reason"]
    assert "Spending cap reached: your daily token cap (10,000 tokens) is reached" in str(
        finished_message(in_english, report)[1])


def test_the_plan_card_says_its_fallback_summary_in_chinese() -> None:
    state = RunState.new(QUESTION_ZH, AS_OF, Settings())
    node = state.tree.add_child(state.tree.root_id, "2026年9月销量是多少？", 0.9)
    node.status = "done"
    state.summaries[node.id] = Summary(node.id, node.question, "Best supported: 9月销量为214,000台",
                                       [], [], [])
    [task] = [t for t in plan_view(state).tasks if t.title == node.question]
    assert task.output == "依据最充分：9月销量为214,000台"
    no_english(plan_view(state))
