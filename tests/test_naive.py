"""The naive baseline on a tiny beekeeping corpus: figure sentences round robin from the kept
sources in score order, each cited, cut at the length asked; graded like any answer."""

from __future__ import annotations

import datetime as dt

from research_core.evaluation.grading import Answer, grade
from research_core.evaluation.naive import (
    Page,
    figure_sentences,
    naive_answer,
    pages,
    ranked_sources,
    round_robin,
)
from research_core.evaluation.suite import Check, Requirement
from research_core.loop.memory.evidence import Evidence

HIVES = ("Apiary census. Colonies in Vellmark numbered 41,200 in spring 2026. Most keepers are "
         "hobbyists.\nWinter losses were 18.5% of colonies, down from 23%.")
HONEY = "Honey yields averaged 21 kg per hive in 2026! Prices held. 蜂蜜均价为每公斤96元。好。"
WAX = "Beeswax is a by-product of honey harvests."


def evidence(n: int, source_id: str, score: float, text: str = "snippet 1") -> Evidence:
    return Evidence(f"E{n}", "N1", "Q1", source_id, source_id, f"https://b.example/{source_id}",
                    dt.date(2026, 9, 1), "news", source_id, text, score, 0.5, 1.0, score, "",
                    True)


def test_figure_sentences_are_the_sentences_with_a_digit() -> None:
    assert figure_sentences(HIVES) == ["Colonies in Vellmark numbered 41,200 in spring 2026.",
                                       "Winter losses were 18.5% of colonies, down from 23%."]
    assert figure_sentences(HONEY) == ["Honey yields averaged 21 kg per hive in 2026!",
                                       "蜂蜜均价为每公斤96元。"]
    assert figure_sentences(WAX) == []


def test_sources_rank_by_their_best_score_and_read_the_corpus_page() -> None:
    kept = [evidence(1, "hives", 0.6), evidence(2, "honey", 0.9), evidence(3, "hives", 0.7),
            evidence(4, "web-only", 0.8, "Swarms rose 12% in May. No figure here.")]
    assert ranked_sources(kept) == ["honey", "web-only", "hives"]
    found = pages(kept, {"hives": HIVES, "honey": HONEY})
    assert found == [Page("honey", HONEY), Page("web-only", kept[3].text), Page("hives", HIVES)]


def test_round_robin_takes_one_item_from_each_column_in_turn() -> None:
    assert list(round_robin([["a1", "a2", "a3"], [], ["c1"]])) == [
        (0, "a1"), (2, "c1"), (0, "a2"), (0, "a3")]


def test_the_answer_cites_each_sentence_and_is_cut_at_the_length() -> None:
    sources = [Page("honey", HONEY), Page("wax", WAX), Page("hives", HIVES)]
    whole = naive_answer(sources, 10_000)
    assert whole.text.splitlines() == [
        "Honey yields averaged 21 kg per hive in 2026! [1]",
        "Colonies in Vellmark numbered 41,200 in spring 2026. [3]",
        "蜂蜜均价为每公斤96元。 [1]",
        "Winter losses were 18.5% of colonies, down from 23%. [3]"]
    assert whole.cited_ids() == {"honey", "hives"}
    first_line = len("Honey yields averaged 21 kg per hive in 2026! [1]")
    cut = naive_answer(sources, first_line + 20)
    assert len(cut.text) == first_line + 20 and cut.cited_ids() == {"honey"}
    assert naive_answer(sources, first_line - 1).cited_ids() == frozenset()  # "[1" is cut
    assert naive_answer(sources, 0).text == ""


def test_the_naive_answer_is_graded_like_any_answer() -> None:
    sources = [Page("honey", HONEY), Page("hives", HIVES)]
    losses = Requirement("R1", "winter losses, cited", (
        Check("mentions_number", ("18.5%",)), Check("cites_any", ("hives",))))
    long, short = naive_answer(sources, 400), naive_answer(sources, 120)
    assert [g.passed for g in grade(Answer(long.text, long.cited_ids()), [losses])] == [True]
    assert [g.passed for g in grade(Answer(short.text, short.cited_ids()), [losses])] == [False]
