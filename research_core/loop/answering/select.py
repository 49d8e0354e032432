"""Choosing sentences for a question: by maximal marginal relevance over their relevance
(`ranking`), the gain scaled by length as in budgeted summarisation, and none that repeats
what is already chosen anywhere in the answer: the same sentence, nearly the same words, or
the same figures on the same topic in other words (three outlets rewriting one release), or
two telling figures in common ("fell 8.0% to 474,000 units" said twice)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from research_core.loop.answering import ranking
from research_core.loop.memory.pool import Line, key
from research_core.protocols import Similarity
from research_core.text.figures import figure_keys, telling
from research_core.text.terms import terms

SAME_WORDS = 0.6  # term Jaccard above which two sentences say the same
SAME_MEANING = 0.9  # embedder similarity above which two sentences say the same
SAME_TOPIC = 0.3  # term Jaccard above which equal figures mean the same statement
SAME_FIGURES = 2  # telling figures two sentences share when they make the same statement
KEEP_SHARE = 0.3  # a sentence must score at least this share of the best one
MMR_LAMBDA = 0.7  # relevance's share of the marginal relevance (Carbonell & Goldstein 1998)
NEW_FIGURES_CREDIT = 0.5  # of the redundancy of a sentence that states figures not yet said
LENGTH_SCALE = 0.5  # r of gain / cost^r in budgeted selection (Lin & Bilmes 2010)
LENGTH_UNIT = 100  # characters: a sentence this long costs 1
SOURCE_MOST = 4  # sentences of one source in one answer section


@dataclass
class Picker:
    """Chooses sentences for one answer; remembers every sentence chosen (and those `used`
    before, e.g. by other published parts) so that none is said twice."""

    similarity: Similarity
    chosen: list[str] = field(default_factory=list)

    def remember(self, texts: Iterable[str]) -> None:
        self.chosen.extend(t for t in texts if key(t))

    async def pick(self, queries: Sequence[str], lines: list[Line], most: int,
                   per_source: int = SOURCE_MOST, weights: Sequence[float] | None = None,
                   supported: bool = False) -> list[Line]:
        """Up to `most` lines for the queries by maximal marginal relevance (Carbonell &
        Goldstein, SIGIR 1998): each next line the one whose relevance, less its similarity to
        what is chosen, is highest; a line that states figures not yet said is half as
        redundant; none that repeats a chosen sentence, none below KEEP_SHARE of the best, at
        most `per_source` of one source."""
        if most <= 0:
            return []
        scored = await self.ranked(queries, lines, weights, supported)
        taken: list[Line] = []
        while scored and len(taken) < most:
            best = await self._most_marginal(scored, taken, per_source)
            if best is None:
                break
            scored = [(s, ln) for s, ln in scored if ln is not best]
            taken.append(best)
            self.chosen.append(best.text)
        return taken

    async def ranked(self, queries: Sequence[str], lines: list[Line],
                     weights: Sequence[float] | None = None, supported: bool = False
                     ) -> list[tuple[float, Line]]:
        """The lines not said yet that score near the best, with their scores, best first."""
        fresh = [ln for ln in lines if not self._said(ln.text, None)]
        if not fresh:
            return []
        scores = await ranking.relevance(self.similarity, queries, fresh, weights, supported)
        best = max(scores)
        ranked = sorted(zip(scores, range(len(fresh)), fresh, strict=True), reverse=True)
        return [(score, line) for score, _, line in ranked
                if best > 0 and score >= KEEP_SHARE * best]

    async def _most_marginal(self, scored: list[tuple[float, Line]], taken: list[Line],
                             per_source: int) -> Line | None:
        """The scored line of highest marginal relevance that may be chosen, if any."""
        said_figures = {f for text in self.chosen for f in telling(text)}
        best: tuple[float, Line] | None = None
        for score, line in scored:
            if best is not None and MMR_LAMBDA * score / _cost(line) <= best[0]:
                continue  # no better even were it new
            if sum(t.source_id == line.source_id for t in taken) >= per_source:
                continue  # one source's table does not crowd out the others
            similar = await self._similarities(line.text)
            if self._said(line.text, similar):
                continue
            redundancy = max(similar, default=0.0)
            if telling(line.text) - said_figures:
                redundancy *= NEW_FIGURES_CREDIT
            marginal = (MMR_LAMBDA * score - (1 - MMR_LAMBDA) * redundancy) / _cost(line)
            if best is None or marginal > best[0]:
                best = (marginal, line)
        return best[1] if best else None

    async def take(self, line: Line) -> bool:
        """Choose `line` unless it repeats a chosen sentence; whether it was chosen."""
        if self._said(line.text, await self._similarities(line.text)):
            return False
        self.chosen.append(line.text)
        return True

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


def _cost(line: Line) -> float:
    """A sentence's share of the reading budget, scaled (Lin & Bilmes, "Multi-document
    Summarization via Budgeted Maximization of Submodular Functions", NAACL 2010): of two
    sentences that say as much, the shorter leaves room for another."""
    return float(max(1.0, len(line.text) / LENGTH_UNIT) ** LENGTH_SCALE)
