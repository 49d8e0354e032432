"""The extractive answer reads the kept sources' whole pages where reading is free (issue 15):
a kept page's other sentences are citable, reasons stand under the page's "why" heading, a
question or an abbreviation is no sentence end, and a question that asks to cover every item
of a kind is answered item by item. Small corpora written for these tests, the real
bundled embedder."""

from __future__ import annotations

import datetime as dt

from research_core.loop import subquestions
from research_core.loop.answering import builder, completion, items
from research_core.loop.answering.pool import Line, label, whole
from research_core.loop.answering.select import Picker
from research_core.loop.evidence import Evidence, credibility
from research_core.loop.sentences import sentences
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


def test_a_question_about_a_gap_also_measures_a_spread() -> None:
    assert {"gap", "spread", "价差"} <= set(subquestions.measures_in("How big is the gap now?"))
    assert subquestions.measures_in("How did bike-share trips move?") == []  # no "share"


# Two price lists of one trade body and one statistics office, a row a material; the question
# asks to cover every main material.
STATS = ("碳酸锂（电池级）：2026年三季度均价8.34万元/吨，同比+13.8%。\n"
         "磷酸铁（电池级）：2026年三季度均价1.14万元/吨，同比+9.6%。\n"
         "磷酸铁锂（动力型）：2026年三季度均价3.95万元/吨，同比+12.2%。\n"
         "湿法隔膜（9μm基膜）：2026年三季度均价0.84元/平方米，同比+6.3%。")
MONTHLY = ("电池级碳酸锂：9月均价8.55万元/吨，环比+2.0%，同比+13.2%。\n"
           "六氟磷酸锂：9月均价9.20万元/吨，环比+2.2%，同比+42.0%。\n"
           "湿法隔膜9μm基膜：9月均价0.84元/平方米，环比0.0%，同比+6.3%。\n"
           "电解液：六氟磷酸锂价格小幅反弹，但较年初高点仍低约27%。")
MATERIALS = [_evidence(1, "N1", "stats-q3", "official_statistics", STATS),
             _evidence(2, "N1", "trade-monthly", "industry_association", MONTHLY)]


async def test_items_are_read_off_the_sources_lists() -> None:
    assert items.asks_each("帮忙梳理近一年上游材料的价格，主要材料都覆盖到")
    assert items.asks_each("Cover each of the main materials, with prices")
    assert not items.asks_each("How did lithium carbonate prices move?")
    pool = [Line(t, e) for e in MATERIALS for t in sentences(e.text, clauses=False)]
    listed = await items.listed(default_similarity(), "近一年上游材料价格是多少？", pool)
    assert listed == ["碳酸锂", "磷酸铁", "磷酸铁锂", "湿法隔膜", "六氟磷酸锂"]  # not "电解液":
    # a paragraph that opens with a label and mentions one figure is no list's row


async def test_a_question_that_asks_for_every_item_is_answered_item_by_item() -> None:
    question = "近一年动力电池上游材料的价格波动，主要材料都覆盖到，要有具体数字"
    text = await builder.report(default_similarity(), question,
                                [builder.Section("近一年上游材料价格是多少？", MATERIALS)],
                                lambda e: f"[{MATERIALS.index(e) + 1}]")
    block = text.split("*逐项*", 1)[1].split("\n\n", 1)[0]
    rows = [ln for ln in block.splitlines() if ln.startswith("• ")]
    said = text.split("*逐项*", 1)[0] + block  # the lead, then item by item
    for figure in ("1.14万元/吨", "3.95万元/吨", "9.20万元/吨", "0.84元/平方米"):
        assert said.count(figure) == 1, figure  # each item once; a small price is a figure
    assert ("8.34万元/吨" in said) != ("8.55万元/吨" in said)  # one line an item
    assert not any("磷酸铁锂" in r for r in rows if "1.14" in r)


async def test_two_rows_of_one_table_are_two_statements() -> None:
    picker = Picker(default_similarity())
    rows = [Line(t, MATERIALS[0]) for t in STATS.splitlines()]
    assert [await picker.take(r) for r in rows] == [True, True, True, True]
    assert not await picker.take(Line(rows[0].text, MATERIALS[1]))


# Five sources on separator makers' expansion and one on electrolyte additives' expansion that
# names separators once; a broad question on "upstream materials" has no such subject.
SEPARATORS = [
    _evidence(1, "N1", "huamo", "news", "华膜股份在荆门建设24亿平方米隔膜项目，总投资48亿元。",
              title="华膜股份拟投48亿元建设隔膜项目"),
    _evidence(2, "N1", "puge", "news", "浦隔科技在宜宾投资15亿元，新增隔膜基膜产能8亿平方米。"
              "浦隔科技是国内第二大湿法隔膜企业。", title="浦隔科技15亿元加码宜宾"),
    _evidence(3, "N1", "assoc", "industry_association", "上半年隔膜行业产能利用率约68%。",
              title="隔膜分会：上半年隔膜产能报告"),
    _evidence(4, "N1", "beichen", "research_report", "龙头隔膜企业扩产转向海外，匈牙利基地试产。",
              title="隔膜行业深度：龙头扩产转向海外"),
    _evidence(5, "N1", "additives", "news", "三家添加剂龙头企业宣布扩产，新增产能合计约3.5万吨。"
              "与隔膜等材料相比，添加剂行业规模较小。", title="电解液添加剂扩产潮"),
]


def test_a_source_about_something_else_stays_out_of_the_answer() -> None:
    from research_core.loop.answering import subject

    pool = [Line(t, e) for e in SEPARATORS for t in sentences(e.text, clauses=False)]
    question = "隔膜龙头企业最近一年的产能扩张情况怎么样？"
    assert subject.subject_of(question, pool) == "隔膜"
    kept = {ln.source_id for ln in subject.on_subject(question, pool)}
    assert kept == {"huamo", "puge", "assoc", "beichen"}
    one_section = [ln for ln in pool if ln.source_id in ("assoc", "additives")]
    alone = {ln.source_id for ln in subject.on_subject(question, one_section)}
    assert alone == {"assoc", "additives"}  # two sources cannot tell what the run is about
    told = {ln.source_id for ln in subject.on_subject(question, one_section, pool)}
    assert told == {"assoc"}  # the run's other evidence can
    broad = [Line(t, e) for e in MATERIALS for t in sentences(e.text, clauses=False)]
    assert subject.on_subject("近一年动力电池上游材料的价格波动", broad) == broad


def test_a_signature_line_is_no_sentence_of_an_answer() -> None:
    assert not whole("华夏有色金属加工协会铜箔分会 2026年10月31日")
    assert whole("碳酸锂（电池级）：2026年三季度均价8.34万元/吨，同比+13.8%。")


async def test_a_part_keeps_to_the_period_its_run_asks_about() -> None:
    old = _evidence(2, "N1", "fee-2024", "news", "6月6μm锂电铜箔主流加工费已跌破1.3万元/吨，"
                    "部分企业报价低至1.1万元/吨。", published="2024-06-20")
    new = _evidence(1, "N1", "fee-2026", "industry_association", "2026年9月6μm锂电铜箔加工费均价"
                    "为1.74万元/吨，环比上涨1.2%。", published="2026-10-31")
    section = builder.Section("锂电铜箔：最新一个月加工费多少？", [new, old])
    cite = {"fee-2026": "[1]", "fee-2024": "[2]"}
    alone = await builder.part(default_similarity(), section, lambda e: cite[e.source_id], [])
    assert "1.3万元/吨" in alone  # the sub-question alone names no period
    text = await builder.part(default_similarity(), section, lambda e: cite[e.source_id], [],
                              root="过去一年锂电铜箔的供需和加工费是怎么走的？")
    assert "1.74万元/吨" in text and "1.3万元/吨" not in text


async def _materials_report(question: str, extra: Evidence) -> str:
    """The report on the two price lists and one more source, for a question on every item."""
    sources = [*MATERIALS, extra]
    return await builder.report(default_similarity(), question,
                                [builder.Section("近一年上游材料价格是多少？", sources)],
                                lambda e: f"[{sources.index(e) + 1}]")


async def test_a_question_on_price_swings_gets_each_item_latest_month_and_its_high() -> None:
    peak = _evidence(3, "N1", "lipf6-review", "research_report",
                     "2026年1月月均价12.6万元/吨为本轮高点，此后回落，7月低至8.8万元/吨。",
                     title="六氟磷酸锂周期复盘：从一季度高点回落")
    text = await _materials_report("近一年上游材料的价格波动，主要材料都覆盖到", peak)
    block = text.split("*逐项*", 1)[1].split("\n\n", 1)[0]
    assert "12.6万元/吨为本轮高点" in block  # its title names the item the line leaves out
    assert "9月均价8.55万元/吨" in text and "8.34万元/吨" not in block  # September, not Q3
    assert items.asks_swings("How did cocoa prices move in 2026?")
    assert not items.asks_swings("What is the cocoa price now?")


async def test_only_the_lists_about_the_question_give_its_items() -> None:
    projects = _evidence(6, "N1", "projects", "research_report",
                         "中联隔膜：在滁州建设8亿平方米干法隔膜产线，投资9.6亿元。\n"
                         "浦隔科技：在宜宾投资15亿元建设8亿平方米湿法隔膜基膜产能。\n"
                         "华膜股份：在荆门投资48亿元建设24亿平方米湿法隔膜项目。",
                         title="隔膜行业深度：龙头扩产")
    question = "隔膜龙头企业最近一年的产能扩张情况怎么样？帮我整理下主要项目"
    assert items.asks_each(question)
    pool = [Line(t, e) for e in (MATERIALS[0], projects) for t in sentences(e.text, clauses=False)]
    assert await items.listed(default_similarity(), question, pool) == [
        "中联隔膜", "浦隔科技", "华膜股份"]


# Two salts in one English market note: the section on the latest figures must give both,
# the latest month first; a month named without its year is the publishing year's.
SALTS = _evidence(7, "N1", "salt-note", "news", "Carbonate averaged 85,500 yuan a tonne in "
                  "September. Hydroxide averaged 68,000 yuan a tonne in September. Carbonate "
                  "averaged 86,200 yuan a tonne in October, up 12.4% on the year. Carbonate "
                  "averaged 81,000 yuan a tonne in July, its low.", published="2026-10-31",
                  title="Lithium carbonate and hydroxide prices")


async def test_the_latest_figures_for_two_things_give_each_its_latest_line() -> None:
    from research_core.loop.answering.periods import periods_in

    assert periods_in("in October, up from September", dt.date(2026, 10, 31)) == [
        "2026-10", "2026-09"]
    assert periods_in("they march on", dt.date(2026, 10, 31)) == []
    section = builder.Section("What are the latest figures for lithium carbonate and lithium "
                              "hydroxide?", [SALTS])
    text = await builder.part(default_similarity(), section, _cite, [])
    bullets = [ln for ln in text.splitlines() if ln.startswith("• ")]
    assert "86,200" in bullets[0] or "86,200" in bullets[1]  # October, the latest month
    assert any("Hydroxide" in b for b in bullets[:2])  # both things the question names


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


async def test_a_source_on_an_item_no_list_names_still_gives_a_line() -> None:
    foil = _evidence(8, "N1", "foil-note", "research_report",
                     "过去一年6μm铜箔加工费由2025年11月的1.45万元/吨回升至2026年8月的1.72万元/吨。",
                     title="锂电铜箔跟踪：加工费修复延续")
    text = await _materials_report("近一年上游材料的价格，主要材料都覆盖到", foil)
    assert "1.45万元/吨回升至2026年8月的1.72万元/吨" in text
    assert items.moves(foil.text) and not items.moves("锂电铜箔9月产量约8.9万吨，同比增长约24%。")
    assert items.unlisted([Line(foil.text, foil)], ["碳酸锂"]) == [[Line(foil.text, foil)]]
    assert items.unlisted([Line(STATS.splitlines()[0], MATERIALS[0])], ["碳酸锂"]) == []


def test_what_a_review_found_stays_fixed() -> None:
    from research_core.loop.answering.periods import latest_stated, periods_in

    day = dt.date(2026, 10, 31)
    assert periods_in("Lei Jun said prices held", day) == []  # a name, not June
    assert periods_in("12月均价", dt.date(2026, 1, 15)) == ["2025-12"]  # last December
    assert latest_stated("预计2026年需求增长20%。", day) == ""  # a year is no latest month
    assert latest_stated("2027年一季度投产，三季度均价8.34万元/吨", day) == ""  # no forecast
    assert not items.asks_each("They compete with each other every month.")
    assert label("Q3 2026: sales 2.84 million units, up 9.6%.") == ""
    assert label("Copper foil: 1.86 million yuan/t, up 8.1%.") == "Copper foil"
    assert subquestions.names_measure("Prices rose", ["price"])
    assert not subquestions.names_measure("Singapore rose", ["gap"])


async def test_a_page_list_without_full_stops_is_one_line_a_row() -> None:
    PAGES["list-page"] = ("**Prices**\n\n- 碳酸锂：8.34万元/吨，同比+13.8%\n"
                          "- 磷酸铁：1.14万元/吨，同比+9.6%\n- 六氟磷酸锂：9.00万元/吨，同比+47.5%")
    item = _evidence(9, "N1", "list-page", "official_statistics", "价格表")
    lines = await completion.page_lines([item], _read)
    assert [ln.text for ln in lines] == ["碳酸锂：8.34万元/吨，同比+13.8%",
                                         "磷酸铁：1.14万元/吨，同比+9.6%",
                                         "六氟磷酸锂：9.00万元/吨，同比+47.5%"]
    assert await items.listed(default_similarity(), "主要材料价格", lines) == [
        "碳酸锂", "磷酸铁", "六氟磷酸锂"]


def test_two_things_priced_in_one_month_are_no_disagreement() -> None:
    from research_core.loop.answering import disagreements

    graphite = _evidence(10, "N1", "anode-monthly", "industry_association",
                         "人造石墨负极（中端）：9月均价2.94万元/吨，环比+0.3%，同比+3.5%。")
    foil = _evidence(11, "N1", "foil-monthly", "industry_association",
                     "6μm铜箔加工费：9月均价1.86万元/吨，环比+8.1%，同比+22.0%。")
    restated = _evidence(12, "N1", "foil-erratum", "industry_association",
                         "更正后，9月6μm锂电铜箔加工费均价为1.74万元/吨，环比上涨1.2%。")
    pool = [Line(e.text, e) for e in (graphite, foil, restated)]
    found = disagreements.find(pool)
    assert [{d.first[0].source_id, d.second[0].source_id} for d in found] == [
        {"foil-monthly", "foil-erratum"}]


def test_a_figure_takes_the_period_no_other_figure_stands_between() -> None:
    from research_core.loop.answering import disagreements

    assoc = _evidence(13, "N1", "assoc-report", "industry_association",
                      "The payback came in the first quarter of 2026, when sales fell 8.0% to "
                      "474,000 units from 515,000 in Q1 2025.")
    weekly = _evidence(14, "N1", "weekly-news", "news",
                       "Sales stood at 515,000 units in the first quarter of 2025.")
    assert disagreements.find([Line(e.text, e) for e in (assoc, weekly)]) == []


async def test_a_follow_up_answer_reads_the_kept_pages_too() -> None:
    question = "Why did Ivorian cocoa prices fall?"
    bare = await builder.follow_up(default_similarity(), question, [_snippet()], _cite)
    assert not any("Heavy rain" in ln for ln in bare)
    item = _snippet()
    read = await builder.follow_up(default_similarity(), question, [item], _cite, read=_read)
    assert any("Heavy rain in the western belt" in ln for ln in read)
    assert "Heavy rain in the western belt" in item.text  # quoted: its evidence holds it


async def test_a_follow_up_keeps_to_what_the_run_is_about() -> None:
    closest = [SEPARATORS[2], SEPARATORS[4]]  # the association's report and the additives
    cite = {e.source_id: f"[{i + 1}]" for i, e in enumerate(SEPARATORS)}
    alone = await builder.follow_up(default_similarity(), "哪家企业扩产最多？", closest,
                                    lambda e: cite[e.source_id], root="隔膜龙头企业产能扩张情况")
    assert any("添加剂" in ln for ln in alone)  # two sources cannot tell what the run is about
    kept = await builder.follow_up(default_similarity(), "哪家企业扩产最多？", closest,
                                   lambda e: cite[e.source_id], root="隔膜龙头企业产能扩张情况",
                                   context=SEPARATORS)
    assert kept and not any("添加剂" in ln for ln in kept)
