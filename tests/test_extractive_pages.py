"""The extractive answer reads the kept sources' whole pages where reading is free (issue 15):
a kept page's other sentences are citable, reasons stand under the page's "why" heading, a
question or an abbreviation is no sentence end, and wherever the kept sources list the things
the question is about, the answer goes item by item (issue 25: the evidence decides, not the
question's wording). Small corpora written for these tests, in fields no evaluation suite
uses (cocoa, orchard fruit wholesale prices, cashmere yarn), the real bundled embedder."""

from __future__ import annotations

import datetime as dt

from research_core.loop.answering import builder, completion, ranking
from research_core.loop.answering.select import Picker
from research_core.loop.memory.evidence import Evidence, credibility
from research_core.loop.memory.pool import Line, whole
from research_core.text.asking import read_question
from research_core.text.sentences import sentences
from tests.engine_run import default_similarity


def _evidence(n: int, node: str, source_id: str, source_type: str, text: str,
              published: str = "2026-10-20", title: str = "") -> Evidence:
    return Evidence(f"E{n}", node, "Q1", source_id, title or source_id,
                    f"https://x.example/{source_id}", dt.date.fromisoformat(published),
                    source_type, source_id, text, 0.8, credibility(source_type), 1.0, 0.8, "",
                    True)


# A research note on two cocoa grades whose snippet holds only its summary; the page holds
# the reasons, under a "why" heading, as numbered paragraphs with emphasised titles.
NOTE = """**Summary.** Ghanaian cocoa beans traded at 7,400 dollars a tonne in September 2026.

Ivorian beans fell to 6,100 dollars a tonne over the same month, down 9.0% on the year.

**Why the two grades parted**

1. *Weather.* Heavy rain in the western belt cut Ivorian mid-crop output by a fifth. Roads
to the ports flooded in June.

2. *Licences.* The new export licence rules slowed shipments from Abidjan for two months.

**How wide is the gap?**

How wide is the gap in percentage terms?

Traders expect the spread to stay near 1,300 dollars until the main crop, said Oct. 30 notes."""
PAGES = {"cocoa-note": NOTE}


async def _read(source_id: str) -> str | None:
    return PAGES.get(source_id)


def _snippet() -> Evidence:
    return _evidence(1, "N1", "cocoa-note", "research_report",
                     "Ghanaian cocoa beans traded at 7,400 dollars a tonne in September 2026.",
                     title="Ivorian and Ghanaian cocoa prices part ways")


def _cite(e: Evidence) -> str:
    return "[1]"


async def test_a_kept_page_other_sentences_are_cited_and_join_its_evidence() -> None:
    item = _snippet()
    section = builder.Section("What were Ivorian cocoa bean prices in September 2026?", [item])
    text = await builder.part(default_similarity(), section, _cite, [], _read)
    assert "6,100 dollars a tonne" in text and "[1]" in text
    assert "6,100 dollars a tonne" in item.text  # the claim check sees what the part quotes
    without_pages = await builder.part(default_similarity(), builder.Section(
        section.question, [_snippet()]), _cite, [], None)
    assert "6,100" not in without_pages


async def test_reasons_under_a_why_heading_answer_a_why_question() -> None:
    lines = await completion.page_lines([_snippet()], _read)
    weather = next(ln for ln in lines if ln.text.startswith("Heavy rain"))
    assert weather.heading == "Why the two grades parted Weather."
    assert not any(ln.text in ("Weather.", "Licences.") for ln in lines)  # titles, no lines
    section = builder.Section("Why did Ivorian cocoa prices fall?", [_snippet()])
    text = await builder.part(default_similarity(), section, _cite, [], _read)
    assert "Heavy rain in the western belt" in text and "export licence rules" in text


def test_a_question_is_no_answer_line_and_an_abbreviation_ends_no_sentence() -> None:
    assert not whole("How wide is the gap in percentage terms?")
    assert not whole("价差扩大的原因是什么？")
    said = sentences("Futures settled at 86,600 yuan on Oct. 30. Spot was thin.", clauses=False)
    assert said == ["Futures settled at 86,600 yuan on Oct. 30.", "Spot was thin."]


# Two price lists of one statistics office and one trade body, a row a fruit (a label with a
# grade before or a size after it names the same fruit; "水蜜桃罐头" is no "水蜜桃").
STATS = ("富士苹果（80#一级）：2026年三季度均价0.93万元/吨，同比+13.8%。\n"
         "水蜜桃（特级）：2026年三季度均价0.62万元/吨，同比+9.6%。\n"
         "水蜜桃罐头（425g）：2026年三季度均价1.46万元/吨，同比+12.2%。\n"
         "猕猴桃（徐香）：2026年三季度均价12.40元/公斤，同比+6.3%。")
MONTHLY = ("山东富士苹果：9月批发均价0.97万元/吨，环比+2.0%，同比+13.2%。\n"
           "砀山梨：9月批发均价0.51万元/吨，环比+2.2%，同比+42.0%。\n"
           "猕猴桃90g：9月批发均价12.40元/公斤，环比0.0%，同比+6.3%。\n"
           "加工品：砀山梨价格小幅反弹，但较年初高点仍低约27%。")
FRUIT = [_evidence(1, "N1", "stats-q3", "official_statistics", STATS),
         _evidence(2, "N1", "trade-monthly", "industry_association", MONTHLY)]


async def test_two_rows_of_one_table_are_two_statements() -> None:
    picker = Picker(default_similarity())
    rows = [Line(t, FRUIT[0]) for t in STATS.splitlines()]
    assert [await picker.take(r) for r in rows] == [True, True, True, True]
    assert not await picker.take(Line(rows[0].text, FRUIT[1]))


# Five sources on cashmere spinners' expansion and one on lyocell fibre's expansion that names
# cashmere once; a broad question on "fruit" has no such subject.
SPINNERS = [
    _evidence(1, "N1", "xueyu", "news", "雪域羊绒在鄂尔多斯建设2000吨羊绒纱线项目，总投资48亿元。",
              title="雪域羊绒拟投48亿元建设羊绒纱线项目"),
    _evidence(2, "N1", "beifang", "news", "北纺科技在包头投资15亿元，新增羊绒纱线产能800吨。"
              "北纺科技是国内第二大羊绒纺纱企业。", title="北纺科技15亿元加码包头"),
    _evidence(3, "N1", "assoc", "industry_association", "上半年羊绒纺纱行业产能利用率约68%。",
              title="羊绒分会：上半年羊绒产能报告"),
    _evidence(4, "N1", "research", "research_report", "龙头羊绒企业扩产转向海外，蒙古基地试产。",
              title="羊绒行业深度：龙头扩产转向海外"),
    _evidence(5, "N1", "lyocell", "news", "三家莱赛尔纤维龙头企业宣布扩产，新增产能合计约3.5万吨。"
              "与羊绒等纤维相比，莱赛尔行业规模较小。", title="莱赛尔纤维扩产潮"),
]


def test_a_signature_line_is_no_sentence_of_an_answer() -> None:
    assert not whole("中国果品流通协会苹果分会 2026年10月31日")
    assert whole("富士苹果（80#一级）：2026年三季度均价0.93万元/吨，同比+13.8%。")


async def _fruit_report(question: str, extra: Evidence) -> str:
    """The report on the two price lists and one more source."""
    sources = [*FRUIT, extra]
    return await builder.report(default_similarity(), read_question(question),
                                [builder.Section("近一年水果批发价格是多少？", sources)],
                                lambda e: f"[{sources.index(e) + 1}]")


# Two fruits in one English market note: the section on the latest figures gives both, and the
# latest month (a month named without its year is the publishing year's); the rule that put the
# latest period first went with the other question-reading rules of the answer path (issue 42).
TWO_FRUITS = _evidence(7, "N1", "fruit-note", "news", "Apples averaged 9,550 yuan a tonne in "
                       "September. Pears averaged 5,100 yuan a tonne in September. Apples "
                       "averaged 9,620 yuan a tonne in October, up 11.7% on the year. Apples "
                       "averaged 8,100 yuan a tonne in July, their low.", published="2026-10-31",
                       title="Apple and pear wholesale prices")


async def test_the_latest_figures_for_two_things_give_each_its_latest_line() -> None:
    from research_core.text.periods import periods_in

    assert periods_in("in October, up from September", dt.date(2026, 10, 31)) == [
        "2026-10", "2026-09"]
    assert periods_in("they march on", dt.date(2026, 10, 31)) == []
    section = builder.Section("What are the latest wholesale prices of apples and pears?",
                              [TWO_FRUITS])
    text = await builder.part(default_similarity(), section, _cite, [])
    bullets = [ln for ln in text.splitlines() if ln.startswith("• ")]
    assert any("9,620" in b for b in bullets)  # October, the latest month
    assert any("Pears" in b for b in bullets)  # both things the question names


async def test_a_reason_is_scored_with_the_heading_it_stands_under() -> None:
    lines = await completion.page_lines([_snippet()], _read)
    rain = next(ln for ln in lines if ln.text.startswith("Heavy rain"))
    second = next(ln for ln in lines if ln.text.startswith("Roads"))
    assert rain.opens and not second.opens
    bare = Line(rain.text, rain.evidence)
    question = "Why did the two cocoa grades part?"
    placed, alone = await ranking.relevance(default_similarity(), [question], [rain, bare])
    assert placed > alone  # "Why the two grades parted" says what the sentence leaves out


# A note on a fruit no price list names, with how it moved over the year.
GRAPES = _evidence(8, "N1", "grape-note", "research_report",
                   "过去一年巨峰葡萄产地价由2025年11月的0.65万元/吨回升至2026年8月的0.88万元/吨。",
                   title="巨峰葡萄跟踪：产地价修复延续")


def test_what_a_review_found_stays_fixed() -> None:
    from research_core.text.periods import latest_stated, periods_in

    day = dt.date(2026, 10, 31)
    assert periods_in("Lei Jun said prices held", day) == []  # a name, not June
    assert periods_in("12月均价", dt.date(2026, 1, 15)) == ["2025-12"]  # last December
    assert latest_stated("预计2026年需求增长20%。", day) == ""  # a year is no latest month
    assert latest_stated("2027年一季度投产，三季度均价0.93万元/吨", day) == ""  # no forecast


def test_two_things_priced_in_one_month_are_no_disagreement() -> None:
    from research_core.text import conflicts

    kiwi = _evidence(10, "N1", "kiwi-monthly", "industry_association",
                     "猕猴桃（徐香）：9月均价1.32万元/吨，环比+0.3%，同比+3.5%。")
    fee = _evidence(11, "N1", "fee-monthly", "industry_association",
                    "富士苹果冷库仓储费：9月均价0.86万元/吨，环比+8.1%，同比+22.0%。")
    restated = _evidence(12, "N1", "fee-erratum", "industry_association",
                         "更正后，9月富士苹果冷库仓储费均价为0.80万元/吨，环比上涨1.2%。")
    pool = [Line(e.text, e) for e in (kiwi, fee, restated)]
    found = conflicts.find(pool)
    assert [{d.first[0].source_id, d.second[0].source_id} for d in found] == [
        {"fee-monthly", "fee-erratum"}]


def test_a_figure_takes_the_period_no_other_figure_stands_between() -> None:
    from research_core.text import conflicts

    assoc = _evidence(13, "N1", "assoc-report", "industry_association",
                      "The slump came in the first quarter of 2026, when sales fell 7.5% to "
                      "451,000 units from 492,000 in Q1 2025.")
    weekly = _evidence(14, "N1", "weekly-news", "news",
                       "Sales stood at 492,000 units in the first quarter of 2025.")
    assert conflicts.find([Line(e.text, e) for e in (assoc, weekly)]) == []


async def test_a_follow_up_answer_reads_the_kept_pages_too() -> None:
    question = "What did the rain do to Ivorian mid-crop output?"
    asked = read_question(question)
    bare = await builder.follow_up(default_similarity(), asked, [_snippet()], _cite)
    assert not any("Heavy rain" in ln for ln in bare)
    item = _snippet()
    read = await builder.follow_up(default_similarity(), asked, [item], _cite, read=_read)
    assert any("Heavy rain in the western belt" in ln for ln in read)
    assert "Heavy rain in the western belt" in item.text  # quoted: its evidence holds it


ROWS_EN = ("Fuji apples: September wholesale average 7,400 yuan/t, up 3.1% on the year.\n"
           "Peaches: September wholesale average 9,200 yuan/t, down 1.4% on the year.\n"
           "Kiwifruit: September wholesale average 12,400 yuan/t, up 6.3% on the year.")


