"""The answer chosen by statistics (issue 42, items 3 and 4): BM25 and the embedder fused for
each sentence, the source's priors, maximal marginal relevance with budgeted selection, and a
correction found by the figure it changes. Real embedder, no mocks. Fixtures: a glassworks
town's furnace output, a field no evaluation suite uses."""

from __future__ import annotations

import datetime as dt
from collections import Counter

from research_core.loop.answering import ranking
from research_core.loop.answering.select import Picker
from research_core.loop.memory.evidence import Evidence, credibility
from research_core.loop.memory.pool import Line
from research_core.loop.publishing.corrections import corrections
from research_core.search import bm25
from tests.engine_run import default_similarity


def _line(n: int, source_id: str, source_type: str, text: str, published: str = "2026-10-20",
          title: str = "Glassworks bulletin") -> Line:
    evidence = Evidence(f"E{n}", "N1", "Q1", source_id, title, f"https://x.example/{source_id}",
                        dt.date.fromisoformat(published), source_type, source_id, text, 0.8,
                        credibility(source_type), 1.0, 0.8, "", True)
    return Line(text, evidence)


OUTPUT = _line(1, "guild-q3", "official_statistics",
               "Brennmark's furnaces melted 18,400 tonnes of glass in the third quarter of 2026.")
BOTTLES = _line(2, "guild-q3-b", "official_statistics",
                "Bottle glass made up 61% of the melt, flat glass the rest.")
ECHO = _line(3, "wire-q3", "news",
             "Brennmark's furnaces melted 18,400 tonnes of glass in Q3 2026, the guild said.")
BLOG = _line(4, "glass-blog", "blog",
             "Brennmark's furnaces melted a stunning 25,000 tonnes of glass in the third quarter!")
WEATHER = _line(5, "town-news", "news", "The town's spring fair drew a record crowd of visitors.")
QUESTION = "How much glass did Brennmark's furnaces melt in the third quarter of 2026?"


def test_bm25_scores_shared_words_and_weighs_rare_ones() -> None:
    docs = [Counter(bm25.words(t)) for t in ("glass furnace melt", "glass town fair",
                                             "glass glass glass")]
    scores = bm25.scores(Counter(bm25.words("furnace melt")), docs)
    assert scores[0] > 0 and scores[1] == scores[2] == 0.0
    assert bm25.scores(Counter(["x"]), []) == []


async def test_relevance_fuses_both_rankers_and_the_source_s_priors() -> None:
    lines = [OUTPUT, WEATHER, BLOG]
    scores = await ranking.relevance(default_similarity(), [QUESTION], lines)
    assert scores[0] == max(scores) and scores[1] < scores[0] / 2
    # the blog says as much in the same words, but a blog's word weighs less
    assert scores[2] < scores[0]


async def test_marginal_relevance_skips_a_restatement_and_keeps_a_new_figure() -> None:
    picker = Picker(default_similarity())
    chosen = await picker.pick([QUESTION], [OUTPUT, ECHO, BOTTLES, WEATHER], 3)
    texts = [ln.text for ln in chosen]
    assert texts[0] == OUTPUT.text
    assert ECHO.text not in texts  # the same figures on the same topic, said again
    assert BOTTLES.text in texts  # a figure not yet said
    assert await picker.pick([QUESTION], [OUTPUT, ECHO], 2) == []  # said once is enough


async def test_at_most_per_source_lines_of_one_source() -> None:
    rows = [_line(10 + i, "guild-table", "official_statistics",
                  f"Furnace {i} melted {1000 + 100 * i:,} tonnes of glass in the third quarter.")
            for i in range(5)]
    chosen = await Picker(default_similarity()).pick([QUESTION], rows, 5, per_source=2)
    assert len(chosen) == 2


ERRATUM = _line(6, "guild-erratum", "official_statistics",
                "Correction: Brennmark's furnaces melted 17,900 tonnes of glass in the third "
                "quarter of 2026, not 18,400 as first published.", published="2026-10-30")
OTHER_TOWN = _line(7, "ostmark-q3", "official_statistics",
                   "Ostmark's bakeries sold 17,500 loaves of rye bread in the third quarter.",
                   published="2026-10-30", title="Bakery bulletin")
OLD_ERRATUM = _line(8, "guild-old", "official_statistics", ERRATUM.text, published="2026-10-01")


async def test_a_later_sentence_that_revalues_a_stated_figure_corrects_it() -> None:
    found = await corrections(default_similarity(), [OUTPUT], [OTHER_TOWN, ERRATUM])
    assert [(c.stated.text, c.later.source_id) for c in found] == [(OUTPUT.text,
                                                                    "guild-erratum")]


async def test_no_correction_from_another_topic_an_older_source_or_a_blog() -> None:
    assert await corrections(default_similarity(), [OUTPUT], [OTHER_TOWN]) == []
    assert await corrections(default_similarity(), [OUTPUT], [OLD_ERRATUM]) == []
    later_blog = _line(9, "glass-blog", "blog", BLOG.text, published="2026-10-30")
    assert await corrections(default_similarity(), [OUTPUT], [later_blog]) == []


async def test_a_correction_in_the_other_language_revises_and_another_year_does_not() -> None:
    """"17,900吨" revises "18,400 tonnes" though the unit words differ in script; a figure
    of 2025 re-values nothing of 2026, however alike the sentences."""
    zh_erratum = _line(10, "guild-erratum-zh", "official_statistics",
                       "更正：Brennmark's furnaces 2026年第三季度熔制玻璃17,900吨，而非18,400吨。",
                       published="2026-10-30")
    found = await corrections(default_similarity(), [OUTPUT], [zh_erratum])
    assert [c.later.source_id for c in found] == ["guild-erratum-zh"]
    last_year = _line(11, "guild-2025", "official_statistics",
                      "Brennmark's furnaces melted 17,900 tonnes of glass in the third quarter "
                      "of 2025.", published="2026-10-30")
    assert await corrections(default_similarity(), [OUTPUT], [last_year]) == []
