"""What a reader reads: texts with their citations joined in reading order and cut at the
budget (a citation counts only within it), and the paraphrase gap's arithmetic."""

from __future__ import annotations

import re

from research_core.evaluation.gap import Gap, gap, total
from research_core.evaluation.reading import Cited, join, numbered, without_ids


def test_numbered_markers_cite_where_they_close() -> None:
    text = "Hives rose [1]. Wax fell [2, 3]. Unknown [9]."
    cited = numbered(text, {1: "hives", 2: "wax", 3: "honey"})
    assert cited.cited_ids() == {"hives", "wax", "honey"}
    assert cited.marks[0] == (text.index("[1]") + 3, "hives")
    assert cited.cut(text.index("[1]") + 2).cited_ids() == frozenset()
    assert cited.cut(text.index("[1]") + 3).cited_ids() == {"hives"}


def test_source_ids_become_spaces_and_cite_where_they_stood() -> None:
    ids = re.compile(r"(?<![\w-])(?:bee-census|wax-news)(?![\w-])")
    cited = without_ids("Colonies 41,200 (bee-census); wax flat (wax-news).", ids)
    assert cited.text == "Colonies 41,200 ( ); wax flat ( )."
    assert cited.marks == ((18, "bee-census"), (32, "wax-news"))
    assert without_ids("no ids", None) == Cited("no ids")


def test_join_keeps_each_part_in_order_and_the_cut_drops_what_lies_past_it() -> None:
    first = numbered("Colonies numbered 41,200 [1].", {1: "census"})
    second = numbered("Losses were 18.5% [1].", {1: "losses"})
    whole = join([first, second])
    assert whole.text == first.text + "\n\n" + second.text
    assert whole.cited_ids() == {"census", "losses"}
    read = whole.cut(len(first.text) + 5)
    assert read.text == first.text + "\n\nLos" and read.cited_ids() == {"census"}
    assert whole.cut(10_000) is whole


def test_the_gap_counts_paraphrases_per_run_of_the_original() -> None:
    hives = gap([(2, 3), (3, 3)], [(2, 3), (1, 3), (3, 3), (2, 3)])
    assert hives == Gap(5, 6, 4.0)
    assert hives.line() == "paraphrase gap: originals 5/6, paraphrases 4/6 per run, -20%"
    wax = gap([(0, 2)], [(1, 2), (0, 2)])
    assert wax is not None and wax.line().endswith("paraphrases 0.5/2 per run, n/a")
    assert gap([(1, 2)], []) is None
    summed = total([hives, wax])
    assert summed == Gap(5, 8, 4.5) and summed.line().endswith("-10%")
    assert total([]) is None
    assert Gap(2, 2, 2.0).line().endswith(", 0%")
