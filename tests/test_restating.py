"""A later correction restates what it corrects: a table row of the first release keeps its
other quarters and carries the corrected figure, the old one beside it and the notice cited; a
sentence whose rates were computed from the old figure is left out; another body's figure
corrects nothing. Conflicts a body settles by revising its own figure leave no
doubt, and a body named after its country does not hide that country. Fixtures: a wool market."""

from __future__ import annotations

import datetime as dt

from research_core.loop.answering.restating import restated
from research_core.loop.memory.evidence import Evidence, credibility
from research_core.loop.memory.pool import Line
from research_core.text import conflicts

BOARD = "Ostvale Wool Board"
ROW = "Sales (thousand bales): Q1 2026 3,770, Q2 2026 4,210."
PROSE = ("In the second quarter of 2026 Ostvale sold 4,210 thousand bales of greasy wool, up "
         "3.4% on a year earlier.")
NOTICE = "Ostvale's greasy wool sales in the second quarter of 2026 were 4,150 thousand bales."


def _line(source_id: str, text: str, published: str, source_type: str = "official_statistics",
          publisher: str = BOARD) -> Line:
    evidence = Evidence(source_id, "N1", "Q1", source_id, source_id, f"https://x.example/{source_id}",
                        dt.date.fromisoformat(published), source_type, publisher, text, 0.8,
                        credibility(source_type), 1.0, 0.8, "", True)
    return Line(text, evidence)


def _cite(evidence: Evidence) -> str:
    return f"[{evidence.source_id}]"


def test_a_later_notice_restates_the_row_and_drops_the_rates_of_the_old_figure() -> None:
    pool = [_line("release", ROW, "2026-07-10"), _line("release", PROSE, "2026-07-10"),
            _line("notice", NOTICE, "2026-07-30")]
    out = [ln.text for ln in restated(pool, conflicts.every(pool), _cite, zh=False)]
    assert out == ["Sales (thousand bales): Q1 2026 3,770, Q2 2026 4,150 (revised from 4,210 "
                   "[notice]).", NOTICE]


def test_a_figure_in_millions_is_restated_in_millions() -> None:
    row = ("Ostvale's greasy wool sales were 4.21 million bales in the second quarter of 2026 "
           "and 3.77 million bales in the first.")
    pool = [_line("release", row, "2026-07-10"), _line("notice", NOTICE, "2026-07-30")]
    first = restated(pool, conflicts.every(pool), _cite, zh=False)[0].text
    assert first.startswith("Ostvale's greasy wool sales were 4.15 million (revised from 4.21 "
                            "million [notice]) bales")
    assert "3.77 million bales in the first" in first


def test_only_the_body_s_own_later_figure_corrects() -> None:
    blog = _line("blog", "Ostvale's greasy wool sales in the second quarter of 2026 were 4,300 "
                 "thousand bales.", "2026-07-30", "seo_blog", "Wool Tips")
    pool = [_line("release", PROSE, "2026-07-10"), _line("release", ROW, "2026-07-10"), blog]
    assert conflicts.every(pool)  # they do disagree
    assert [ln.text for ln in restated(pool, conflicts.every(pool), _cite, zh=False)] == [
        PROSE, ROW, blog.text]
    customs = _line("customs", NOTICE, "2026-07-30", publisher="Ostvale Customs")
    peers = [_line("release", ROW, "2026-07-10"), customs]
    assert [ln.text for ln in restated(peers, conflicts.every(peers), _cite, zh=False)] == [
        ROW, NOTICE]  # another body's figure: a disagreement, no correction
    early = [_line("release", PROSE, "2026-07-10"), _line("notice", NOTICE, "2026-06-30")]
    later_first = restated(early, conflicts.every(early), _cite, zh=False)
    assert later_first[0].text == PROSE  # the later release is the correction here
    assert "4,210 thousand (revised from 4,150 thousand [release])" in later_first[1].text


def test_a_figure_the_release_gives_elsewhere_is_no_correction_of_it() -> None:
    """The detector may pair a figure with the wrong month; a "correction" to a figure the
    release itself states (another month's) restates nothing."""
    q1 = "Ostvale's greasy wool sales in the first quarter of 2026 were 4,150 thousand bales."
    pool = [_line("release", ROW, "2026-07-10"), _line("release", PROSE, "2026-07-10"),
            _line("release", q1, "2026-07-10"), _line("notice", NOTICE, "2026-07-30")]
    assert [ln.text for ln in restated(pool, conflicts.every(pool), _cite, zh=False)] == [
        ROW, PROSE, q1, NOTICE]


def test_a_body_revising_its_own_figure_settles_the_conflict() -> None:
    revision = conflicts.find([_line("release", PROSE, "2026-07-10"),
                               _line("notice", NOTICE, "2026-07-30")])
    assert revision and conflicts.settled(revision[0])
    other_body = conflicts.find([_line("release", PROSE, "2026-07-10"),
                                 _line("survey", NOTICE, "2026-07-30", "research_report",
                                       "Ostvale Growers Survey")])
    assert other_body and other_body[0].reason == "credibility"
    assert conflicts.settled(other_body[0])
    peers = conflicts.find([_line("release", PROSE, "2026-07-10"),
                            _line("customs", NOTICE, "2026-07-30", publisher="Customs Office")])
    assert peers and peers[0].reason == "later" and not conflicts.settled(peers[0])


def test_a_body_named_after_its_country_still_names_the_country() -> None:
    """"Westmarch sold …, the Westmarch Wool Authority said" is about Westmarch: the
    publisher's whole name says nothing, the country's name does."""
    west = _line("west", "Westmarch sold 4.6 million bales of greasy wool in the second quarter "
                 "of 2026, the Westmarch Wool Authority said.", "2026-07-20",
                 publisher="Westmarch Wool Authority")
    ours = _line("ours", "Ostvale sold 4.2 million bales of greasy wool in the second quarter of "
                 "2026.", "2026-07-10")
    assert conflicts.find([west, ours]) == []



ZH_BOARD = "东湖羊毛协会"
ZH_RELEASE = "2026年6月，21μm细羊毛均价为6.40万元/吨，环比上涨0.30万元/吨（+4.9%）。"
ZH_NOTICE = "即：2026年6月21μm细羊毛均价由原公布的6.40万元/吨更正为6.12万元/吨。"
ZH_NEWS = "据东湖羊毛协会月报，6月21μm细羊毛均价为6.40万元/吨，创年内新高。"


def test_a_notice_that_names_the_figure_it_corrects_meets_the_first_release() -> None:
    """"由原公布的6.40万元/吨更正为6.12万元/吨" states the old figure beside the new one: the
    new one clashes with the release's (the "21μm" grade between the month and the price is
    no figure), and the notice, later, is preferred."""
    release = _line("release", ZH_RELEASE, "2026-07-10", "industry_association", ZH_BOARD)
    notice = _line("notice", ZH_NOTICE, "2026-07-30", "industry_association", ZH_BOARD)
    found = conflicts.every([release, notice])
    assert [(d.first[0].source_id, d.first[1].mantissa, d.second[1].mantissa)
            for d in found] == [("notice", "6.12", "6.4")]
    earlier = _line("notice", ZH_NOTICE, "2026-07-01", "industry_association", ZH_BOARD)
    assert conflicts.every([release, earlier]) == []  # a correction corrects what came before


def test_a_news_item_quoting_the_corrected_figure_is_outvoted_too() -> None:
    release = _line("release", ZH_RELEASE, "2026-07-10", "industry_association", ZH_BOARD)
    notice = _line("notice", ZH_NOTICE, "2026-07-30", "industry_association", ZH_BOARD)
    news = _line("news", ZH_NEWS, "2026-07-12", "news", "东湖日报")
    pool = [news, notice]  # the release itself not among them
    out = [ln.text for ln in restated(pool, conflicts.every([*pool, release]), _cite, zh=True)]
    assert out == ["据东湖羊毛协会月报，6月21μm细羊毛均价为6.12万元/吨"
                   "（更正前为6.40万元/吨 [notice]），创年内新高。", ZH_NOTICE]
    plain = _line("news", ZH_NEWS.replace("均价为", "均价据称为"), "2026-07-12", "news", "东湖日报")
    unnamed = _line("notice", "2026年6月21μm细羊毛均价为6.12万元/吨。", "2026-07-30",
                    "industry_association", ZH_BOARD)
    kept = [ln.text for ln in restated([plain, unnamed], conflicts.every([plain, unnamed]),
                                       _cite, zh=True)]
    assert kept == [plain.text, unnamed.text]  # a figure that says no correction corrects no one
