"""Choosing sentences for a question: the most similar first (a sentence with figures and a
credible source ranks a little higher), none that repeats what is already chosen anywhere in
the answer: the same sentence, nearly the same words, or the same figures on the same topic
in other words (three outlets rewriting one release), or two telling figures in common ("fell
8.0% to 474,000 units" said twice)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from research_core.loop.memory.pool import Line, key
from research_core.protocols import Similarity
from research_core.text.figures import figure_keys, figures_in, measured
from research_core.text.periods import latest_stated
from research_core.text.terms import overlap, terms

FIGURE_BONUS = 0.1
CREDIBILITY_WEIGHT = 0.1
TERMS_WEIGHT = 0.15  # of the question's terms that the line, its heading and title name
SAME_WORDS = 0.6  # term Jaccard above which two sentences say the same
SAME_MEANING = 0.9  # embedder similarity above which two sentences say the same
SAME_TOPIC = 0.3  # term Jaccard above which equal figures mean the same statement
SAME_FIGURES = 2  # telling figures two sentences share when they make the same statement
LATEST_BONUS = 0.1
KEEP_SHARE = 0.55  # a sentence must score at least this share of the best one
MIN_SIMILARITY = 0.12
SOURCE_MOST = 4  # sentences of one source in one answer section


@dataclass
class Picker:
    """Chooses sentences for one answer; remembers every sentence chosen (and those `used`
    before, e.g. by other published parts) so that none is said twice."""

    similarity: Similarity
    chosen: list[str] = field(default_factory=list)

    def remember(self, texts: Iterable[str]) -> None:
        self.chosen.extend(t for t in texts if key(t))

    async def pick(self, question: str, lines: list[Line], most: int,
                   figures_first: bool = False, latest: bool = False,
                   per_source: int = SOURCE_MOST) -> list[Line]:
        """Up to `most` lines for `question`, the best first (a page heading's second only after
        every heading's first), none redundant, at most
        `per_source` of one source (`latest`: those on the latest period the lines state rank
        a little higher)."""
        if most <= 0:
            return []
        good = await self.ranked(question, lines, figures_first, latest)
        taken: list[Line] = []
        for line in _headings_spread(good):
            if len(taken) >= most:
                break
            if sum(t.source_id == line.source_id for t in taken) >= per_source:
                continue  # one source's table does not crowd out the others
            if not self._said(line.text, await self._similarities(line.text)):
                taken.append(line)
                self.chosen.append(line.text)
        return taken

    async def ranked(self, question: str, lines: list[Line], figures_first: bool = False,
                     latest: bool = False) -> list[Line]:
        """The lines not said yet that score near the best, best first."""
        fresh = [ln for ln in lines if not self._said(ln.text, None)]
        if not fresh:
            return []
        scores = await self.scores(question, fresh, figures_first)
        if latest:
            scores = [s + b for s, b in zip(scores, _latest_bonus(fresh), strict=True)]
        best = max(scores)
        ranked = sorted(zip(scores, range(len(fresh)), fresh, strict=True), reverse=True)
        return [line for score, _, line in ranked
                if score >= max(MIN_SIMILARITY, KEEP_SHARE * best)]

    async def take(self, line: Line) -> bool:
        """Choose `line` unless it repeats a chosen sentence; whether it was chosen."""
        if self._said(line.text, await self._similarities(line.text)):
            return False
        self.chosen.append(line.text)
        return True

    async def scores(self, question: str, lines: list[Line], figures_first: bool) -> list[float]:
        """Similarity to `question`, a little more for a credible source, for the share of
        the question's terms the sentence, its heading and its source's title name (the
        full-text half: the bundled embedder scores a field's sentences nearly alike) and for
        a sentence that states a measure (a percentage, an amount; not a date)."""
        contexts = [_in_context(ln) for ln in lines]
        sims = (await self.similarity.matrix([question], contexts))[0]
        bonus = FIGURE_BONUS * (2 if figures_first else 1)
        return [s + (bonus if states_measure(ln.text) else 0.0)
                + CREDIBILITY_WEIGHT * ln.evidence.credibility
                + TERMS_WEIGHT * overlap(question, f"{ln.evidence.title} {context}")
                for s, ln, context in zip(sims, lines, contexts, strict=True)]

    async def _similarities(self, text: str) -> list[float]:
        if not self.chosen:
            return []
        return list((await self.similarity.matrix([text], self.chosen))[0])

    def _said(self, text: str, similar: list[float] | None) -> bool:
        """Whether `text` repeats a chosen sentence (`similar`: its embedder similarity to
        each, when known). Two sentences that state different telling figures make different
        statements, however alike their words (two rows of one table)."""
        mine, figures, told = set(terms(text)), figure_keys(text), telling(text)
        for i, other in enumerate(self.chosen):
            if key(other) == key(text):
                return True
            theirs_told = telling(other)
            if told and theirs_told and not told & theirs_told:
                continue
            if similar is not None and similar[i] >= SAME_MEANING:
                return True
            theirs = set(terms(other))
            jaccard = len(mine & theirs) / max(1, len(mine | theirs))
            if jaccard >= SAME_WORDS or (figures and len(figures) >= 2 and jaccard >= SAME_TOPIC
                                         and figures <= figure_keys(other)):
                return True
            if len(told & theirs_told) >= SAME_FIGURES:
                return True
        return False


def _in_context(line: Line) -> str:
    """A sentence with the page heading it stands under, which often names what the sentence
    leaves out ("Why the two wools diverged. A drought that hit only the fine-wool flocks.")."""
    return f"{line.heading} {line.text}" if line.heading else line.text


def _latest_bonus(lines: list[Line]) -> list[float]:
    """LATEST_BONUS for each line that gives the latest month or quarter any line gives."""
    stated = [latest_stated(ln.text, ln.evidence.published) for ln in lines]
    newest = max(stated, default="")
    return [LATEST_BONUS if k and k == newest else 0.0 for k in stated]


def _headings_spread(lines: list[Line]) -> list[Line]:
    """The lines in their order, except that a second line under one page heading ("Why the
    two wools diverged Fibre mix.") waits until every heading has had its first: three
    reasons a page gives are three lines, not one reason said three ways."""
    first: list[Line] = []
    later: list[Line] = []
    seen: set[tuple[str, str]] = set()
    for line in lines:
        place = (line.source_id, line.heading)
        (later if line.heading and place in seen else first).append(line)
        seen.add(place)
    return first + later


def states_measure(text: str) -> bool:
    """Whether a sentence states a measure: a telling figure, or a figure with its unit
    ("9.8小时", "31.5 hours"); a date ("12 January 2027", "9月") or a year is none."""
    return bool(telling(text)) or measured(text)


def telling(text: str) -> set[tuple[str, bool]]:
    """The figures that identify a statement: percentages and numbers of 100 or more that
    are not years ("474,000 units", "8.0%"), not "14 markets" or "2026"."""
    return {f.key for f in figures_in(text) if f.percent or (
        f.amount >= 100 and not (f.value.isdigit() and 1900 <= int(f.value) <= 2100
                                 and not f.unit))}
