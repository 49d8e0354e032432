"""When a part of the answer is published, what it says, and when later evidence revises it.

Standard publishes each independently supported part as soon as it is ready; applied deep
holds a sub-question's part until the model judges it mature (every facet covered, no unknown
named, no open doubt or conflict in its summary), and the main synthesis (the report) always
comes last.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from research_core.loop.memory.evidence import Evidence
from research_core.loop.memory.memory import Summary, numbers_in

MATURE_SOURCES = 2
PART_EVIDENCE_LINES = 6


def part_text(summary: Summary, first: frozenset[str] = frozenset()) -> str:
    """A self-contained part: the sub-question, its conclusion, its evidence lines; lines that
    name a source of `first` (the evidence a revision is for) come first, so that a revision
    shows what revised it."""
    ranked = sorted(summary.evidence, key=lambda line: not any(s in line for s in first))
    lines = [f"*{summary.question}*", summary.conclusion,
             *(f"• {line}" for line in ranked[:PART_EVIDENCE_LINES])]
    if summary.open_doubts:
        lines.append("Open doubts: " + "; ".join(summary.open_doubts))
    return "\n".join(lines)


def ready(summary: Summary, node_done: bool, deep: bool,
          judged: Mapping[str, Any] | None = None) -> bool:
    """Is this sub-question's part ready to go out now? In deep, maturity is the model's
    judgement: its coverage judge (`judged`, the node's saved coverage) found every facet
    answered and named no unknown, and its summary leaves no open doubt or conflict. Only
    when the judge's reply was unusable does the source count stand in."""
    if not node_done:
        return False
    if not deep:
        return True
    if summary.open_doubts:
        return False
    if judged and judged.get("by") == "model":
        return not judged.get("unknowns") and len(judged.get("answered", [])) == len(
            judged.get("facets", []))
    return len(summary.source_ids) >= MATURE_SOURCES


def revising_evidence(published_text: str, candidates: list[Evidence]) -> list[Evidence]:
    """Evidence that brings figures the published part does not have."""
    have = numbers_in(published_text)
    return [e for e in candidates if numbers_in(e.text) - have]
