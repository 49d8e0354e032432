"""Evidence recall: the share of the documents a task's requirement groups ask to be cited
(its `cites_any` ids) that reached the run's evidence pool (the sources it kept). A group
cannot pass its citation check when no document it accepts was kept, so recall bounds what
any answer writer can do with what retrieval found (issue 42)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from research_core.evaluation.suite import Requirement


def needed_ids(requirements: Sequence[Requirement]) -> frozenset[str]:
    """The ids the groups' `cites_any` checks accept, the late documents' included."""
    return frozenset(i for r in requirements for c in r.checks
                     if c.kind == "cites_any" and not isinstance(c.arg, bool) for i in c.arg)


def evidence_recall(requirements: Sequence[Requirement], pool: Iterable[str]) -> float | None:
    """The share of the needed ids in `pool` (source ids); None when no group names one."""
    needed = needed_ids(requirements)
    if not needed:
        return None
    return len(needed & set(pool)) / len(needed)
