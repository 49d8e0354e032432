"""The evidence list the reporter reads (seed 000: the structured evidence list, never whole
pages), bounded whatever the run's length and corpus.

Every source kept for the run is numbered by its best evidence score. What the list says of
a source is its facts: the sentences of its kept evidence that state a figure (a text that
states none gives its first sentence), each cut to `FACT_CHARS`. The facts go round the
sources, one fact per source a round, best sources first, until `limit_chars` is spent: a
longer run brings more sources and fewer facts each, never a longer prompt. A source none of
whose facts fits is not numbered. The findings per sub-question (their conclusions, one line
each; a summary kept as its notes has no conclusion beyond its facts, listed below) take at
most `FINDINGS_SHARE` of the same budget. A source's title is left out where its facts
already say what the title says.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from research_core.loop.memory.evidence import Evidence
from research_core.loop.memory.memory import Summary
from research_core.text.figures import figures_in
from research_core.text.sentences import sentences
from research_core.text.titles import restated

FACT_CHARS = 240
CONCLUSION_CHARS = 200
DOUBTS, DOUBT_CHARS = 3, 160  # per sub-question in the findings
FINDINGS_SHARE = 0.25
INDENT = "    "


@dataclass(frozen=True)
class Listed:
    """One source of the list: its best evidence (for the source line) and the facts shown."""

    best: Evidence
    facts: list[str]


def facts_of(text: str) -> list[str]:
    """The sentences of an evidence text that state a figure, or its first sentence."""
    said = sentences(text, clauses=False)
    stated = [s for s in said if figures_in(s)] or said[:1]
    return [_cut(s, FACT_CHARS) for s in stated]


def evidence_list(evidence: Sequence[Evidence], limit_chars: int) -> list[Listed]:
    """The sources, best first, with the facts that fit in `limit_chars` (head lines
    included)."""
    ranked = sorted(evidence, key=lambda e: -e.score)
    pending = {e.source_id: _facts(ranked, e.source_id) for e in ranked}
    best = {sid: next(e for e in ranked if e.source_id == sid) for sid in pending}
    shown: dict[str, list[str]] = {}
    left = limit_chars
    while any(pending.values()):
        for sid, facts in pending.items():
            if facts:
                left = _take(sid, facts.pop(0), shown, left, best[sid])
    return [Listed(best[sid], facts) for sid, facts in shown.items()]


def _take(sid: str, fact: str, shown: dict[str, list[str]], left: int,
          best: Evidence) -> int:
    """Show `fact` of source `sid` if it fits in `left`; the characters left after it."""
    cost = len(INDENT) + len(fact) + 1 + (0 if sid in shown else
                                          len(head(len(shown) + 1, best, [fact])) + 1)
    if cost > left:
        return left
    shown.setdefault(sid, []).append(fact)
    return left - cost


def _facts(ranked: Sequence[Evidence], source_id: str) -> list[str]:
    found = [f for e in ranked if e.source_id == source_id for f in facts_of(e.text)]
    return list(dict.fromkeys(found))


def head(number: int, e: Evidence, facts: Sequence[str] = ()) -> str:
    """A source's line: its number, its title where its facts do not already say what the
    title says, its publisher and date."""
    title = "" if restated(e.title, facts) else f"{e.title} — "
    return f"[{number}] {title}{e.publisher}, {e.published or 'undated'}"


def block(number: int, listed: Listed) -> str:
    return "\n".join([head(number, listed.best, listed.facts),
                      *(INDENT + f for f in listed.facts)])


def findings(summaries: Sequence[Summary], unknowns: Sequence[str], limit_chars: int) -> str:
    """Per sub-question its conclusion with its open doubts, then what the findings do not
    cover, within `limit_chars` (the sub-questions that do not fit are counted)."""
    lines = [f"- {s.question}" + ("" if s.lossless_fallback else
                                     f": {_cut(s.conclusion, CONCLUSION_CHARS)}")
             + (f" (open: {'; '.join(d[:DOUBT_CHARS] for d in s.open_doubts[:DOUBTS])})"
                if s.open_doubts else "")
             for s in summaries]
    if unknowns:
        lines.insert(0, "- Not covered by the findings (say so as unknown): "
                     + _cut("; ".join(unknowns), CONCLUSION_CHARS * 2))
    kept: list[str] = []
    for line in lines:
        if sum(len(k) + 1 for k in kept) + len(line) > limit_chars:
            kept.append(f"- {len(lines) - len(kept)} more sub-questions: see the sources")
            break
        kept.append(line)
    return "\n".join(kept) or "- none"


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"
