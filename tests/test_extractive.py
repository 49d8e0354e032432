"""The offline answer path (issue 15): snippets cut at boundaries, sub-questions read off the
question's clauses (issue 25), the relevance fallback, and the extractive answer (lead,
sections, conflicts, "not found") on small corpora written for these tests, with the real
bundled embedder. The corpora come from fields no evaluation suite uses (orchard fruit, wool,
lawn mowers, library loans)."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from redsearch.harness.recording import RecordingPublisher
from research_core.loop.answering import builder, completion
from research_core.loop.gathering import relevance
from research_core.loop.memory import labels
from research_core.loop.memory.evidence import Evidence, combined_score, credibility
from research_core.loop.memory.pool import key, lines_of, whole
from research_core.loop.planning import subquestions
from research_core.protocols import SearchHit
from research_core.search import snippets
from research_core.settings import EngineSettings
from research_core.store.sql import SqlStore
from research_core.text import conflicts
from research_core.text.asking import read_question
from research_core.text.sentences import sentences
from research_core.text.terms import overlap
from tests.conftest import RecordingBackend
from tests.engine_run import Serve, default_similarity, run_engine
from tests.scripted import Script

EN_TEXT = ("Lawn mower sales in the 11 markets reached 583,000 units in the second quarter of "
           "2026, up 9.4% year on year. Shipments were supported by a new garden grant in "
           "Brennmark and by dealers building stock of cordless models ahead of the season.")
ZH_TEXT = ("2026年10月富士苹果产地批发均价为1.26万元/吨，环比上涨3.1%。"
           "砀山梨均价为0.49万元/吨，两者价差扩大至0.77万元/吨，主要受产区春季霜冻减产影响，"
           "市场预计价差将在四季度继续维持高位并逐步传导至下游商超和果汁加工企业的采购定价。")


def test_an_english_snippet_ends_at_the_last_sentence_end() -> None:
    cut = snippets.cut(EN_TEXT, 200)
    assert cut.endswith("year on year.") and len(cut) <= 200


def test_without_a_sentence_end_the_cut_falls_between_words_with_an_ellipsis() -> None:
    text = "Lawn mower sales " + "rose strongly across twelve markets " * 8 + "in 2026"
    cut = snippets.cut(text, 60)
    assert cut.endswith("…") and len(cut) <= 60
    assert text.startswith(cut[:-1]) and text[len(cut) - 1] == " "  # a whole word before
    number = "Sales were " + "1,234,567.89 units and " * 5
    for limit in range(15, 70, 3):
        got = snippets.cut(number, limit)
        head = got[:-1]
        assert got.endswith("…") and len(got) <= limit, got
        assert number.startswith(head) and number[len(head)] == " ", got  # a whole figure


def test_a_chinese_snippet_ends_at_a_full_stop_or_between_words() -> None:
    cut = snippets.cut(ZH_TEXT, 60)
    assert cut.endswith("。") and "1.26万元/吨" in cut and len(cut) <= 60
    no_stop = ZH_TEXT.replace("。", "，")
    for limit in range(20, 90, 7):
        got = snippets.cut(no_stop, limit)
        assert got.endswith("…") and len(got) <= limit
        head = got[:-1]
        assert no_stop.startswith(head)
        assert not (head[-1].isdigit() or head[-1] in ".万/"), got  # never inside a figure


def test_a_short_text_is_left_whole() -> None:
    assert snippets.cut("Sales rose 4.2% in Q2 2026", 200) == "Sales rose 4.2% in Q2 2026"


TEMPLATES = ("What were", "What caused", "What are the latest", "latest figures and dates")


def test_sub_questions_are_read_off_an_english_question() -> None:
    """Each clause as written (issue 25): the clause that names the most, then each clause
    that asks something beside it, completed with it; no template, never the question
    itself."""
    question = ("How did wholesale prices of Fuji apples move between November 2025 and "
                "October 2026, which markets paid the most, and why?")
    subs = [s.question for s in subquestions.derive(read_question(question))]
    topic = ("How did wholesale prices of Fuji apples move between November 2025 and "
             "October 2026")
    assert len(subs) == 3 and subs[0] == f"{topic}?"
    assert subs[1].casefold().startswith("which markets paid the most") and topic in subs[1]
    assert subs[2] == f"Why ({topic})?"
    assert question not in subs
    assert not any(t in s for s in subs for t in TEMPLATES)


def test_sub_questions_are_read_off_a_chinese_question() -> None:
    """A bracketed list cuts nothing; a clause that asks beside the topic keeps its words; the
    mention goes; no cause is made up."""
    subs = [s.question for s in subquestions.derive(
        read_question("@研究助手 近一年主要水果（富士苹果、砀山梨、水蜜桃）的批发价格怎么走的？"
        "对果农收入有什么影响？"))]
    assert len(subs) == 2 and all(re.search(r"[\u4e00-\u9fff]", s) for s in subs)
    assert subs[0] == "近一年主要水果（富士苹果、砀山梨、水蜜桃）的批发价格怎么走的？"
    assert subs[1].startswith("对果农收入有什么影响")
    assert not any("@" in s or "原因" in s for s in subs)


def _hit(source_id: str, title: str, snippet: str) -> SearchHit:
    return SearchHit(source_id, title, snippet, f"https://x.example/{source_id}",
                     dt.date(2026, 9, 1), "news", "X")


async def test_the_relevance_fallback_keeps_a_paraphrase_and_drops_keyword_stuffing() -> None:
    question = "How did heat pump sales move in 2026?"
    paraphrase = _hit("para", "Households bought more heat pumps",
                      "Residential installations of air-to-water units climbed 4% in the second "
                      "quarter as buyers returned to the market.")
    stuffed = _hit("stuffed", "Cheap flights 2026",
                   "How to book cheap flights in 2026: sales, deals, heat, pump up your travel "
                   "savings, move fast on fares.")
    cfg = EngineSettings()
    hits = [paraphrase, stuffed]
    emb = await relevance.embedder_relevance(default_similarity(), question, hits, cfg)
    scores = relevance.blended_scores(question, hits, emb).scores
    assert overlap(question, relevance.hit_text(stuffed)) == 1.0  # terms alone would keep it
    kept = [combined_score(s.relevance, credibility("news"), 1.0, cfg) >= cfg.evidence_threshold
            for s in scores]
    assert kept == [True, False], scores


def _evidence(n: int, node: str, source_id: str, source_type: str, published: str,
              text: str, publisher: str = "", title: str = "") -> Evidence:
    cred = credibility(source_type)
    return Evidence(f"E{n}", node, "Q1", source_id, title or source_id,
                    f"https://x.example/{source_id}",
                    dt.date.fromisoformat(published), source_type, publisher or source_id, text,
                    0.8, cred, 1.0, 0.8, "", True)


# A small corpus on wool exports, two sources disagreeing on one quarter's exports.
WOOL = [
    _evidence(1, "N1", "board-q2", "official_statistics", "2026-08-10",
              "Merino wool exports from Veloria reached 1.42 million bales in the second quarter "
              "of 2026, up 6.0% on a year earlier. The board counts shipments cleared by customs.",
              "Veloria Wool Board"),
    _evidence(2, "N1", "guild-q2", "industry_association", "2026-08-20",
              "Merino wool exports from Veloria were 1.31 million bales in the second quarter of "
              "2026, according to the exporters' guild survey. Spinners reported tight supply "
              "of fine merino in June.",
              "Exporters Guild"),
    _evidence(3, "N2", "news-drought", "news", "2026-09-05",
              "Prices rose because a July drought cut about 8% of the spring clip. "
              "Merino wool exports from Veloria reached 1.42 million bales in the second quarter "
              "of 2026, up 6.0% on a year earlier.",
              "Daily Fleece", "Drought lifts Veloria wool prices"),
    _evidence(4, "N2", "research-prices", "research_report", "2026-10-01",
              "Veloria's greasy merino export prices averaged 3.85 dollars per kilogram in "
              "September 2026, the highest monthly average since 2011.",
              "Shearwater Research"),
]
SECTIONS = [builder.Section("How much merino wool did Veloria export in Q2 2026?", WOOL[:2]),
            builder.Section("Why did wool prices rise in 2026?", WOOL[2:])]


def _numbered(e: Evidence) -> str:
    return f"[{[c.source_id for c in WOOL].index(e.source_id) + 1}]"


async def test_the_extractive_report_says_each_sentence_once_with_its_citation() -> None:
    asked = read_question("How did Veloria's wool exports and prices move in 2026, and why?")
    text = await builder.report(default_similarity(), asked, SECTIONS, _numbered)
    said = [s for s in sentences(text, headings=False)]
    bodies = [re.sub(r"\s*\[\d\]", "", s) for s in said if re.search(r"\[\d\]$", s)]
    assert len(bodies) == len(set(bodies)) and len(bodies) >= 3
    assert "July drought" in text and "3.85 dollars" in text


async def test_a_conflict_between_two_sources_is_shown_with_both_figures() -> None:
    asked = read_question("How much merino wool did Veloria export in Q2 2026?")
    text = await builder.report(default_similarity(), asked, SECTIONS[:1], _numbered)
    block = text.split("Where the sources disagree", 1)[1]
    assert "1.42 million" in block and "1.31 million" in block
    assert "[1]" in block and "[2]" in block
    assert "Veloria Wool Board's figure is preferred" in block
    assert "official statistics over industry association" in block


async def test_parts_do_not_repeat_what_another_part_said() -> None:
    sim = default_similarity()
    first = await builder.part(sim, SECTIONS[0], lambda e: f"[{e.source_id}]", [])
    second = await builder.part(sim, SECTIONS[1], lambda e: f"[{e.source_id}]",
                                sentences(first))
    assert "1.42 million bales in the second quarter" in first
    assert "1.42 million bales" not in second  # the news rewrite of the board's figure
    assert "July drought" in second


async def test_what_the_evidence_does_not_cover_is_named_as_not_found() -> None:
    """Only the names the question gives that no kept evidence states: "Norway", not
    "Veloria" (the sources state it) nor "exports" or "move" (no names)."""
    asked = read_question("How did merino wool exports from Veloria and Norway move in 2026?")
    text = await builder.report(default_similarity(), asked, SECTIONS[:1], _numbered)
    last = text.splitlines()[-1]
    assert last == "Not found in the sources: the question's “Norway”."


@pytest.mark.parametrize(("question", "one_clause"), [
    ("苹果批发价格如何变化？原因是什么？", "苹果批发价格如何变化？"),
    ("How did apple prices move, and why?", "How did apple prices move?")])
def test_fallback_sub_questions_follow_the_question_language(question: str,
                                                             one_clause: str) -> None:
    """The clauses keep the question's language; a question that asks one thing gets no split
    from its wording (the evidence gives it one: `decomposition.split`)."""
    subs = subquestions.derive(read_question(question))
    assert subs and all(bool(re.search(r"[\u4e00-\u9fff]", s.question)) ==
                                  bool(re.search(r"[\u4e00-\u9fff]", question)) for s in subs)
    assert subquestions.derive(read_question(one_clause)) == []


def test_a_cut_snippet_is_completed_from_its_page() -> None:
    body = ("Sales fell in the first quarter. Three policy changes took effect on 1 January "
            "2026: the grant was cut from €600 to €350, and the reduced VAT rate on garden "
            "machinery expired. Sales recovered later.")
    snippet = snippets.cut(body[33:], 60)
    assert snippet.endswith("…")
    assert completion.whole_text(snippet, body) == body[33:-len(" Sales recovered later.")]
    assert completion.whole_text("Not on the page at all…", body) is None


async def test_figures_without_a_unit_compare_by_magnitude_for_the_same_quarter() -> None:
    lines = lines_of([
        _evidence(1, "N1", "authority", "official_statistics", "2026-07-18",
                  "Library loans in Tarnvik reached 3.47 million in the second quarter of "
                  "2026, up 17% from 2.95 million a year earlier."),
        _evidence(2, "N1", "council", "industry_association", "2026-07-25",
                  "The libraries council reports 3.18 million library loans in Tarnvik in the "
                  "second quarter of 2026."),
        _evidence(3, "N1", "news", "news", "2026-10-08",
                  "Tarnvik library loans were 1.36 million in September 2026."),
    ])
    found = conflicts.find(lines)
    assert [(d.period, d.first[1].text, d.second[1].text) for d in found] == [
        ("2026-Q2", "3.47 million", "3.18 million")]


async def test_a_chinese_correction_is_a_conflict_and_the_later_figure_is_preferred() -> None:
    items = [
        _evidence(1, "N1", "fruit-sep", "industry_association", "2026-10-09",
                  "2026年9月徐香猕猴桃产地收购均价为1.38万元/吨，环比上涨3.3%。", "果品流通协会"),
        _evidence(2, "N1", "fruit-fix", "industry_association", "2026-10-28",
                  "经核实，2026年9月徐香猕猴桃产地收购均价应为1.29万元/吨，特此更正。",
                  "果品流通协会更正"),
    ]
    text = await builder.report(default_similarity(), read_question("徐香猕猴桃收购价最近怎么走？"),
                                [builder.Section("徐香猕猴桃收购价是多少？", items)],
                                lambda e: f"[{int(e.id[1:])}]")
    block = text.split("来源之间的分歧", 1)[1]
    assert "1.38万" in block and "1.29万" in block and "采用 果品流通协会更正 的数字" in block


async def test_an_offline_run_answers_in_whole_sentences_each_said_once(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    broken = {name: (lambda body: "{not json") for name in
              ("Decomposition", "QueryPlan", "HitScores", "MemorySummaryOut", "ReflectionOut")}
    publisher = RecordingPublisher([])
    out = await run_engine(serve, Script(rules={**broken, "report": lambda body: "no"}),
                           backend, store, publisher=publisher, mode="standard")
    assert out.report.fallback and out.report.cited
    parts = [v[-1].text for k, v in publisher.parts.items() if k != "report"]
    said = [key(s) for p in parts for s in sentences(p, headings=False)
            if not s.startswith(("[", "Not found"))]
    assert parts and said and len(said) == len(set(said))  # no sentence in two parts
    body = out.report.text
    report_said = [s for s in sentences(body, headings=False) if re.search(r"\[\d+\]$", s)]
    assert len(report_said) == len(set(report_said)) >= 2
    assert not re.search(r"\w…", body)  # nothing cut inside a word


async def test_the_same_figures_in_other_words_are_said_once() -> None:
    items = [
        _evidence(1, "N1", "weekly", "news", "2026-04-22",
                  "Lawn mower sales in the 11 markets fell 7.5% year on year to 451,000 units in "
                  "the first quarter of 2026, according to figures released on 21 April."),
        _evidence(2, "N1", "association", "industry_association", "2026-10-29",
                  "The slump came in the first quarter of 2026, when lawn mower sales fell "
                  "7.5% to 451,000 units from 492,000 in Q1 2025."),
        _evidence(3, "N1", "monthly", "news", "2026-10-14",
                  "Lawn mower sales rose to 207,000 units in September 2026, up 11.7% on the "
                  "year."),
    ]
    asked = read_question("How did lawn mower sales move in 2026?")
    text = await builder.report(default_similarity(), asked,
                                [builder.Section("Lawn mower sales in 2026?", items)],
                                lambda e: f"[{int(e.id[1:])}]")
    assert text.count("451,000") == 1 and "207,000" in text
    lead = text.split("\n\n", 1)[0]
    assert lead.index("451,000") < lead.index("207,000")  # in time order


async def test_a_snippet_announcing_a_disagreement_gets_the_figures_that_follow() -> None:
    body = ("Two credible sources give different figures for lawn mower sales in the second "
            "quarter of 2026. The association reported 556,000 units, while the statistics "
            "board reported 583,000 units. The difference is one of definition.")
    item = _evidence(1, "N1", "reconciliation", "research_report", "2026-09-22",
                     snippets.cut(body, 120))
    assert "556,000" not in item.text

    async def read(source_id: str) -> str:
        return body

    [done] = await completion.completed([item], read)
    assert done.text.endswith("reported 583,000 units.") and "556,000" in done.text


def test_two_products_moving_apart_in_one_sentence_are_no_disagreement() -> None:
    one_source = lines_of([_evidence(
        1, "N1", "research", "research_report", "2026-10-27",
        "Apples rose from 7,670 yuan/t in October 2025 to 8,550 yuan/t in September 2026, "
        "while pears slipped from 7,200 yuan/t to 6,800 yuan/t.")])
    two_sources = lines_of([_evidence(
        2, "N1", "note", "research_report", "2026-09-22",
        "The association reported 556,000 units for Q2 2026, up 3.6%, while the statistics board "
        "reported 583,000 units.")])
    assert conflicts.documented(one_source) == []
    announced = lines_of([_evidence(
        3, "N1", "analytics", "research_report", "2026-08-30",
        "Two figures circulate for Tarnvik library loans in the second quarter of 2026: 3.47 "
        "million from the culture office and 3.18 million from the libraries council.")])
    assert len(conflicts.documented(announced)) == 1
    assert len(conflicts.documented(two_sources)) == 1
    attributed = lines_of([_evidence(
        4, "N1", "wool", "official_statistics", "2026-10-20",
        "受寒潮影响，羊毛平均收购价由上年同期的每公斤31元升至38元（统计局口径）。")])
    assert conflicts.documented(attributed) == []  # "口径" says whose measure, not a dispute
    disputed = lines_of([_evidence(
        5, "N1", "wool", "research_report", "2026-10-21",
        "两组数据口径不一致：协会统计羊毛产量为3.1万吨，海关统计为2.8万吨。")])
    assert len(conflicts.documented(disputed)) == 1


def test_figures_far_apart_measure_different_things_not_a_disagreement() -> None:
    """A cold-storage fee of 0.21 and a wholesale price of 1.26 (万元/吨, same month) are two
    measures; 0.21 and 0.19 are two versions of one."""
    fee = _evidence(5, "N1", "assoc-fee", "industry_association", "2026-10-12",
                    "9月富士苹果冷库仓储费均价为0.21万元/吨，环比上涨8.1%。")
    price = _evidence(6, "N1", "assoc-price", "industry_association", "2026-10-31",
                      "9月富士苹果冷库出库综合价格均价为1.26万元/吨，环比上涨1.0%。")
    fixed = _evidence(7, "N1", "assoc-fixed", "industry_association", "2026-10-31",
                      "9月富士苹果冷库仓储费均价为0.19万元/吨，环比上涨1.2%。")
    assert conflicts.find(lines_of([fee, price])) == []
    [found] = conflicts.find(lines_of([fee, fixed]))
    assert {found.first[1].value, found.second[1].value} == {"2100", "1900"}


def test_a_numbered_section_heading_is_no_sentence_of_an_answer() -> None:
    assert not whole("三、批发价不是果农收入的核心变量")
    assert whole("三、批发价不是核心变量，收购价才是果农收入的来源。")


async def test_a_preferred_later_figure_says_its_dates_with_their_citations() -> None:
    """The dates that make one figure the later one are cited, so the claim check does not
    flag the answer's own sentence as figures without a source."""
    early = _evidence(9, "N1", "authority", "official_statistics", "2026-10-14",
                      "Readers made 3.47 million library loans in the third quarter of 2026.")
    late = _evidence(10, "N1", "council", "official_statistics", "2026-10-21",
                     "The council recorded 3.18 million library loans in the third quarter "
                     "of 2026.")
    [found] = conflicts.find(lines_of([early, late]))
    said = labels.disagreement(found, lambda e: f"[{e.source_id}]", zh=False)
    assert "(2026-10-21 [council] vs 2026-10-14 [authority])" in said


async def test_a_part_whose_share_is_smaller_than_its_first_line_still_says_it() -> None:
    """A part's share of the reading budget shrinks as the plan grows; a part is never sent
    empty: its heading and first sentence go out, and the report gets what is left."""
    text = await builder.part(default_similarity(), SECTIONS[0], lambda e: f"[{e.source_id}]",
                              [], budget=40)
    assert text.startswith(f"*{SECTIONS[0].question}*\n• ")
    assert len(text.splitlines()) == 2
