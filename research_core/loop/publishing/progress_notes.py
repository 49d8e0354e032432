"""What the progress log tells people beyond "Checking: …": conflicting figures found, what is
still missing, deep research requested, applied or refused (with the reason), and each search
source that did not answer (once a run).

Each note has a stable key (the conflict, the node, the log event), kept in the run's
checkpoint once announced; the outbox keeps a step redone after a crash from repeating it.
Notes are in the question's language (`research_core.wording`); each begins with the words of
its kind ("Still missing", "Deep research refused", ...), translated, which the loading
status reads (`workers.loading_status`).
"""

from __future__ import annotations

from research_core.delivery.publications import Delivery
from research_core.loop.memory.node_conflicts import Conflict, find_conflicts
from research_core.loop.memory.state import RunState
from research_core.runlog import LogEvent
from research_core.search.failures import silent_source
from research_core.wording import ENGLISH_WORDS, N_, Words, for_question

CONFLICTS_PER_NODE = 2  # notes are publications too: a noisy node must not eat the budget
CONFLICTS_PER_RUN = 6


def deep_note(event: LogEvent, w: Words = ENGLISH_WORDS) -> str | None:
    """The progress note for a resource owner's decision about deep mode, if it is one."""
    what = event.data.get("event")
    reason = str(event.data.get("reason") or "")
    if what == "start" and "deep state deep" in event.message:
        return w("Deep research applied from the start, as requested")
    if what == "deep-refused":
        return w("Deep research refused: {why}", why=event.message.split(': ', 1)[-1])
    if what == "upgrade-requested":
        return w("Deep research requested: {reason}; decided at the next step", reason=reason)
    if what == "upgrade-refused":
        return w("Deep research refused: {why} (asked because: {reason})",
                 why=_refusal(event.message), reason=reason)
    if what == "deep-applied":
        return w("Deep research applied: {reason}", reason=reason)
    return None


def _refusal(message: str) -> str:
    return message.split("refused: ", 1)[-1]


SILENT = N_("A source did not answer: {source} ({why}); the search goes on without its hits "
            "and asks it again with the next query")
_WHY = {"start": N_("it did not start"), "timeout": N_("it gave no answer in time"),
        "error": N_("it answered an error"), "too_large": N_("its answer was over the size cap"),
        "failed": N_("the connection to it failed"),
        "config": N_("its tools do not fit its settings"), "unavailable": N_("it failed")}


class Announcer:
    """Posts the notes a run has not announced yet, after every step and at the end."""

    def __init__(self, state: RunState, delivery: Delivery) -> None:
        self.state = state
        self.delivery = delivery
        self.w = for_question(state.question)

    async def after_step(self) -> None:
        for key, text in [*self._deep(), *self._silent(), *self._conflicts(),
                          *self._missing()]:
            await self._note(key, text)

    async def at_end(self) -> None:
        for key, text in [*self._deep(), *self._silent(), *self._open_at_end()]:
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
        notes = ((e.seq, deep_note(e, self.w)) for e in self.state.log.of_kind("budget"))
        return [(f"deep-{seq}", text) for seq, text in notes if text]

    def _silent(self) -> list[tuple[str, str]]:
        """Each search source that did not answer a query of the run, told once."""
        found: dict[str, str] = {}
        for source, reason in filter(None, map(silent_source, self.state.log.events)):
            found.setdefault(source, reason)
        return [(f"silent-{source}", self.w(SILENT, source=source,
                                             why=self.w(_WHY.get(reason, _WHY["unavailable"]))))
                for source, reason in found.items()]

    def _conflicts(self) -> list[tuple[str, str]]:
        told = sum(k.startswith("conflict-") for k in self._done())
        notes = []
        for node in self.state.tree.nodes.values():
            kept = self.state.kept_for({node.id})
            found = find_conflicts(kept)[:CONFLICTS_PER_NODE] if len(kept) > 1 else []
            notes += [(f"conflict-{c.key}", self._conflict(c, node.question)) for c in found]
        fresh = [n for n in notes if n[0] not in self._done()]
        return fresh[:max(0, CONFLICTS_PER_RUN - told)]

    def _conflict(self, conflict: Conflict, question: str) -> str:
        period = f" ({conflict.period})" if conflict.period else ""
        return self.w("Conflict on {question}{period}: {figures}", question=repr(question),
                      period=period, figures=conflict.figures())

    def _missing(self) -> list[tuple[str, str]]:
        return [(f"missing-{n.id}", self.w("Still missing: {question} (too little reliable "
                                           "evidence found)", question=n.question))
                for n in self.state.tree.nodes.values()
                if n.status == "insufficient" and n.depth > 0]

    def _open_at_end(self) -> list[tuple[str, str]]:
        left = [n.question for n in self.state.tree.nodes.values()
                if n.status == "open" and n.depth > 0]
        if not left:
            return []
        w = self.w
        shown = w("; ").join(left[:4]) + (w(" and {n} more", n=len(left) - 4)
                                          if len(left) > 4 else "")
        return [("missing-at-end", w("Still missing when the research stopped: {questions}",
                                     questions=shown))]
