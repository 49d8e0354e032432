"""Conflicting figures between sources on one sub-question, for the progress log.

Two kept evidence items of a node, from different sources that speak of the same thing (most
of the words of one occur in the other), conflict when both state figures in the same unit
("units", "euros", "元/吨") and none of those figures is stated by both. Percentages are left
out: two rates in one text are too often rates of different things.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations

from research_core.loop.evidence import Evidence
from research_core.text.figures import Figure, figures_in
from research_core.text.terms import overlap

SAME_TOPIC = 0.5  # share of one text's terms found in the other


@dataclass(frozen=True)
class Conflict:
    node_id: str
    unit: str
    first: tuple[str, str]  # (source id, figure as written)
    second: tuple[str, str]

    @property
    def key(self) -> str:
        return f"{self.node_id}-{self.first[0]}-{self.second[0]}-{self.unit}"

    def note(self, question: str) -> str:
        return (f"Conflict on {question!r}: {self.first[1]} {self.unit} ({self.first[0]}) vs "
                f"{self.second[1]} {self.unit} ({self.second[0]})")


@dataclass
class _Said:
    """What one source says on the node: its evidence text, its figures by unit."""

    source_id: str
    text: str = ""
    units: dict[str, list[Figure]] = field(default_factory=dict)

    def add(self, text: str) -> None:
        self.text = f"{self.text} {text}".strip()
        for figure in figures_in(text):
            if figure.unit and not figure.percent:
                self.units.setdefault(figure.unit, []).append(figure)


def find_conflicts(items: list[Evidence]) -> list[Conflict]:
    """The conflicts among one node's kept evidence, one per source pair and unit."""
    said: dict[str, _Said] = {}
    for item in items:
        said.setdefault(item.source_id, _Said(item.source_id)).add(item.text)
    found = []
    for a, b in combinations(said.values(), 2):
        if max(overlap(a.text, b.text), overlap(b.text, a.text)) >= SAME_TOPIC:
            found += _pair_conflicts(items[0].node_id, a, b)
    return found


def _pair_conflicts(node_id: str, a: _Said, b: _Said) -> list[Conflict]:
    conflicts = []
    for unit in sorted(set(a.units) & set(b.units)):
        first, second = a.units[unit], b.units[unit]
        if {f.value for f in first}.isdisjoint(f.value for f in second):
            conflicts.append(Conflict(node_id, unit, (a.source_id, first[0].text),
                                      (b.source_id, second[0].text)))
    return conflicts
