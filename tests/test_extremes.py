"""A follow-up that asks which period was the highest or the lowest is answered from the
dated series the evidence states, not from the sentence most like the question (the bundled
model's run answered "which month had the highest sales?" with the weakest months). Ferry
traffic, a field no evaluation suite uses."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from research_core.delivery.publishers import MemoryPublisher
from research_core.loop.engine import Engine
from research_core.loop.memory.evidence import Evidence
from research_core.loop.publishing.extremes import extreme_line
from research_core.models.tier_factory import aclose_tiers, build_tiers
from research_core.search.corpus import CorpusBackend
from research_core.store.sql import SqlStore
from research_core.text.asking import read_question
from tests.conftest import scripted_settings, write_doc
from tests.engine_run import Serve, default_similarity, run_engine

QUARTERS = ("Ferry passengers on the Sound crossing were 1.42 million in the first quarter of "
            "2026, 2.05 million in the second quarter of 2026 and 2.61 million in the third "
            "quarter of 2026. "
            "The crossing's berth fees rose to 9 euros in March 2026, 11 euros in June 2026 and "
            "12 euros in September 2026.")
MONTHS_ZH = "海峡轮渡2026年7月客运量为92万人次，8月为105万人次，9月为81万人次。"


def item(source_id: str, text: str) -> Evidence:
    return Evidence("E1", "N1", "q1", source_id, source_id, f"https://{source_id}.example/",
                    dt.date(2026, 10, 20), "official_statistics", "Sound Ferries", text, 0.9,
                    0.85, 1.0, 0.9, "", True)


def _cite(source_id: str) -> str:
    return f"[{source_id}]"


def test_a_question_for_the_highest_period_gets_the_series_extreme() -> None:
    items = [item("ferry-stats", QUARTERS)]
    assert extreme_line(read_question("which quarter had the most passengers?"), items, _cite) == (
        "• Q3 2026: 2.61 million, the highest of the 3 quarters the sources give "
        "(Q1 2026 to Q3 2026). [ferry-stats]")
    low = extreme_line(read_question("and the quietest quarter for passengers?"), items, _cite)
    assert low is not None and low.startswith("• Q1 2026: 1.42 million, the lowest")
    # the fees are a series too, but not of what was asked
    fee = extreme_line(read_question("when were berth fees highest?"), items, _cite)
    assert fee is not None and "12 euros" in fee and "passengers" not in fee


def test_the_grain_asked_for_or_an_honest_other_one() -> None:
    items = [item("ferry-stats", QUARTERS)]
    by_quarter = extreme_line(read_question("which month had the most passengers?"), items, _cite)
    assert by_quarter is not None and by_quarter.startswith(
        "• The sources give no month by month series; by quarter: Q3 2026: 2.61 million")
    zh = extreme_line(read_question("哪个月客运量最高？"), [item("ferry-zh", MONTHS_ZH)], _cite)
    assert zh == ("• 2026年8月：105万人，为来源给出的3个月（2026年7月至2026年9月）中最高。"
                  " [ferry-zh]")


def test_no_extreme_asked_or_nothing_to_cite_answers_nothing_here() -> None:
    items = [item("ferry-stats", QUARTERS)]
    assert read_question("how did passenger numbers move?").extreme is None
    assert extreme_line(read_question("how did passenger numbers move?"), items, _cite) is None
    most = read_question("which quarter had the most passengers?")
    assert extreme_line(most, items, lambda _: None) is None
    assert extreme_line(read_question("which quarter had the most cargo?"), items, _cite) is None


async def test_the_fallback_follow_up_leads_with_the_extreme(
        serve: Serve, store: SqlStore, tmp_path: Path) -> None:
    """Every model reply unusable: the follow-up's extractive answer starts with it."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    write_doc(folder, "ferry-stats", ("official_statistics", "en", "2026-10-15",
                                      "Sound crossing traffic, third quarter 2026", QUARTERS))
    backend = CorpusBackend.from_folder(folder)
    out = await run_engine(serve, lambda body: "", backend, store,
                           "How did ferry passenger numbers on the Sound crossing move in 2026?",
                           mode="standard", max_steps=3)
    server = await serve(lambda body: "")
    settings = scripted_settings(server.base_url)
    tiers = build_tiers(settings)
    try:
        engine = Engine.build(settings, tiers, backend, store, similarity=default_similarity(),
                              publisher=MemoryPublisher())
        done = await engine.follow_up(out.state, "which quarter had the most passengers?",
                                      "followup-1")
    finally:
        await aclose_tiers(tiers)
    bullets = [ln for ln in done.text.splitlines() if ln.startswith("• ")]
    assert bullets and bullets[0].startswith("• Q3 2026: 2.61 million, the highest"), done.text
