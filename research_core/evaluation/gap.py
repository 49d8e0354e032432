"""The paraphrase gap: how many groups a task's paraphrases pass against its original wording.

The originals' groups are summed over their runs (one per mode); the paraphrases' over theirs
and divided by the number of paraphrases, so that both sides count the same runs ("per run" of
the original). The gap is the paraphrases' change relative to the originals.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

Score = tuple[int, int]  # (groups passed, groups) of one run


@dataclass(frozen=True)
class Gap:
    passed: int  # groups the originals passed, over their runs
    total: int  # the groups of those runs
    paraphrased: float  # groups the paraphrases passed, per run of the original

    def __add__(self, other: Gap) -> Gap:
        return Gap(self.passed + other.passed, self.total + other.total,
                   self.paraphrased + other.paraphrased)

    def change(self) -> float | None:
        """The relative change, paraphrases against originals (None: the originals passed
        nothing)."""
        return (self.paraphrased - self.passed) / self.passed if self.passed else None

    def line(self) -> str:
        change = self.change()
        shown = "n/a" if change is None else f"{change:+.0%}".replace("+0%", "0%")
        return (f"paraphrase gap: originals {self.passed}/{self.total}, paraphrases "
                f"{round(self.paraphrased, 1):g}/{self.total} per run, {shown}")


def gap(originals: Sequence[Score], paraphrases: Sequence[Score]) -> Gap | None:
    """The gap of one task from its runs (None: no paraphrase or no original ran)."""
    if not originals or not paraphrases:
        return None
    per_run = sum(p for p, _ in paraphrases) * len(originals) / len(paraphrases)
    return Gap(sum(p for p, _ in originals), sum(t for _, t in originals), per_run)


def total(gaps: Sequence[Gap]) -> Gap | None:
    """All tasks' gaps together (None: no task had one)."""
    return sum(gaps[1:], start=gaps[0]) if gaps else None
