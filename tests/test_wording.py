"""The asker's language (issue 44, item 3): every message the code marks for people has a
Simplified Chinese translation in the catalogue with the same placeholders, and a thread
started in Chinese shows no catalogue English."""

from __future__ import annotations

import re
from pathlib import Path

from babel.messages.extract import extract_python

from contract.blocks import picker_blocks, picker_text, status_blocks
from contract.requests import ResearchRequestMsg
from research_core.loop.memory.state import RunState
from research_core.loop.publishing.plan_view import plan_view
from research_core.loop.report.reporter import Report
from research_core.settings import Settings
from research_core.wording import CHINESE, Words, catalogue, for_question
from tests.conftest import AS_OF
from workers.answer_blocks import answer_blocks
from workers.thread_messages import finished_message, stopped_message

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
        text = str(said[0] if isinstance(said, tuple | list) else said)
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
