"""Conflicting figures between the sources of one sub-question, for the progress log, the plan
and the deep-research request: the answer's own detector (`research_core.text.conflicts`: same
period, same subject, close figures in one unit) over the whole sentences of the node's kept
evidence, so that the log never reports a conflict the answer would not (a quarter's total
against a month's, one firm's figure against another's), nor two bodies' counts that a source
sets side by side (`research_core.text.counts`: the answer says they count differently)."""

from __future__ import annotations

from dataclasses import dataclass

from research_core.loop.memory.evidence import Evidence
from research_core.loop.memory.pool import Line, lines_of
from research_core.text import conflicts
from research_core.text.counts import two_counts


@dataclass(frozen=True)
class Conflict:
    node_id: str
    unit: str  # as written after the figures; "" where the figure holds its magnitude word
    first: tuple[str, str]  # (source id, figure as written): the preferred source first
    second: tuple[str, str]
    period: str = ""  # the period both figures are for ("2026-Q3", "2026-09")

    @property
    def key(self) -> str:
        return f"{self.node_id}-{self.first[0]}-{self.second[0]}-{self.unit}"

    def figures(self) -> str:
        """"474,000 units (a) vs 466,000 units (b)"."""
        unit = f" {self.unit}" if self.unit else ""
        return (f"{self.first[1]}{unit} ({self.first[0]}) vs "
                f"{self.second[1]}{unit} ({self.second[0]})")

    def note(self, question: str) -> str:
        period = f" ({self.period})" if self.period else ""
        return f"Conflict on {question!r}{period}: {self.figures()}"


def find_conflicts(items: list[Evidence]) -> list[Conflict]:
    """The conflicts among one node's kept evidence, one per source pair, most credible
    first."""
    if not items:
        return []
    lines = lines_of(items)
    return [Conflict(items[0].node_id, _unit(d), (d.first[0].source_id, d.first[1].text),
                     (d.second[0].source_id, d.second[1].text), d.period)
            for d in conflicts.find(lines)
            if two_counts(*d.first, *d.second, lines) is None]


def _unit(d: conflicts.Disagreement[Line]) -> str:
    """The unit both figures are written with ("元/吨" after "1.86万" and "1.74万"), else the
    unit they were compared in."""
    mine, theirs = d.first[1].unit, d.second[1].unit
    return mine if mine and mine == theirs else d.shown_unit
