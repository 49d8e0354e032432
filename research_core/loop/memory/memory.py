"""Working memory (current sub-question, capped) and long-term summaries that lose no facts.

A summary must keep every number, date and source id of the evidence it replaces; that is
checked here in code, not trusted to the model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from research_core.loop.memory import labels
from research_core.loop.memory.evidence import Evidence
from research_core.loop.memory.pool import lines_of
from research_core.text import conflicts
from research_core.text.figures import is_number_string, number_strings

MAX_CONFLICTS = 3


@dataclass
class Summary:
    """Long-term memory of one finished sub-question."""

    node_id: str
    question: str
    conclusion: str
    evidence: list[str]
    open_doubts: list[str]
    source_ids: list[str]
    lossless_fallback: bool = False
    version: int = 1

    def text(self) -> str:
        return "\n".join([self.conclusion, *self.evidence, *self.open_doubts])


@dataclass
class WorkingMemory:
    cap: int
    node_id: str | None = None
    items: list[Evidence] = field(default_factory=list)

    @property
    def full(self) -> bool:
        return len(self.items) >= self.cap

    def add(self, item: Evidence) -> bool:
        """Add one kept evidence item; False when the cap is reached (summarise first)."""
        if self.full:
            return False
        self.items.append(item)
        return True

    def drop(self, evidence_ids: set[str]) -> list[Evidence]:
        gone = [e for e in self.items if e.id in evidence_ids]
        self.items = [e for e in self.items if e.id not in evidence_ids]
        return gone

    def reset(self, node_id: str | None) -> None:
        self.node_id = node_id
        self.items = []


def numbers_in(text: str) -> set[str]:
    """The numbers and dates in a text, thousands separators removed."""
    return {_normalise(n) for n in number_strings(text)}


def facts_of(items: list[Evidence]) -> set[str]:
    """Every number, date and source id a summary of these items must keep."""
    found: set[str] = set()
    for item in items:
        found.update(numbers_in(item.text))
        found.add(item.source_id)
    return found


def previous_facts(summary: Summary) -> set[str]:
    """What a rewrite of a summary must keep of it: its numbers, dates and source ids."""
    return numbers_in(summary.text()) | set(summary.source_ids)


def missing_facts(summary_text: str, required: set[str]) -> list[str]:
    """The required facts absent from a summary: numbers and dates must occur as numbers
    (without thousands commas), source ids as text."""
    have = numbers_in(summary_text)
    lowered = summary_text.lower()
    return sorted(f for f in required if f not in have and (
        is_number_string(f) or f.lower() not in lowered))


def lossless_summary(node_id: str, question: str, items: list[Evidence],
                     previous: Summary | None) -> Summary:
    """The fallback that cannot lose anything: the evidence lines themselves."""
    lines = [*(previous.evidence if previous else []), *(e.line() for e in items)]
    best = max(items, key=lambda e: e.score) if items else None
    conclusion = previous.conclusion if previous and not best else (
        f"Best supported: {best.text}" if best else "No reliable evidence was found.")
    return Summary(
        node_id=node_id, question=question, conclusion=conclusion, evidence=lines,
        open_doubts=list(previous.open_doubts) if previous else [],
        source_ids=merge_source_ids(previous, items), lossless_fallback=True,
        version=(previous.version + 1) if previous else 1,
    )


def with_conflicts(summary: Summary, items: list[Evidence]) -> Summary:
    """The summary with the conflicts between its sources recorded in its open doubts, each
    named as a conflict with both source ids: figures for the same measure and period, with
    the period they apply to (`research_core.text.conflicts`, the answer's detector)."""
    notes = conflict_notes(items)
    new = [n for n in notes if n not in summary.open_doubts]
    if new:
        summary.open_doubts = [*summary.open_doubts, *new]
    return summary


def conflict_notes(items: list[Evidence]) -> list[str]:
    if len({e.source_id for e in items}) < 2:
        return []
    return ["Conflict: " + labels.disagreement(d, lambda e: f"({e.source_id})", False)
            for d in conflicts.find(lines_of(items))[:MAX_CONFLICTS]]


def merge_source_ids(previous: Summary | None, items: list[Evidence]) -> list[str]:
    ids = list(previous.source_ids) if previous else []
    for item in items:
        if item.source_id not in ids:
            ids.append(item.source_id)
    return ids


def _normalise(number: str) -> str:
    return number.replace(",", "")
