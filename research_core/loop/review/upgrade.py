"""The upgrade to deep is a decision (issue 16): in auto, at the usage reminder and at each
later turn until any axis reaches the refusal fraction (80 %) of its original total, the
planner is asked whether deeper research would change the answer (thin coverage, an
unresolved conflict, unknowns that matter). The fixed rule (`planner.upgrade_reason`) is only
the fallback for an unusable reply. Each request and the resource owner's decision are logged
and shown in the thread's progress.
"""

from __future__ import annotations

from research_core.budget.axes import AXES, Decision
from research_core.budget.owner import BudgetOwner
from research_core.delivery.publications import Delivery
from research_core.loop.memory import node_conflicts
from research_core.loop.memory.state import RunState
from research_core.loop.planning import planner
from research_core.loop.review import coverage
from research_core.models.gateway import Gateway
from research_core.models.prompts import render
from research_core.models.schemas import UpgradeOut
from research_core.protocols import Message
from research_core.wording import for_question


def asking_window(owner: BudgetOwner) -> bool:
    """From the reminder on, while the owner would still take a request and no axis has
    reached the refusal fraction of its original total."""
    due = owner.reminder_due() or owner.reminded
    limit = owner.settings.upgrade_refusal_fraction
    early = all(owner.committed_fraction(a, of_original=True) < limit for a in AXES)
    return due and early and owner.upgrade_window_open


async def consider(gw: Gateway, state: RunState, owner: BudgetOwner,
                   delivery: Delivery) -> None:
    """Ask the planner; record its request with the owner, who decides at the next turn."""
    if not asking_window(owner):
        return
    state.extra.upgrade_asks += 1
    out = await gw.try_structured("planner", "upgrade", _messages(state, owner), UpgradeOut)
    if out is None:
        why = planner.upgrade_reason(state.tree)
        state.log.emit("upgrade-asked", f"planner reply unusable; the fixed rule says: "
                       f"{why or 'no upgrade'}", by="rule", upgrade=bool(why))
    else:
        why = f"{out.reason}: {out.detail}".rstrip(": ") if out.upgrade else ""
        state.log.emit("upgrade-asked", f"planner: {'upgrade' if out.upgrade else 'no upgrade'}"
                       f" ({out.reason}{': ' + out.detail if out.detail else ''})",
                       by="model", upgrade=out.upgrade, reason=out.reason)
    if not why:
        return
    decision = owner.request_upgrade(why)
    w = for_question(state.question)
    await delivery.progress(w("Asked for deeper research ({why}); the budget owner decides at "
                              "the next step", why=why) if decision.granted else
                            w("Asked for deeper research ({why}); refused: {reason}", why=why,
                              reason=decision.reason),
                            key=f"upgrade-ask-{state.extra.upgrade_asks}")


async def announce(state: RunState, delivery: Delivery, decision: Decision | None) -> None:
    """The owner's decision on a pending request (`BudgetOwner.apply_pending`), shown in the
    thread."""
    if decision is None:
        return
    w = for_question(state.question)
    text = (w("Deep research applied: larger budget, deeper instructions from now on")
            if decision.granted
            else w("Deep research refused by the budget owner: {reason}",
                   reason=decision.reason))
    await delivery.progress(text, key=f"upgrade-decided-{state.extra.upgrade_asks}")


def _messages(state: RunState, owner: BudgetOwner) -> list[Message]:
    subs = [n for n in state.tree.nodes.values() if n.depth > 0]
    listing = "; ".join(f"{n.question} [{n.status}]" for n in subs[:8]) or "none yet"
    found = [c for n in subs for c in node_conflicts.find_conflicts(state.kept_for({n.id}))
             if state.kept_for({n.id})]
    usage = ", ".join(f"{a} {owner.used(a)}/{owner.total(a)}"
                      for a in ("steps", "model_calls", "reads", "discoveries"))
    return render("upgrade", question=state.question, usage=usage, subquestions=listing,
                  conflicts="; ".join(c.note(c.node_id) for c in found[:4]) or "none",
                  unknowns=coverage.uncovered_note(state) or "none")
