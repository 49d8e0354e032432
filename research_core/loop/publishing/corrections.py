"""Corrections found by what they say: a sentence of a later source that gives another value
for a figure a published part states revises that part.

A later sentence re-values a stated figure where the conflict detector (`text.conflicts`)
finds the two at odds: the same measure (their words and names), the same period (a quarter,
a month) and the same unit, different figures and none shared, a correcting sentence's quote
of the old figure beside its new one left out. A body's later sentence that quotes its own
figure beside a new value of it (a corrected table's row) re-values it too. Between two
scripts, whose unit words never match, the figures compare by their unit's script
(`one_unit`) and by the periods they are clearly written for. Only a figure the published part
states counts. A neighbouring month's value of the same series, a range quoted again, a figure
of the year before or a share of another thing re-values nothing: a run once spent all of a
part's bounded revisions on such pairs and had none left for the correction that followed.
Of every later sentence that re-values the stated figure, the nearest to the stated one in
meaning and words is taken: the embedder's cosine similarity plus the share of shared terms
(both with their sources' titles), above a floor.

The later source must be published after the stated one (a newer release of the same series
supersedes an older one) and be about as credible. Two figures that a source gives to two
bodies side by side (`text.counts`) are two counts, not a correction. No cue word is read
here: a filing, an erratum or a revised release is found by the figure it changes, in either
language.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from research_core.loop.answering.ranking import in_context
from research_core.loop.memory.pool import Line
from research_core.protocols import Similarity
from research_core.text import conflicts
from research_core.text.conflicts import one_unit, unit_of, versions
from research_core.text.counts import two_counts
from research_core.text.dated import dated_figures
from research_core.text.figures import Figure, figures_in, states_figure, telling_figures
from research_core.text.periods import years_in
from research_core.text.terms import has_cjk, overlap

SAME_STATEMENT = 0.9  # cosine plus term overlap (0..2) above which two sentences say one thing
CREDIBILITY_SLACK = 0.1  # a correction may come from a source this much less credible


@dataclass(frozen=True)
class Correction:
    stated: Line  # the published sentence
    later: Line  # the sentence that gives its figure another value
    old: Figure | None = None  # the stated figure it re-values
    new: Figure | None = None  # the value it gives instead
    period: str = ""  # the period both are for, where the sentences name it


async def corrections(similarity: Similarity, stated: Sequence[Line], later: Sequence[Line],
                      shown: str = "", context: Sequence[Line] = ()) -> list[Correction]:
    """For each stated line, the later line that re-values its figure, if one does. `shown`:
    the published text, whose figures alone count (a stated line may hold more); `context`:
    further sentences at hand, where a source may give the two figures to two bodies."""
    pool = [*stated, *later, *context]
    found = {(i, j): change for i, s in enumerate(stated) for j, t in enumerate(later)
             if (change := _revalues(s, t, shown, pool)) is not None}
    if not found:
        return []
    left, right = [in_context(s) for s in stated], [in_context(t) for t in later]
    sims = await similarity.matrix(left, right)
    best: dict[int, tuple[float, Correction]] = {}
    for (i, j), (old, new, period) in found.items():
        score = sims[i][j] + overlap(left[i], right[j])
        if score >= SAME_STATEMENT and score > best.get(i, (0.0, None))[0]:
            best[i] = (score, Correction(stated[i], later[j], old, new, period))
    return [c for _, c in best.values()]


Change = tuple[Figure, Figure, str]  # the stated figure, its new value, their period


def _revalues(stated: Line, later: Line, shown: str, pool: Sequence[Line]) -> Change | None:
    """How `later`, from a later and about as credible source, re-values one of the figures
    `stated` gives (and `shown` states, where given); None where it does not."""
    if later.source_id == stated.source_id or not _newer(later, stated):
        return None
    if later.credibility < stated.credibility - CREDIBILITY_SLACK:
        return None
    if _other_years(stated.text, later.text):
        return None
    for old, new, period in _changes(stated, later):
        if shown and not states_figure(shown, old):
            continue
        if two_counts(stated, old, later, new, pool) is not None:
            continue  # two bodies' counts, set side by side by a source
        return old, new, period
    return None


def _changes(stated: Line, later: Line) -> Iterator[Change]:
    """The stated figures the later sentence gives another value, each with it."""
    if has_cjk(stated.text) == has_cjk(later.text):
        for d in conflicts.every([stated, later]):
            mine, theirs = (d.first, d.second) if d.first[0] is stated else (d.second, d.first)
            yield mine[1], theirs[1], d.period
        yield from _restated(stated, later)
        return
    yield from _across_scripts(stated, later)


def _restated(stated: Line, later: Line) -> Iterator[Change]:
    """A body's later sentence that quotes its own earlier figure beside a new value of it
    (a corrected table's row: the figure first published, then the corrected one): the new
    value of one unit, close to the old, not stated before, for the same period where both
    are written for one."""
    own = stated.publisher.strip()
    if not own or own != later.publisher.strip() or not conflicts.same_measure(stated, later):
        return
    mine, theirs = _periods(stated), _periods(later)
    for a in telling_figures(stated.text):
        if a.percent or not states_figure(later.text, a):
            continue
        for b in figures_in(later.text):
            if b.percent or unit_of(a) != unit_of(b) or not _close(a, b) or \
                    states_figure(stated.text, b):
                continue
            pa, pb = mine.get(a.text), theirs.get(b.text)
            if pa and pb and pa != pb:
                continue
            yield a, b, pa or pb or ""


def _across_scripts(stated: Line, later: Line) -> Iterator[Change]:
    """Between two scripts, whose unit words never match: two close figures of one unit as
    far as words tell, not percentages, the new one not stated already, for one period
    where both sentences write the period clearly (one of them none: their years decide)."""
    mine = _periods(stated)
    theirs = _periods(later)
    for a in telling_figures(stated.text):
        for b in telling_figures(later.text):
            if a.percent or b.percent or not _close(a, b) or states_figure(stated.text, b):
                continue
            pa, pb = mine.get(a.text), theirs.get(b.text)
            if pa and pb and pa != pb:
                continue
            yield a, b, pa or pb or ""


def _periods(line: Line) -> dict[str, str]:
    """The period each figure of the sentence is clearly written for, by its text."""
    return {f.text: period for period, f, _ in dated_figures(line.text, line.published)}


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
