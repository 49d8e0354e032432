"""The extractive answer reads the kept sources' whole pages where reading is free (issue 15):
a kept page's other sentences are citable, reasons stand under the page's "why" heading, a
question or an abbreviation is no sentence end, and wherever the kept sources list the things
the question is about, the answer goes item by item (issue 25: the evidence decides, not the
question's wording). Small corpora written for these tests, in fields no evaluation suite
uses (cocoa, orchard fruit wholesale prices, cashmere yarn), the real bundled embedder."""

from __future__ import annotations

import datetime as dt

from research_core.loop.answering import builder, completion, items, subject
from research_core.loop.answering.select import Picker
from research_core.loop.memory.evidence import Evidence, credibility
from research_core.loop.memory.pool import Line, label, same_item, whole
from research_core.loop.planning import subquestions
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


def test_a_question_s_measures_are_the_words_it_uses() -> None:
    """A measure is one the question names as a word: no "gap" read as a "spread" (issue 25),
    and "car-share" names no "share"."""
    assert subquestions.measures_in("How big is the gap now?") == []
    assert subquestions.measures_in("How wide is the spread now?") == ["spread"]
    assert subquestions.measures_in("两者价差有多大？") == ["价差"]
    assert subquestions.measures_in("How did car-share rentals move?") == []  # no "share"
    assert subquestions.measures_in("How did the market share of car-share firms move?") == [
        "share"]


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


async def test_items_are_read_off_the_sources_lists() -> None:
    pool = [Line(t, e) for e in FRUIT for t in sentences(e.text, clauses=False)]
    listed = await items.listed(default_similarity(), "近一年水果批发价格是多少？", pool)
    assert listed == ["富士苹果", "水蜜桃", "水蜜桃罐头", "猕猴桃", "砀山梨"]  # not "加工品":
    # a paragraph that opens with a label and mentions one figure is no list's row
    prose = [Line(t, e) for e in (GRAPES,) for t in sentences(e.text, clauses=False)]
    assert await items.listed(default_similarity(), "近一年水果批发价格是多少？", prose) == []


async def test_a_question_on_sources_that_list_items_is_answered_item_by_item() -> None:
    """No word of the question asks for every item: the sources' lists make the answer go
    item by item, each fruit once, the latest figure of each."""
    question = "近一年水果批发价格怎么样？请给出数字。"
    text = await builder.report(default_similarity(), question,
                                [builder.Section("近一年水果批发价格是多少？", FRUIT)],
                                lambda e: f"[{FRUIT.index(e) + 1}]")
    block = text.split("*逐项*", 1)[1].split("\n\n", 1)[0]
    rows = [ln[2:] for ln in block.splitlines() if ln.startswith("• ")]
    fruits = ["富士苹果", "水蜜桃", "水蜜桃罐头", "猕猴桃", "砀山梨"]
    assert sorted(next(f for f in fruits if same_item(label(r), f)) for r in rows) == sorted(
        fruits)  # one line an item
    said = text.split("*逐项*", 1)[0] + block  # the lead, then item by item
    for figure in ("0.62万元/吨", "1.46万元/吨", "0.51万元/吨"):
        assert said.count(figure) == 1, figure  # no line said twice
    assert "9月批发均价0.97万元/吨" in block  # the latest figure of an item two lists give
    assert "12.40元/公斤" in block  # a small price is a figure
    assert not any("水蜜桃罐头" in r for r in rows if "0.62" in r)
    without_lists = await builder.report(default_similarity(), question, [builder.Section(
        "近一年水果批发价格是多少？", [GRAPES])], lambda e: "[1]")
    assert "*逐项*" not in without_lists  # no list in the evidence: no item by item


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


def test_a_source_about_something_else_stays_out_of_the_answer() -> None:
    from research_core.loop.answering import subject

    pool = [Line(t, e) for e in SPINNERS for t in sentences(e.text, clauses=False)]
    question = "近一年羊绒纺纱企业扩产了多少？"
    assert subject.subject_of(question, pool) == "羊绒"
    kept = {ln.source_id for ln in subject.on_subject(question, pool)}
    assert kept == {"xueyu", "beifang", "assoc", "research"}
    one_section = [ln for ln in pool if ln.source_id in ("assoc", "lyocell")]
    alone = {ln.source_id for ln in subject.on_subject(question, one_section)}
    assert alone == {"assoc", "lyocell"}  # two sources cannot tell what the run is about
    told = {ln.source_id for ln in subject.on_subject(question, one_section, pool)}
    assert told == {"assoc"}  # the run's other evidence can
    broad = [Line(t, e) for e in FRUIT for t in sentences(e.text, clauses=False)]
    assert subject.on_subject("近一年主要水果的批发价格波动", broad) == broad


def test_a_signature_line_is_no_sentence_of_an_answer() -> None:
    assert not whole("中国果品流通协会苹果分会 2026年10月31日")
    assert whole("富士苹果（80#一级）：2026年三季度均价0.93万元/吨，同比+13.8%。")


async def test_a_part_keeps_to_the_period_its_run_asks_about() -> None:
    old = _evidence(2, "N1", "fee-2024", "news", "6月富士苹果冷库仓储费已跌破0.13万元/吨，"
                    "部分企业报价低至0.11万元/吨。", published="2024-06-20")
    new = _evidence(1, "N1", "fee-2026", "industry_association", "2026年9月富士苹果冷库仓储费"
                    "均价为0.17万元/吨，环比上涨1.2%。", published="2026-10-31")
    section = builder.Section("富士苹果：最新一个月冷库仓储费多少？", [new, old])
    cite = {"fee-2026": "[1]", "fee-2024": "[2]"}
    alone = await builder.part(default_similarity(), section, lambda e: cite[e.source_id], [])
    assert "0.13万元/吨" in alone  # the sub-question alone names no period
    text = await builder.part(default_similarity(), section, lambda e: cite[e.source_id], [],
                              root="过去一年富士苹果的供需和冷库仓储费是怎么走的？")
    assert "0.17万元/吨" in text and "0.13万元/吨" not in text


async def _fruit_report(question: str, extra: Evidence) -> str:
    """The report on the two price lists and one more source."""
    sources = [*FRUIT, extra]
    return await builder.report(default_similarity(), question,
                                [builder.Section("近一年水果批发价格是多少？", sources)],
                                lambda e: f"[{sources.index(e) + 1}]")


async def test_a_question_on_price_swings_gets_each_item_latest_month_and_its_high() -> None:
    peak = _evidence(3, "N1", "pear-review", "research_report",
                     "2026年1月月均价0.78万元/吨为本轮高点，此后回落，7月低至0.42万元/吨。",
                     title="砀山梨价格复盘：从春节高点回落")
    text = await _fruit_report("近一年主要水果的批发价格波动怎么样？", peak)
    block = text.split("*逐项*", 1)[1].split("\n\n", 1)[0]
    assert text.count("0.78万元/吨为本轮高点") == 1  # in the lead or item by item, once
    assert "9月批发均价0.97万元/吨" in block and "0.93万元/吨" not in block  # September, not Q3
    pool = [Line(t, e) for e in (*FRUIT, peak) for t in sentences(e.text, clauses=False)]
    swings = await items.each(pool, ["富士苹果", "砀山梨"], Picker(default_similarity()).take,
                              swings=True)
    assert [ln.source_id for ln in swings] == ["trade-monthly", "trade-monthly", "pear-review"]
    # the high's line names no fruit: its source's title names the item it leaves out
    plain = await items.each(pool, ["富士苹果", "砀山梨"], Picker(default_similarity()).take)
    assert [ln.source_id for ln in plain] == ["trade-monthly", "trade-monthly"]
    assert items.asks_swings("How did cocoa prices move in 2026?")
    assert not items.asks_swings("What is the cocoa price now?")


async def test_only_the_lists_about_the_question_give_its_items() -> None:
    projects = _evidence(6, "N1", "projects", "research_report",
                         "中联羊绒：在赤峰建设800吨粗纺羊绒纱线产线，投资9.6亿元。\n"
                         "北纺科技：在包头投资15亿元建设800吨精纺羊绒纱线产能。\n"
                         "雪域羊绒：在鄂尔多斯投资48亿元建设2000吨羊绒纱线项目。",
                         title="羊绒行业深度：龙头扩产")
    question = "近一年羊绒纺纱企业扩产了多少？新项目各在哪里、投资多少？"
    pool = [Line(t, e) for e in (FRUIT[0], projects) for t in sentences(e.text, clauses=False)]
    assert await items.listed(default_similarity(), question, pool) == [
        "中联羊绒", "北纺科技", "雪域羊绒"]  # not the fruit price table's rows


# Two fruits in one English market note: the section on the latest figures must give both,
# the latest month first; a month named without its year is the publishing year's.
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
    assert "9,620" in bullets[0] or "9,620" in bullets[1]  # October, the latest month
    assert any("Pears" in b for b in bullets[:2])  # both things the question names


async def test_a_reason_is_scored_with_the_heading_it_stands_under() -> None:
    lines = await completion.page_lines([_snippet()], _read)
    rain = next(ln for ln in lines if ln.text.startswith("Heavy rain"))
    second = next(ln for ln in lines if ln.text.startswith("Roads"))
    assert rain.opens and not second.opens
    picker = Picker(default_similarity())
    bare = Line(rain.text, rain.evidence)
    question = "Why did the two cocoa grades part?"
    placed, alone = await picker.scores(question, [rain, bare], False)
    assert placed > alone  # "Why the two grades parted" says what the sentence leaves out


# A note on a fruit no price list names, with how it moved over the year.
GRAPES = _evidence(8, "N1", "grape-note", "research_report",
                   "过去一年巨峰葡萄产地价由2025年11月的0.65万元/吨回升至2026年8月的0.88万元/吨。",
                   title="巨峰葡萄跟踪：产地价修复延续")


async def test_a_source_on_an_item_no_list_names_still_gives_a_line() -> None:
    text = await _fruit_report("近一年水果批发价格是多少？", GRAPES)
    assert "0.65万元/吨回升至2026年8月的0.88万元/吨" in text
    assert items.moves(GRAPES.text)
    assert not items.moves("巨峰葡萄9月上市量约8.9万吨，同比增长约24%。")
    assert items.unlisted([Line(GRAPES.text, GRAPES)], ["富士苹果"]) == [
        [Line(GRAPES.text, GRAPES)]]
    assert items.unlisted([Line(STATS.splitlines()[0], FRUIT[0])], ["富士苹果"]) == []


def test_what_a_review_found_stays_fixed() -> None:
    from research_core.text.periods import latest_stated, periods_in

    day = dt.date(2026, 10, 31)
    assert periods_in("Lei Jun said prices held", day) == []  # a name, not June
    assert periods_in("12月均价", dt.date(2026, 1, 15)) == ["2025-12"]  # last December
    assert latest_stated("预计2026年需求增长20%。", day) == ""  # a year is no latest month
    assert latest_stated("2027年一季度投产，三季度均价0.93万元/吨", day) == ""  # no forecast
    assert label("Q3 2026: sales 3.47 million units, up 9.6%.") == ""
    assert label("Merino tops: 1.37 million yuan/t, up 8.1%.") == "Merino tops"
    assert subquestions.names_measure("Prices rose", ["price"])
    assert not subquestions.names_measure("Singapore rose", ["gap"])


async def test_a_page_list_without_full_stops_is_one_line_a_row() -> None:
    PAGES["list-page"] = ("**Prices**\n\n- 富士苹果：0.93万元/吨，同比+13.8%\n"
                          "- 水蜜桃：0.62万元/吨，同比+9.6%\n- 砀山梨：0.51万元/吨，同比+47.5%")
    item = _evidence(9, "N1", "list-page", "official_statistics", "价格表")
    lines = await completion.page_lines([item], _read)
    assert [ln.text for ln in lines] == ["富士苹果：0.93万元/吨，同比+13.8%",
                                         "水蜜桃：0.62万元/吨，同比+9.6%",
                                         "砀山梨：0.51万元/吨，同比+47.5%"]
    assert await items.listed(default_similarity(), "主要水果价格", lines) == [
        "富士苹果", "水蜜桃", "砀山梨"]


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
    question = "Why did Ivorian cocoa prices fall?"
    bare = await builder.follow_up(default_similarity(), question, [_snippet()], _cite)
    assert not any("Heavy rain" in ln for ln in bare)
    item = _snippet()
    read = await builder.follow_up(default_similarity(), question, [item], _cite, read=_read)
    assert any("Heavy rain in the western belt" in ln for ln in read)
    assert "Heavy rain in the western belt" in item.text  # quoted: its evidence holds it


async def test_a_follow_up_keeps_to_what_the_run_is_about() -> None:
    closest = [SPINNERS[2], SPINNERS[4]]  # the association's report and the lyocell news
    cite = {e.source_id: f"[{i + 1}]" for i, e in enumerate(SPINNERS)}
    root = "近一年羊绒纺纱企业扩产了多少？"
    alone = await builder.follow_up(default_similarity(), "哪家企业扩产最多？", closest,
                                    lambda e: cite[e.source_id], root=root)
    assert any("莱赛尔" in ln for ln in alone)  # two sources cannot tell what the run is about
    kept = await builder.follow_up(default_similarity(), "哪家企业扩产最多？", closest,
                                   lambda e: cite[e.source_id], root=root, context=SPINNERS)
    assert kept and not any("莱赛尔" in ln for ln in kept)


async def test_a_list_is_as_close_to_the_question_as_what_it_is_a_list_of() -> None:
    """A table's rows are mostly figures, which the embedder reads as little like any
    question: a list of the causes of a fall, under a title on that fall, beats a survey of
    mills whose rows merely name the country, where the question asks why."""
    causes = [_evidence(20 + i, "N1", "wool-note", "research_report", text,
                        title="Ostvale wool: more bales, fewer dollars, decomposing the Q3 fall")
              for i, text in enumerate([
                  "Auction fall: the benchmark averaged 1,150 against 1,310 cents: −160.",
                  "Rain damage: the clean yield fell from 68.0% to 63.5%: −45.",
                  "Mix: fewer superfine lots, 12.1% of bales against 16.0%: −30."])]
    mills = [_evidence(30 + i, "N1", "mill-survey", "industry_association", text,
                       title="Ostvale scouring mills: capacity survey, third quarter 2026")
             for i, text in enumerate([
                 "Ostvale Scour (Ridgeton): capacity 780,000 bales a year, used 94%.",
                 "Southern Wool Works (Port Ellen): capacity 520,000 bales a year, used 90%.",
                 "Highfield Combing (Marrow): capacity 360,000 bales a year, used 52%."])]
    pool = [Line(e.text, e) for e in [*mills, *causes]]
    question = "Ostvale sold more wool in Q3 but earned less, why? Break the fall down."
    assert await items.listed(default_similarity(), question, pool) == [
        "Auction fall", "Rain damage", "Mix"]


ROWS_EN = ("Fuji apples: September wholesale average 7,400 yuan/t, up 3.1% on the year.\n"
           "Peaches: September wholesale average 9,200 yuan/t, down 1.4% on the year.\n"
           "Kiwifruit: September wholesale average 12,400 yuan/t, up 6.3% on the year.")


async def test_a_list_is_listed_item_by_item_only_for_a_reader_who_reads_its_labels() -> None:
    """An English question over a Chinese price table gets no Chinese item list (its
    figures still reach the sections); a Chinese question gets an English-labelled list."""
    zh_rows = [Line(t, FRUIT[0]) for t in sentences(STATS, clauses=False)]
    asked_en = "How have fruit wholesale prices moved over the past year?"
    assert await items.listed(default_similarity(), asked_en, zh_rows) == []
    assert await items.listed(default_similarity(), "近一年水果批发价格是多少？", zh_rows)
    en = _evidence(3, "N1", "fruit-board", "official_statistics", ROWS_EN)
    en_rows = [Line(t, en) for t in sentences(ROWS_EN, clauses=False)]
    assert await items.listed(default_similarity(), asked_en, en_rows) == [
        "Fuji apples", "Peaches", "Kiwifruit"]
    assert await items.listed(default_similarity(), "近一年水果批发价格是多少？", en_rows) == [
        "Fuji apples", "Peaches", "Kiwifruit"]


async def test_a_list_of_other_things_gives_no_items_beside_a_list_about_the_subject() -> None:
    """A question on cashmere yarn, over a textile price table that leaves cashmere yarn out
    (a note points elsewhere for it) and a cashmere-yarn tracker: the tracker's rows are the
    items, not the table's cotton and viscose prices (a copper-foil question read the other
    battery materials' prices item by item, and the utilisation line fell out of the
    budget), the sources no list covers give only lines that name it, and a source that never
    names it gives none."""
    table = _evidence(40, "N1", "textile-flash", "industry_association",
                      "棉纱（32支）：10月均价2.31万元/吨，环比+0.4%，同比+3.1%。\n"
                      "粘胶短纤：10月均价1.36万元/吨，环比+0.7%，同比+5.0%。\n"
                      "涤纶短纤：10月均价0.74万元/吨，环比-0.3%，同比-2.2%。\n"
                      "羊绒纱线价格请参阅羊绒分会的羊绒纱线月报。",
                      title="纺织原料协会：2026年10月纱线价格快报")
    tracker = _evidence(41, "N1", "yarn-tracker", "research_report",
                        "需求：针织订单回暖，9月羊绒纱线产量约1.2万吨，同比增长约9%。\n"
                        "价格：精纺羊绒纱线9月均价61.5万元/吨，较一年前的55.0万元/吨上涨约12%。\n"
                        "开工：行业开工率由一年前的64%升至72%，较上月提高2个百分点。",
                        title="三季度跟踪：订单回暖，结构分化")
    news = [_evidence(42 + i, "N1", f"yarn-news-{i}", "news", text, title=title)
            for i, (title, text) in enumerate([
                ("羊绒纱线9月价格上涨", "9月精纺羊绒纱线均价61.5万元/吨，环比上涨1.6%。"),
                ("羊绒纱线企业扩产放缓", "今年以来羊绒纱线新增产能约0.3万吨，明显少于上年。"),
                ("棉纱市场观察", "10月32支棉纱均价2.31万元/吨，下游补库带动小幅上涨。")])]
    pool = [Line(t, e) for e in [table, tracker, *news]
            for t in sentences(e.text, clauses=False)]
    question = "羊绒纱线这块帮忙看一下：过去一年供需和价格怎么走的？最新一个月价格多少？"
    thing = subject.subject_of(question, pool)
    assert thing == "羊绒"
    listed = await items.listed(default_similarity(), question, pool, thing)
    assert listed == ["需求", "价格", "开工"]
    # the sources no list covers give lines on the subject, not the cotton-yarn news
    assert [ln[0].source_id for ln in items.unlisted(pool, listed, thing)] == [
        "yarn-news-0", "yarn-news-1"]
    assert "yarn-news-2" in [ln[0].source_id for ln in items.unlisted(pool, listed)]
    # nor does the answer give the other yarns' prices, wherever they are written
    assert {ln.source_id for ln in items.elsewhere(question, pool, thing)} == {
        "textile-flash", "yarn-news-2"}
    assert all("羊绒" not in ln.text for ln in items.elsewhere(question, pool, thing))
    # a source in the subject's script that never names it is about something else; one in
    # another script may name it in its own words
    tops = _evidence(47, "N1", "tops-weekly", "news", "9月澳毛条均价9.8万元/吨，环比上涨0.5%。",
                     title="毛条周报")
    english = _evidence(48, "N1", "yarn-weekly", "news", "Knitting yarn orders rose 3% in "
                        "September, the third monthly rise.", title="Yarn market weekly")
    more = pool + [Line(e.text, e) for e in (tops, english)]
    assert {ln.source_id for ln in items.elsewhere(question, more, thing)} == {
        "textile-flash", "yarn-news-2", "tops-weekly"}
