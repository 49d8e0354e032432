"""A chosen sentence's figures stated by a more credible source as well: that source is cited
beside it. A news report of an official table is chosen for its wording (it is in the
question's language, it says "up 12.4% on the year"); the table behind it, in either
language, is what a reader should be able to open. Figures are language-neutral ("86,200" =
"8.62万"), so the backing is found by what the two state, not by their words."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from research_core.loop.answering.select import telling
from research_core.loop.memory.evidence import Evidence
from research_core.loop.memory.pool import Line
from research_core.text.figures import figure_keys

SHARED_LEAST = 2  # telling figures two sentences share before one backs the other: one is chance

Backing = Callable[[Line], Evidence | None]


def backing(pool: Iterable[Line]) -> Backing:
    """The most credible other source whose sentence states at least half of a line's telling
    figures (two at least), where it is more credible than the line's own; None when none."""
    stated = [(figure_keys(ln.text), ln.evidence) for ln in pool]

    def backer(line: Line) -> Evidence | None:
        mine = telling(line.text)
        least = max(SHARED_LEAST, (len(mine) + 1) // 2)
        if len(mine) < least:
            return None
        found = [e for keys, e in stated if e.credibility > line.evidence.credibility
                 and e.source_id != line.evidence.source_id and len(mine & keys) >= least]
        return max(found, key=lambda e: e.credibility, default=None)

    return backer


def no_backing(line: Line) -> Evidence | None:
    return None
