"""A chosen sentence is also cited to a more credible source that states its figures, in either
language (issue 25: an English news report of an official Chinese table was quoted, and the
table never cited). Honey prices, a field no evaluation suite uses."""

from __future__ import annotations

import datetime as dt

from research_core.loop.answering import builder
from research_core.loop.answering.backing import backing
from research_core.loop.memory.evidence import Evidence, credibility
from research_core.loop.memory.pool import Line
from tests.engine_run import default_similarity

NEWS = ("Acacia honey in Vestland averaged 14,200 yuan per tonne in October, up 0.8% on the "
        "month and 12.4% on the year, traders said.")
TABLE = ("10月槐花蜜均价1.42万元/吨，环比上涨0.8%，同比上涨12.4%；"
         "荆条蜜均价1.10万元/吨，同比下降4.9%。")
BLOG = "Acacia honey hit 14,200 yuan, up 12.4%: ten reasons to buy now."


def _evidence(source_id: str, source_type: str, text: str, node: str = "N1") -> Evidence:
    return Evidence(f"E-{source_id}", node, "Q1", source_id, source_id,
                    f"https://x.example/{source_id}", dt.date(2026, 10, 31), source_type,
                    source_id, text, 0.8, credibility(source_type), 1.0, 0.8, "", True)


def _line(source_id: str, source_type: str, text: str) -> Line:
    return Line(text, _evidence(source_id, source_type, text))


def test_the_most_credible_source_stating_the_same_figures_backs_a_sentence() -> None:
    news, table, blog = (_line("news", "news", NEWS),
                         _line("bureau", "official_statistics", TABLE),
                         _line("blog", "blog", BLOG))
    backed = backing([news, table, blog])
    found = backed(news)
    assert found is not None and found.source_id == "bureau"  # 1.42万 = 14,200, in Chinese
    assert backed(table) is None  # nothing more credible states its figures
    assert backed(blog) is not None  # a blog's figures backed by the bureau's table


def test_one_shared_figure_is_chance_not_backing() -> None:
    news = _line("news", "news", "Heather honey output fell 4.9% in the third quarter.")
    table = _line("bureau", "official_statistics", TABLE)
    assert backing([news, table])(news) is None


async def test_a_part_cites_the_table_beside_the_news_report() -> None:
    news = _evidence("news", "news", NEWS)
    table = _evidence("bureau", "official_statistics", TABLE, node="N2")
    text = await builder.part(default_similarity(),
                              builder.Section("How did acacia honey prices move?", [news]),
                              lambda e: f"[{e.source_id}]", [], context=[news, table])
    assert "traders said. [news][bureau]" in text, text
