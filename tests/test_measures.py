"""Issue 25, "a disagreement is only between figures of the same entity, measure, unit and
period": what a Chinese figure measures is what its clause names before it, a figure takes the
period named before it (and a bracket's period right after it), a price per tonne and a tonnage
that share 万 are two measures, and a month's high is no version of its average. Fixtures: a
wool market, a field no evaluation suite uses."""

from __future__ import annotations

import datetime as dt

from research_core.text import conflicts
from research_core.text.conflicts import Statement
from research_core.text.measures import GENERIC, described, same_thing
from research_core.text.terms import nouns

OCT = dt.date(2026, 10, 31)


def _said(text: str, source: str, credibility: float = 0.8, about: tuple[str, ...] = ()
          ) -> Statement:
    return Statement(text, source, OCT, credibility, f"{source} 发布方", about)


def test_two_products_in_one_sentence_are_two_things() -> None:
    both = _said("2026年10月细羊毛月度均价为5.10万元/吨，环比上涨0.8%；"
                 "粗羊毛月度均价为3.40万元/吨，同比下降4.9%。", "wool-board")
    coarse = _said("10月粗羊毛月度均价升至5.02万元/吨，比9月上涨0.6%。", "wool-daily", 0.5)
    assert conflicts.find([both, coarse]) == []
    fine = _said("10月细羊毛月度均价升至5.02万元/吨，比9月上涨0.6%。", "wool-daily", 0.5)
    [found] = conflicts.find([both, fine])
    assert (found.period, found.first[1].text, found.second[1].text) == (
        "2026-10", "5.10万", "5.02万")


def test_a_figure_takes_the_period_named_before_it_not_a_month_s_own_digits() -> None:
    """"自2025年11月的1.45万元/吨起…至2026年9月": the 1.45 is November's (the "11" of the
    month's name once stood between them as a figure), and "同比（2025年10月为3.10…）" is the
    3.10's month, not the 5.10's."""
    trend = _said("更正后，细羊毛加工费自2025年11月的1.45万元/吨起逐月小幅回升，"
                  "至2026年9月累计上涨约20%。",
                  "wool-board")
    september = _said("2026年9月细羊毛加工费均价为1.52万元/吨，环比上涨1.2%。", "wool-daily", 0.5)
    assert conflicts.find([trend, september]) == []
    year_ago = _said("细羊毛月度均价为5.10万元/吨，环比上涨0.7%，"
                     "同比（2025年10月为3.10万元/吨）上涨64%。",
                     "wool-board")
    last_october = _said("2025年10月细羊毛月度均价为5.05万元/吨。", "wool-daily", 0.5)
    assert conflicts.find([year_ago, last_october]) == []


def test_a_bracket_after_a_figure_names_its_own_period() -> None:
    lows = _said("旬度采价中细羊毛最高值为5.68万元/吨（2026年3月中旬），"
                 "最低值为4.52万元/吨（2025年11月中旬）。",
                 "wool-board")
    march = _said("2026年3月细羊毛旬度最低值为4.60万元/吨。", "wool-daily", 0.5)
    assert conflicts.find([lows, march]) == []


def test_a_tonnage_and_a_price_per_tonne_in_wan_are_two_measures() -> None:
    exports = _said("1—9月细羊毛出口6.1万吨，同比下降18%。", "wool-exports")
    price = _said("9月细羊毛出口均价为6.80万元/吨，环比上涨0.9%。", "wool-board", 0.5)
    assert conflicts.find([exports, price]) == []


def test_a_month_s_high_is_no_version_of_its_close() -> None:
    high = _said("当月细羊毛拍卖最高成交价5.79万元/吨（10月21日），"
                 "最低成交价5.41万元/吨（10月9日）。",
                 "wool-exchange")
    close = _said("10月底细羊毛拍卖成交价在5.66万元/吨附近，与现货价格基本一致。", "wool-daily",
                  0.5)
    assert conflicts.find([high, close]) == []
    en_high = _said("Fine wool's October high was 5,790 dollars a tonne.", "wool-exchange")
    en_avg = _said("Fine wool averaged 5,660 dollars a tonne in October 2026.", "wool-daily", 0.5)
    assert conflicts.find([en_high, en_avg]) == []


def test_a_line_that_names_nothing_is_read_under_its_heading_or_title() -> None:
    bare = "9月均价2.94万元/吨，较2025年11月的2.85万元/吨累计上涨约3%。"
    title = "2026年三季度粗羊毛市场简报"
    assert described(bare, bare.find("2.94"), ("一、价格", title)) == nouns(title) - GENERIC
    assert same_thing(frozenset({"细羊毛"}), frozenset({"澳洲", "细羊毛"}))
    assert not same_thing(frozenset({"月度", "细羊毛"}), frozenset({"月度", "粗羊毛"}))
    under = _said(bare, "coarse-brief", about=("一、价格", "2026年三季度粗羊毛市场简报"))
    fine_row = _said("精梳细羊毛：9月均价3.00万元/吨，环比+1.3%。", "wool-monthly")
    assert conflicts.find([under, fine_row]) == []


class _FlatSimilarity:
    """An embedder that finds every pair of texts equally similar."""

    async def matrix(self, rows: list[str], cols: list[str]) -> list[list[float]]:
        return [[0.3 for _ in cols] for _ in rows]


async def test_a_disagreement_a_published_part_states_is_not_said_again() -> None:
    """A thread once showed one correction four times (each part and the report): the block
    leaves out what a published part's sentences already state."""
    from research_core.loop.answering import builder
    from research_core.loop.memory.evidence import Evidence
    from research_core.loop.memory.pool import Line

    def line(source_id: str, text: str, published: dt.date) -> Line:
        return Line(text, Evidence(f"E{source_id}", "N1", "Q1", source_id, source_id,
                                   "https://x.example", published, "industry_association",
                                   "Norland Wool Board", text, 0.9, 0.85, 1.0, 0.9, "", True))

    first = line("release", "Norland's Q3 2026 wool exports were 1,508 thousand bales.",
                 dt.date(2026, 10, 9))
    revised = line("erratum", "Norland's Q3 2026 wool exports were 1,476 thousand bales.",
                   dt.date(2026, 10, 29))
    def cite(e: Evidence) -> str:
        return f"[{e.source_id}]"
    sim, asked = _FlatSimilarity(), ["Norland wool exports?"]
    block = await builder.conflict_lines(sim, asked, [first, revised], cite, False)
    assert block and "1,476" in block[1]
    assert await builder.conflict_lines(sim, asked, [first, revised], cite, False,
                                        told=[block[1]]) == []
    assert await builder.conflict_lines(sim, asked, [first, revised], cite, False,
                                        told=["unrelated"]) == block


def test_the_body_a_figure_is_attributed_to_is_not_what_it_measures() -> None:
    """"羊毛分会月报公布的细羊毛均价为…" measures the wool's price, not the body's: it meets
    another source's figure for the same wool."""
    quoted = "羊毛分会10月月报公布的细羊毛月度均价为5.10万元/吨，环比上涨0.8%。"
    measured = described(quoted, quoted.index("5.10"))
    assert "细羊毛" in measured and "分会" not in measured
    found = conflicts.find([_said(quoted, "wool-note"),
                            _said("2026年10月细羊毛月度均价为4.96万元/吨。", "wool-board", 0.9)])
    assert [(d.first[0].source_id, d.first[1].mantissa) for d in found] == [("wool-board", "4.96")]


async def test_the_disagreements_shown_are_those_the_question_asks_about() -> None:
    """Three pairs of sources disagree; the block shows the CONFLICTS_MOST pairs whose
    sentences answer the question best, the asked one among them."""
    from research_core.loop.answering import builder
    from research_core.loop.memory.evidence import Evidence
    from research_core.loop.memory.pool import Line
    from tests.engine_run import default_similarity

    def line(source_id: str, text: str) -> Line:
        return Line(text, Evidence(f"E{source_id}", "N1", "Q1", source_id, source_id,
                                   "https://x.example", dt.date(2026, 10, 9), "news",
                                   source_id, text, 0.9, 0.85, 1.0, 0.9, "", True))

    pairs = [("Norland's Q3 2026 wool exports were {} thousand bales.", "1,508", "1,476"),
             ("Ostmark's Q3 2026 rye bread sales were {} thousand loaves.", "820", "905"),
             ("Brennmark's Q3 2026 glass output was {} thousand tonnes.", "18.4", "17.9")]
    pool = [line(f"{n}-{i}", text.format(figure)) for n, (text, *figures) in enumerate(pairs)
            for i, figure in enumerate(figures)]
    block = await builder.conflict_lines(default_similarity(), ["How much glass did "
                                         "Brennmark's furnaces melt in Q3 2026?"], pool,
                                         lambda e: f"[{e.source_id}]", False)
    shown = [ln for ln in block[1:] if ln.startswith("•")]
    assert len(shown) == builder.CONFLICTS_MOST and any("18.4" in ln for ln in shown)
