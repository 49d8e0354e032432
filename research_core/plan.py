"""The goal tree as a plan people can follow: a title saying what the run is doing, and one
task per sub-question with its status, a one-line finding, the decisions taken on it and its
sources. Channels render it (Slack: a `plan` block of `task_card`s); `folded` keeps a large
tree within a channel's limit by folding finished branches.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

TaskStatus = Literal["pending", "in_progress", "complete", "error"]
FINISHED: tuple[TaskStatus, ...] = ("complete", "error")
FOLDED_ID = "folded"


@dataclass(frozen=True)
class PlanSource:
    url: str
    title: str


@dataclass(frozen=True)
class PlanTask:
    task_id: str
    title: str
    status: TaskStatus
    output: str = ""
    details: tuple[str, ...] = ()
    sources: tuple[PlanSource, ...] = ()
    parent_id: str | None = None
    asked_by: str = ""  # a person's channel id: the task is what they asked for (a steer)


@dataclass(frozen=True)
class PlanView:
    title: str
    tasks: tuple[PlanTask, ...] = field(default_factory=tuple)

    def folded(self, limit: int) -> PlanView:
        """At most `limit` tasks: finished branches fold into their parent's task first, then
        the earliest finished tasks into one summary task, then pending ones are cut. Tasks
        without a parent (the plan's own first step) are never folded."""
        tasks = list(self.tasks)
        for parent in [t for t in self.tasks if t.status in FINISHED and t.parent_id]:
            if len(tasks) <= limit:
                break
            tasks = _fold_branch(tasks, parent.task_id)
        if len(tasks) > limit:
            tasks = _fold_finished(tasks, len(tasks) - limit + 1)
        if len(tasks) > limit:
            tasks = [*tasks[:limit - 1], _more_pending(tasks[limit - 1:])]
        return replace(self, tasks=tuple(tasks))


def _descendants(tasks: list[PlanTask], task_id: str) -> set[str]:
    found: set[str] = set()
    frontier = {task_id}
    while frontier:
        children = {t.task_id for t in tasks if t.parent_id in frontier}
        found |= children
        frontier = children
    return found


def _counts(tasks: list[PlanTask]) -> str:
    done = sum(t.status == "complete" for t in tasks)
    failed = sum(t.status == "error" for t in tasks)
    left = len(tasks) - done - failed
    words = [f"{done} answered"] + ([f"{failed} without enough evidence"] if failed else [])
    return ", ".join(words + ([f"{left} not finished"] if left else []))


def _fold_branch(tasks: list[PlanTask], task_id: str) -> list[PlanTask]:
    """A finished task with its sub-tasks folded into it (their tally in its details)."""
    inner = _descendants(tasks, task_id)
    if not inner:
        return tasks
    gone = [t for t in tasks if t.task_id in inner]
    note = f"{len(gone)} narrower sub-questions folded: {_counts(gone)}"
    return [replace(t, details=(*t.details, note)) if t.task_id == task_id else t
            for t in tasks if t.task_id not in inner]


def _fold_finished(tasks: list[PlanTask], count: int) -> list[PlanTask]:
    """The earliest `count` finished sub-question tasks as one summary task where the first
    of them was (the plan's own first task, which has no parent, stays)."""
    finished = [t for t in tasks if t.status in FINISHED and t.parent_id is not None]
    gone = finished[:count]
    if len(gone) < 2:
        return tasks
    ids = {t.task_id for t in gone}
    summary = PlanTask(FOLDED_ID, f"{len(gone)} finished sub-questions", "complete",
                       output=_counts(gone))
    first = tasks.index(gone[0])
    kept = [t for t in tasks if t.task_id not in ids]
    return [*kept[:first], summary, *kept[first:]]


def _more_pending(rest: list[PlanTask]) -> PlanTask:
    return PlanTask("more", f"{len(rest)} more sub-questions", "pending",
                    output=_counts(rest))
