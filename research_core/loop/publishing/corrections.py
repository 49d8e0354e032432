"""Corrections found by what they say: a sentence of a later source that gives another value
for a figure a published part states revises that part.

Two sentences state the same figure when they give figures of one unit (or one magnitude
word; a unit word of another script compares with any) within SAME_MEASURE_RATIO of each
other (`text.conflicts`), name one year where both name years, and, of every later sentence
that re-values the stated figure, the later sentence is the nearest to the stated one in
meaning and words: the embedder's cosine similarity plus the share of shared terms (both with
their sources' titles), above a floor. The later source must be published after the stated
one (a newer release of the same series supersedes an older one) and be about as credible. No
cue word is read: a filing, an erratum or a revised release is found by the figure it
changes, in either language.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from research_core.loop.answering.ranking import in_context
from research_core.loop.memory.pool import Line
from research_core.protocols import Similarity
from research_core.text.conflicts import one_unit, versions
from research_core.text.figures import Figure, telling_figures
from research_core.text.periods import years_in
from research_core.text.terms import overlap

SAME_STATEMENT = 0.9  # cosine plus term overlap (0..2) above which two sentences say one thing
CREDIBILITY_SLACK = 0.1  # a correction may come from a source this much less credible


@dataclass(frozen=True)
class Correction:
    stated: Line  # the published sentence
    later: Line  # the sentence that gives its figure another value


async def corrections(similarity: Similarity, stated: Sequence[Line],
                      later: Sequence[Line]) -> list[Correction]:
    """For each stated line, the later line that re-values its figure, if one does."""
    pairs = [(i, j) for i, s in enumerate(stated) for j, t in enumerate(later)
             if _revalues(s, t)]
    if not pairs:
        return []
    left, right = [in_context(s) for s in stated], [in_context(t) for t in later]
    sims = await similarity.matrix(left, right)
    best: dict[int, tuple[float, Correction]] = {}
    for i, j in pairs:
        score = sims[i][j] + overlap(left[i], right[j])
        if score >= SAME_STATEMENT and score > best.get(i, (0.0, None))[0]:
            best[i] = (score, Correction(stated[i], later[j]))
    return [c for _, c in best.values()]


def _revalues(stated: Line, later: Line) -> bool:
    """Whether `later`, from a later and about as credible source, gives another value in the
    same unit for one of the telling figures `stated` gives."""
    if later.source_id == stated.source_id or not _newer(later, stated):
        return False
    if later.credibility < stated.credibility - CREDIBILITY_SLACK:
        return False
    if _other_years(stated.text, later.text):
        return False
    mine = telling_figures(stated.text)
    theirs = telling_figures(later.text)  # an erratum may quote the old figure beside it
    return any(_close(a, b) for a in mine for b in theirs)


def _other_years(stated: str, later: str) -> bool:
    """Whether both sentences name years and none is the same: a figure of 2023 does not
    revise one of 2022, however alike their sentences."""
    mine, theirs = years_in(stated), years_in(later)
    return bool(mine and theirs and not mine & theirs)


def _newer(later: Line, stated: Line) -> bool:
    return bool(later.published and stated.published and later.published > stated.published)


def _close(a: Figure, b: Figure) -> bool:
    """Two figures of one unit, not equal, that may be two versions of one measure
    (`research_core.text.conflicts.versions`)."""
    if not one_unit(a, b) or a.percent != b.percent or a.key == b.key:
        return False
    return versions(a, b)
