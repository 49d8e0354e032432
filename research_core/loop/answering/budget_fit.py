"""An answer fitted to the reader's budget (issue 25): the blocks of an answer (its lead, a
section's bullets, the disagreements, the "not found" line) keep their order, and bullets are
given out round by round — every section's first bullet before any section's second — until
the next one would pass the budget. A header with no bullet left is dropped."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Block:
    """A header line ('' for none) and the lines under it, best first; `whole`: the lines
    are shown together or not at all (a lead, a disagreement with its explanation)."""

    header: str
    lines: list[str] = field(default_factory=list)
    whole: bool = False
    per_round: int = 1  # lines given out each round (the item list: what was asked item by item)


def fit(blocks: list[Block], budget: int) -> str:
    """The blocks as text within `budget` characters (at least each first line, in order,
    while they fit)."""
    taken = [0] * len(blocks)
    used = 0
    for rank in range(max((len(b.lines) for b in blocks), default=0)):
        for i, block in enumerate(blocks):
            for turn in range(1 if block.whole else block.per_round):
                at = rank * block.per_round + turn
                if at >= len(block.lines) or taken[i] < at or (block.whole and rank):
                    break
                more = block.lines if block.whole else [block.lines[at]]
                cost = sum(len(line) + 1 for line in more)
                cost += len(block.header) + 2 if taken[i] == 0 and block.header else 0
                if used + cost > budget:
                    break
                used += cost
                taken[i] = len(more) if block.whole else taken[i] + 1
    return render(blocks, taken)


def render(blocks: list[Block], taken: list[int]) -> str:
    out: list[str] = []
    for block, n in zip(blocks, taken, strict=True):
        if n:
            out += [block.header] if block.header else []
            out += [*block.lines[:n], ""]
    return "\n".join(out).strip()
