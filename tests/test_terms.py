"""Word-level checks that keep the search and the revisions on their facet."""

from __future__ import annotations

from research_core.text.terms import ask_apart, names_a_thing, speaks_to

ROOT = "How did heat pump sales and prices move across European countries in 2026?"
GERMAN_SALES = "What were heat pump sales in Germany in 2026?"
SIBLINGS = ["What were heat pump prices in Germany in 2026?",
            "What were heat pump sales in France in 2026?"]


def test_evidence_revises_only_the_part_of_its_own_facet() -> None:
    others = [ROOT, *SIBLINGS]
    assert speaks_to("Heat pump sales in Germany rose 8% to 42,000 units in Q3 2026.",
                     GERMAN_SALES, others)
    assert not speaks_to("Heat pump prices in Germany fell to 14,600 euros.", GERMAN_SALES,
                         others)
    assert not speaks_to("Heat pump sales in France rose 3% to 61,000 units.", GERMAN_SALES,
                         others)


def test_a_correction_speaks_to_the_figures_it_corrects() -> None:
    question = "What were heat pump sales figures?"
    others = ["How did heat pump sales and prices move in 2026?",
              "What were heat pump prices?"]
    assert speaks_to("Heat pump sales figures for September 2026 were corrected to 209,000 "
                     "units.", question, others)
    assert speaks_to("Sales figure revised", question, others)  # singular and plural alike


def test_queries_apart_differ_in_words_both_ways() -> None:
    assert ask_apart("heat pump sales Germany", "heat pump prices Germany")
    assert not ask_apart("heat pump sales in 2026", "heat pump sales 2026")
    assert not ask_apart("heat pump sales", "heat pump sales figures 2026")


def test_only_chinese_nouns_name_things_a_question_asks_about() -> None:
    assert all(names_a_thing(w) for w in ["铜箔", "匈牙利", "加工费", "供需"])
    assert not any(names_a_thing(w) for w in ["这块", "深挖", "一个月"])
