"""Choosing an answer's sentences when the embedder cannot tell them apart: the bundled one
scores most sentences of a field's pages within a few hundredths of each other, so the words
the question shares with a sentence, its heading and its source's title break the tie (the
full-text half of relevance). Fixtures: an olive oil market."""

from __future__ import annotations

import datetime as dt

from research_core.loop.answering.select import Picker
from research_core.loop.memory.evidence import Evidence, credibility
from research_core.loop.memory.pool import Line


class FlatSimilarity:
    """An embedder that finds every pair of texts equally similar."""

    async def matrix(self, rows: list[str], cols: list[str]) -> list[list[float]]:
        return [[0.3 for _ in cols] for _ in rows]


def _evidence(n: int, source_id: str, title: str, text: str) -> Evidence:
    return Evidence(f"E{n}", "N1", "Q1", source_id, title, f"https://x.example/{source_id}",
                    dt.date(2026, 10, 20), "research_report", source_id, text, 0.8,
                    credibility("research_report"), 1.0, 0.8, "", True)


OUTPUT = _evidence(1, "varella-output", "Varella olive oil output, third quarter 2026",
                   "Varella's mills pressed 41,200 tonnes of olive oil in the third quarter.")
MILLS = _evidence(2, "varella-mills", "Two mills compared: scale against premiums",
                  "Mill A ran at 88% of its capacity, Mill B at 52%.")


async def test_the_question_s_words_break_an_embedder_tie() -> None:
    question = "What was Varella's latest quarterly olive oil output?"
    lines = [Line(OUTPUT.text, OUTPUT), Line(MILLS.text, MILLS)]
    for order in (lines, lines[::-1]):
        chosen = await Picker(FlatSimilarity()).pick([question], order, 1)
        assert [ln.source_id for ln in chosen] == ["varella-output"]
