"""A question's clauses (`research_core.text.clauses`) are cut at punctuation and plain
coordinators only; a list of single names stays one clause; the topic is the clause that
names the most. Which clause is researched is the evidence's choice
(tests/test_decomposition.py)."""

from __future__ import annotations

from research_core.text.clauses import read, without_mentions


def test_clauses_are_cut_at_punctuation_and_coordinators() -> None:
    reading = read("@RED 各区出口多少袋、同比怎么变，为什么？要数据")
    assert reading.clauses == ("各区出口多少袋、同比怎么变", "为什么", "要数据")  # "why" asks
    reading = read("we're on 7.2 in prod — does the relicensing hit us, and is the fork "
                   "a real option? need facts + links for the arch review")
    assert reading.clauses == ("we're on 7.2 in prod", "does the relicensing hit us",
                               "is the fork a real option",
                               "need facts + links for the arch review")
    assert reading.topic == "is the fork a real option"  # of the sentence that asks


def test_a_list_of_single_names_is_one_clause() -> None:
    reading = read("How did ridership and punctuality move in 2026?")
    assert reading.clauses == ("How did ridership and punctuality move in 2026",)
    split = read("Why did ferry fares rise in 2026 and how did passenger numbers respond?")
    assert split.clauses == ("Why did ferry fares rise in 2026",
                             "how did passenger numbers respond")


def test_a_decimal_point_cuts_nothing_and_mentions_go() -> None:
    assert read("Is release 7.2 hit by the licence change?").clauses == (
        "Is release 7.2 hit by the licence change",)
    assert without_mentions("<@U012AB> hi   @RED there") == "hi there"
    assert read("hi?").clauses == () and read("hi?").topic == "hi?"
