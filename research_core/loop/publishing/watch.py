"""A watch cycle: a finished run researched again as of a later date (docs/watch.md).

The cycle starts from the run's goal tree, evidence and findings: the finished sub-questions
are opened again for one more round each, every search asks only for what is newer than the
run's last date (the time range goes to every backend), and a published part whose question
gets new figures is revised in place with the reason "update <date>: …". The cycle gets a
fresh budget of its own, so the revision limits hold per cycle.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Protocol

from research_core.delivery.publications import Delivery, Publication
from research_core.loop.memory.goal_tree import FINISHED, Node
from research_core.loop.memory.state import RunState
from research_core.loop.publishing import followup
from research_core.protocols import TimeRange


class Researching(Protocol):
    """What a cycle needs of the engine's loop over one run."""

    def may_step(self) -> bool: ...

    async def step(self, node: Node) -> None: ...

    async def close_working_memory(self) -> None: ...

    async def revise_parts(self) -> None: ...

    async def checkpoint(self) -> None: ...


def since(state: RunState) -> dt.date | None:
    """The date a watch cycle searches from (None outside a watch cycle)."""
    return dt.date.fromisoformat(state.extra.watch_since) if state.extra.watch_since else None


def narrowed(window: TimeRange, state: RunState) -> TimeRange:
    """In a watch cycle, only what was published after the run's last date (the day after:
    the last run saw its own date)."""
    start = since(state)
    if start is None:
        return window
    after = start + dt.timedelta(days=1)
    return dataclasses.replace(window, since=max(window.since or after, after))


def prepare(state: RunState, as_of: dt.date) -> bool:
    """Make a finished run ready for a cycle as of `as_of`: its finished sub-questions are
    open again (one more round each), a fresh budget, queries counted from here. False when
    the cycle as of that date already ran to its end (a job run again); a cycle interrupted
    by a crash goes on from its checkpoint."""
    if state.as_of == as_of and state.extra.watch_since:
        return state.status != "finished"
    state.extra.watch_since = state.as_of.isoformat()
    state.extra.watch_from_step = state.step
    state.extra.budget = {}
    state.as_of = as_of
    state.status = "running"
    asked = followup.followup_node_ids(state)
    for node in state.tree.nodes.values():
        if node.id in asked or node.status not in FINISHED or node.status == "pruned":
            continue
        if node.children:
            node.status = "expanded"  # settled again once its children are
        elif node.depth > 0:
            node.status = "open"
            node.rounds = 0
    state.log.emit("watch", f"watch cycle as of {as_of}: searching what is newer than "
                   f"{state.extra.watch_since}")
    return True


def reason_prefix(as_of: dt.date) -> str:
    return f"update {as_of.isoformat()}: "


async def cycle(research: Researching, delivery: Delivery, state: RunState,
                run: bool = True) -> list[Publication]:
    """One cycle (`run`: False when it had already ended); the parts it revised (the latest
    version of each), in publication order."""
    if run:
        await _research(research, state)
    prefix = reason_prefix(state.as_of)
    revised = {p.part_key: p for p in delivery.published
               if p.kind == "part" and p.reason.startswith(prefix)}
    return list(revised.values())


async def _research(research: Researching, state: RunState) -> None:
    while (node := state.tree.next_open()) is not None and research.may_step():
        await research.step(node)
    await research.close_working_memory()
    await research.revise_parts()
    for node in state.tree.nodes.values():  # what the budget left unfinished stays as it was
        if node.status == "open" and node.depth > 0:
            node.status = "done" if state.kept_for({node.id}) else "insufficient"
    state.tree.settle_parents()
    state.status = "finished"
    revised = [p for p in state.publications if p.reason.startswith(reason_prefix(state.as_of))]
    state.log.emit("watch", f"watch cycle as of {state.as_of}: {len(revised)} revision(s)"
                   if revised else f"watch cycle as of {state.as_of}: nothing changed since "
                   f"{state.extra.watch_since}")
    await research.checkpoint()
