"""The one period grammar (research_core/text/periods.py), shared by the answer (which figures
are of one period), the clause reader (a period phrase is no list, and is taken out of a topic)
and the last-month facet (where a span ends). Ferry passenger counts and rainfall, fields no
evaluation suite uses."""

from __future__ import annotations

import datetime as dt

from research_core.loop.planning import subquestions
from research_core.text import periods
from research_core.text.asking import read_question

LATE = dt.date(2026, 11, 5)


def test_periods_named_in_a_sentence_are_comparable_keys() -> None:
    text = ("Ferry passengers rose to 1.2 million in Q3 2026, from 1.1 million in the second "
            "quarter of 2026; H1 2026 was weaker, and September 2026 set a record.")
    assert periods.periods_in(text) == ["2026-Q3", "2026-Q2", "2026-H1", "2026-09"]
    assert periods.periods_in("2026年第三季度渡轮客运量为120万人次，上半年偏弱。") == ["2026-Q3"]
    assert periods.periods_in("2026年上半年降雨偏少，9月降雨量为84毫米。", LATE) == [
        "2026-H1", "2026-09"]
    # a month without its year is the latest such month by the publish date
    assert periods.periods_in("Rainfall in October was 91 mm.", LATE) == ["2026-10"]
    assert periods.periods_in("12月降雨量为40毫米。", dt.date(2027, 1, 10)) == ["2026-12"]
    # "Sept 2026", "Sep. 3, 2026" and "September 2026" are one month
    assert {periods.periods_in(t)[0] for t in ("Sept 2026", "Sep. 3, 2026",
                                               "September 2026")} == {"2026-09"}
    assert periods.periods_in("Passengers: 1.2 million in 2026.") == ["2026"]
    assert periods.periods_in("The ferry may sail; to march on.", LATE) == []


def test_the_latest_period_stated_is_not_after_publication() -> None:
    text = "Passengers were 1.1 million in Q2 2026 and are forecast at 1.3 million in Q4 2026."
    assert periods.latest_stated(text, dt.date(2026, 8, 1)) == "2026-06"
    assert periods.time_key("Rainfall in H1 2026 was low.", None) == "2026-06"
    assert periods.time_key("Rainfall was low.", None) == "9999"


def test_a_question_period_phrase_is_found_and_taken_out() -> None:
    for phrase in ("in Q3 2026", "between 2025 and 2026", "from March 2025 to October 2026",
                   "over the past year", "during the third quarter of 2026", "this year",
                   "2025年11月到2026年10月", "近一年", "2026年三季度", "2026年上半年"):
        assert periods.names_period(f"ferry passengers {phrase}"), phrase
    assert not periods.names_period("North, Central and South")
    assert not periods.names_period("the Q3 ferry timetable")  # a quarter without its year
    assert " ".join(periods.without_periods(
        "How did ferry passengers change in Q3 2026").split()) == "How did ferry passengers change"
    assert periods.without_periods("近一年渡轮客运量怎么变的") == "渡轮客运量怎么变的"


def test_the_month_a_span_ends_in_and_its_label() -> None:
    assert periods.span_end("Passengers from November 2025 to October 2026?") == "2026-10"
    assert periods.span_end("25年11月到26年10月的降雨量") == "2026-10"
    assert periods.span_end("2025年11月至2026年9月的降雨量") == "2026-09"
    assert periods.span_end("How did passengers move in 2026?") is None
    assert periods.month_label("2026-10", zh=False) == "October 2026"
    assert periods.month_label("2026-03", zh=True) == "2026年3月"


def test_a_period_sub_question_asks_the_topic_for_that_period() -> None:
    assert periods.asks_latest("What's the latest count?") and periods.asks_latest("目前多少？")
    assert not periods.asks_latest("How did it move in 2025?")
    asked = read_question("How did ferry passengers change over the past year?")
    assert subquestions.for_period(asked, "October 2026") == \
        "How did ferry passengers change in October 2026?"


