"""Text helpers that keep figures, dates and region words from deciding relevance: figures
out of a sentence before it is compared with a question (the bundled embedder scores a run of
figures far from the words around it), dates that are no measure, period codes that are no
names, and region words ("North") that are no proper name. Fixtures: a wool market."""

from __future__ import annotations

from research_core.loop.gathering.across import figures_query, stating
from research_core.loop.memory.evidence import Evidence
from research_core.loop.planning.asked import known_names
from research_core.protocols import SearchHit, TimeRange
from research_core.search.tool import QueryResult
from research_core.text.asking import read_question
from research_core.text.figures import (
    Figure,
    figures_in,
    measured,
    rounding_of,
    states_figure,
    states_measure,
    without_figures,
    written_for,
)
from research_core.text.names import names_in
from research_core.text.periods import is_period_code


def test_figures_come_out_and_their_units_stay() -> None:
    text = ("In the second quarter of 2026 Ostvale sold 4,210 thousand kg of greasy wool "
            "(4.21 million kg), up 3.4% on a year earlier.")
    assert without_figures(text) == ("In the second quarter of Ostvale sold kg of greasy "
                                     "wool ( kg), up on a year earlier.")
    assert without_figures("羊毛均价为8.62万元/吨，环比下跌3.5%") == "羊毛均价为 元/吨 ，环比下跌"
    assert without_figures("no figures here") == "no figures here"


def test_a_date_is_no_measure_and_a_unit_or_a_share_is() -> None:
    assert not measured("The next auction report is due on 14 February 2027.")
    assert not states_measure("The next auction report is due on 14 February 2027.")
    assert states_measure("Buyers waited 9.8 hours on average at the wool store.")
    assert states_measure("Clean wool prices rose 6.1% in the quarter.")
    assert states_measure("羊毛拍卖平均等待9.8小时。")


def test_period_codes_are_not_names() -> None:
    assert all(is_period_code(w) for w in ("Q3", "h1", "Q4 2026", "FY2026"))
    assert not any(is_period_code(w) for w in ("Q7", "Ostvale", "R290", "HQ"))
    question = "How did Ostvale's wool auctions do in Q3 — North and South: volume, prices?"
    assert names_in(question) == ["Ostvale", "North", "South"]


def test_only_proper_names_tell_a_source_about_another_country_apart() -> None:
    """"North" and "South" name regions of any country's tables; "Ostvale" is written in
    capitals wherever it stands. Only the proper name decides which sources are on the
    question's country, where the sources know it."""
    question = "How did Ostvale's wool auctions do in Q3 — North and South: volume, prices?"
    texts = ["Ostvale wool auctions, Q3: the North sold 1,200 bales, the South 900.",
             "Ostvale's northern stores cleared their stock before the southern ones.",
             "Westmarch wool: North 3,100 bales, South 2,050 bales in Q3."]
    assert known_names(read_question(question), texts, 2) == ["ostvale"]
    capitals_only = ["North and South sold wool.", "The North and the South held auctions."]
    assert known_names(read_question(question), capitals_only, 2) == ["north", "south"]


def test_a_part_states_a_figure_in_any_of_its_forms() -> None:
    """A correction of "4,210 thousand kg" revises a part that wrote it "4.21 million kg" or
    as a table row's "4,210" under a "(thousand kg)" heading; not one that only has a 12."""
    corrected = figures_in("sold 4,210 thousand kg in the quarter")[0]
    assert states_figure("Ostvale sold 4.21 million kg of greasy wool.", corrected)
    assert states_figure("Sales (thousand kg): Q1 3,770, Q2 4,210.", corrected)
    assert not states_figure("Sales (thousand kg): Q1 3,770, Q2 4,190.", corrected)
    small = figures_in("12 thousand bales")[0]
    assert not states_figure("The board held 12 auctions.", small)


def _kept(source_id: str, text: str) -> Evidence:
    return Evidence(f"E{source_id}", "N1", "Q1", source_id, source_id, "https://x.example",
                    None, "news", source_id, text, 0.9, 0.65, 1.0, 0.8, "", True)


def test_figures_cross_languages_in_the_other_language_s_notation() -> None:
    """Must-hold 4: an English question whose kept sources are all English asks the Chinese
    pages for the figures those sources state, as Chinese writes them; once a Chinese source
    is kept it asks no more. The figures two sources state come first."""
    assert [written_for(f, True) for f in figures_in("86,200 yuan, 4,700 yuan, 3.2%")] == [
        "8.62万", "", ""]
    assert [written_for(f, False) for f in figures_in("均价8.62万元/吨，1.5亿元")] == [
        "86,200", "150,000,000"]
    english = [_kept("wire", "Fine wool averaged 52,400 yuan a tonne; coarse wool 31,800."),
               _kept("daily", "Coarse wool slipped to 31,800 yuan a tonne in October.")]
    question = "Why did fine and coarse wool prices part ways?"
    assert figures_query(read_question(question), english) == "3.18万 5.24万"
    chinese = _kept("board", "10月细羊毛均价5.24万元/吨。")
    assert figures_query(read_question(question), [*english, chinese]) == ""
    assert figures_query(read_question("细羊毛和粗羊毛价格为何分化？"), [chinese]) == "52,400"
    assert figures_query(read_question("细羊毛和粗羊毛价格为何分化？"), english) == ""


def test_a_figures_query_keeps_only_the_hits_that_state_one_of_its_figures() -> None:
    def hit(source_id: str, snippet: str) -> SearchHit:
        return SearchHit(source_id, "t", snippet, "u", None, "news", "p")

    found = [hit("table", "2026年9月销量8.62万台"), hit("other", "Sales rose in 2026."),
             hit("same", "Sales reached 86,200 units.")]
    words = QueryResult("heat pump sales", found, False, TimeRange())
    figures = QueryResult("8.62万 86,200", found, False, TimeRange())
    kept = stating([words, figures], "8.62万 86,200")
    assert [h.source_id for h in kept[0].hits] == ["table", "other", "same"]  # word query
    assert [h.source_id for h in kept[1].hits] == ["table", "same"]


def test_a_chinese_figure_with_digits_after_wan_is_one_figure() -> None:
    [figure] = figures_in("死亡人数修正为6万7873人")
    assert (figure.value, figure.unit, figure.text) == ("67873", "人", "6万7873")
    assert [f.value for f in figures_in("8.62万元/吨和6万人")] == ["86200", "60000"]


def test_a_rounded_figure_is_no_other_version_of_the_precise_one() -> None:
    def one(text: str) -> Figure:
        return figures_in(text)[0]
    assert rounding_of(one("11,600 deaths"), one("11,637 deaths"))
    assert rounding_of(one("1.16万人"), one("11,637 deaths"))
    assert not rounding_of(one("61,000 deaths"), one("61,672 deaths"))  # 672 is no rounding
    assert not rounding_of(one("120 deaths"), one("124 deaths"))  # "120" may be exact
    assert not rounding_of(one("8.34万元/吨"), one("7.33万元/吨"))
