"""What the progress log tells people beyond "Checking: …": conflicting figures found, what is
still missing, and deep research requested, applied or refused (with the reason).

Each note has a stable key (the conflict, the node, the log event), kept in the run's
checkpoint once announced; the outbox keeps a step redone after a crash from repeating it.
"""

from __future__ import annotations

from research_core.delivery.publications import Delivery
from research_core.loop.memory.node_conflicts import find_conflicts
from research_core.loop.memory.state import RunState
from research_core.runlog import LogEvent

CONFLICTS_PER_NODE = 2  # notes are publications too: a noisy node must not eat the budget
CONFLICTS_PER_RUN = 6


def deep_note(event: LogEvent) -> str | None:
    """The progress note for a resource owner's decision about deep mode, if it is one."""
    what = event.data.get("event")
    reason = str(event.data.get("reason") or "")
    if what == "start" and "deep state deep" in event.message:
        return "Deep research applied from the start, as requested"
    if what == "deep-refused":
        return f"Deep research refused: {event.message.split(': ', 1)[-1]}"
    if what == "upgrade-requested":
        return f"Deep research requested: {reason}; decided at the next step"
    if what == "upgrade-refused":
        return f"Deep research refused: {_refusal(event.message)} (asked because: {reason})"
    if what == "deep-applied":
        return f"Deep research applied: {reason}"
    return None


def _refusal(message: str) -> str:
    return message.split("refused: ", 1)[-1]


class Announcer:
    """Posts the notes a run has not announced yet, after every step and at the end."""

    def __init__(self, state: RunState, delivery: Delivery) -> None:
        self.state = state
        self.delivery = delivery

    async def after_step(self) -> None:
        for key, text in [*self._deep(), *self._conflicts(), *self._missing()]:
            await self._note(key, text)

    async def at_end(self) -> None:
        for key, text in [*self._deep(), *self._open_at_end()]:
            await self._note(key, text)

    def _done(self) -> list[str]:
        announced = self.state.extra.announced
        return announced

    async def _note(self, key: str, text: str) -> None:
        if key in self._done():
            return
        self._done().append(key)
        await self.delivery.progress(text, key=key)

    def _deep(self) -> list[tuple[str, str]]:
        notes = ((e.seq, deep_note(e)) for e in self.state.log.of_kind("budget"))
        return [(f"deep-{seq}", text) for seq, text in notes if text]

    def _conflicts(self) -> list[tuple[str, str]]:
        told = sum(k.startswith("conflict-") for k in self._done())
        notes = []
        for node in self.state.tree.nodes.values():
            kept = self.state.kept_for({node.id})
            found = find_conflicts(kept)[:CONFLICTS_PER_NODE] if len(kept) > 1 else []
            notes += [(f"conflict-{c.key}", c.note(node.question)) for c in found]
        fresh = [n for n in notes if n[0] not in self._done()]
        return fresh[:max(0, CONFLICTS_PER_RUN - told)]

    def _missing(self) -> list[tuple[str, str]]:
        return [(f"missing-{n.id}", f"Still missing: {n.question} (too little reliable "
                 "evidence found)") for n in self.state.tree.nodes.values()
                if n.status == "insufficient" and n.depth > 0]

    def _open_at_end(self) -> list[tuple[str, str]]:
        left = [n.question for n in self.state.tree.nodes.values()
                if n.status == "open" and n.depth > 0]
        if not left:
            return []
        return [("missing-at-end", "Still missing when the research stopped: "
                 + "; ".join(left[:4]) + (f" and {len(left) - 4} more" if len(left) > 4 else ""))]
