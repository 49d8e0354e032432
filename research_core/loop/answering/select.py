"""Choosing sentences for a question: the most similar first (a sentence with figures and a
credible source ranks a little higher), none that repeats what is already chosen anywhere in
the answer: the same sentence, nearly the same words, or the same figures on the same topic
in other words (three outlets rewriting one release), or two telling figures in common ("fell
8.0% to 474,000 units" said twice)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from research_core.loop.answering.coverage import causal
from research_core.loop.answering.pool import Line, key
from research_core.loop.figures import figure_keys, figures_in
from research_core.protocols import Similarity
from research_core.terms import terms

FIGURE_BONUS = 0.1
CREDIBILITY_WEIGHT = 0.1
SAME_WORDS = 0.6  # term Jaccard above which two sentences say the same
SAME_MEANING = 0.9  # embedder similarity above which two sentences say the same
SAME_TOPIC = 0.3  # term Jaccard above which equal figures mean the same statement
SAME_FIGURES = 2  # telling figures two sentences share when they make the same statement
CAUSE_BONUS = 0.15
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
                   figures_first: bool = False, causes_first: bool = False) -> list[Line]:
        """Up to `most` lines for `question`, best first, none redundant."""
        fresh = [ln for ln in lines if not self._said(ln.text, None)]
        if not fresh or most <= 0:
            return []
        scores = await self.scores(question, fresh, figures_first)
        if causes_first:
            scores = [s + (CAUSE_BONUS if causal(ln.text) else 0.0)
                      for s, ln in zip(scores, fresh, strict=True)]
        best = max(scores)
        ranked = sorted(zip(scores, range(len(fresh)), fresh, strict=True), reverse=True)
        taken: list[Line] = []
        for score, _, line in ranked:
            if len(taken) >= most or score < max(MIN_SIMILARITY, KEEP_SHARE * best):
                break
            if sum(t.source_id == line.source_id for t in taken) >= SOURCE_MOST:
                continue  # one source's table does not crowd out the others
            close = await self._closest(line.text)
            if not self._said(line.text, close):
                taken.append(line)
                self.chosen.append(line.text)
        return taken

    async def scores(self, question: str, lines: list[Line], figures_first: bool) -> list[float]:
        sims = (await self.similarity.matrix([question], [ln.text for ln in lines]))[0]
        bonus = FIGURE_BONUS * (2 if figures_first else 1)
        return [s + (bonus if figure_keys(ln.text) else 0.0)
                + CREDIBILITY_WEIGHT * ln.evidence.credibility
                for s, ln in zip(sims, lines, strict=True)]

    async def _closest(self, text: str) -> float:
        if not self.chosen:
            return 0.0
        return max((await self.similarity.matrix([text], self.chosen))[0])

    def _said(self, text: str, closest: float | None) -> bool:
        """Whether `text` repeats a chosen sentence (`closest`: its best embedder similarity
        to them, when known)."""
        if closest is not None and closest >= SAME_MEANING:
            return True
        mine, figures = set(terms(text)), figure_keys(text)
        for other in self.chosen:
            if key(other) == key(text):
                return True
            theirs = set(terms(other))
            jaccard = len(mine & theirs) / max(1, len(mine | theirs))
            if jaccard >= SAME_WORDS or (figures and len(figures) >= 2 and jaccard >= SAME_TOPIC
                                         and figures <= figure_keys(other)):
                return True
            if len(_telling(text) & _telling(other)) >= SAME_FIGURES:
                return True
        return False


def _telling(text: str) -> set[tuple[str, bool]]:
    """The figures that identify a statement: percentages and numbers of 100 or more that
    are not years ("474,000 units", "8.0%"), not "14 markets" or "2026"."""
    return {f.key for f in figures_in(text) if f.percent or (
        f.amount >= 100 and not (f.value.isdigit() and 1900 <= int(f.value) <= 2100
                                 and not f.unit))}
