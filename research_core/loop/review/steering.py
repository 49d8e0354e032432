"""Steering a running research: what a person writes in the thread while the run works
("skip the UK, focus on prices") is read at the run's next step and changes which open
sub-questions it works on.

Where the planner tier is a model that can follow such a request (not the bundled 270M model,
which does not), the planner reads the steer and says which open sub-questions to drop, which
to work on first and at most two to add; its reply is checked (only open ids, and added
sub-questions pass the checks a decomposition's pass). Otherwise, or when its reply is unusable,
a rule decides without a model: the terms of each clause of the steer raise the open
sub-questions that name them, or drop them where the clause says skip, drop, ignore, not…

A steer never raises the budget: the planner's call is one model call of the run's own, an
added sub-question takes one of its discoveries (none left: none added), and nothing else is
granted. It is a person's words, quoted to the planner as data and never mixed with page text;
evidence never becomes a steer. Each steer read is one `steer` event in the run log (who, what,
and what changed), which the plan shows; how many were read is kept in the checkpoint, so a
resumed run reads each once.
"""

from __future__ import annotations

from dataclasses import dataclass

from research_core.budget.axes import Budget
from research_core.loop.memory.goal_tree import Node
from research_core.loop.memory.state import RunState
from research_core.loop.planning import judgement
from research_core.models.gateway import Gateway
from research_core.models.prompts import render
from research_core.models.schemas import SteerOut, SubQuestion
from research_core.protocols import Similarity, Steer, SteerSource
from research_core.settings import BUNDLED, NO_MODEL, EngineSettings, Settings
from research_core.text.requests import (
    CUES,
    capitalised_names,
    request_clauses,
    says_away,
    says_toward,
)
from research_core.text.terms import function_words, terms

FIRST_VALUE = 1.0  # a sub-question asked for first
OTHERS_BELOW = 0.95  # every other open sub-question waits below it
ADDED_VALUE = 0.9
STEER_CHARS = 500  # what of a steer is read (the bot takes longer messages as questions)


@dataclass(frozen=True)
class Change:
    """What one steer did to the plan."""

    steer: Steer
    how: str  # "planner" or "rule"
    raised: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    added: tuple[str, ...] = ()

    def summary(self, state: RunState) -> str:
        """"first: …; dropped: …; added: …" with the sub-questions' texts."""
        def named(ids: tuple[str, ...]) -> str:
            return "; ".join(state.tree.nodes[i].question for i in ids)

        parts = [f"{what}: {named(ids)}" for what, ids in (
            ("first", self.raised), ("dropped", self.dropped), ("added", self.added)) if ids]
        return " | ".join(parts) or "no open sub-question matched it"


async def read_steers(source: SteerSource | None, gw: Gateway, state: RunState, owner: Budget,
                      similarity: Similarity, cfg: EngineSettings,
                      use_planner: bool) -> list[Change]:
    """Apply the steers written since the run last read them, oldest first."""
    if source is None:
        return []
    changes = []
    for steer in await source.after(state.extra.steers_read):
        if not steer.text.strip():  # nothing to read (an unreadable record)
            state.extra.steers_read += 1
            continue
        change = await _apply(steer, gw, state, owner, similarity, cfg, use_planner)
        state.extra.steers_read += 1
        state.log.emit("steer", f"{change.steer.who}: {change.steer.text[:120]!r} → "
                       f"{change.summary(state)} ({change.how})", node=state.tree.root_id,
                       who=steer.who, text=steer.text[:STEER_CHARS], how=change.how,
                       raised=list(change.raised), dropped=list(change.dropped),
                       added=list(change.added))
        changes.append(change)
    return changes


async def _apply(steer: Steer, gw: Gateway, state: RunState, owner: Budget,
                 similarity: Similarity, cfg: EngineSettings, use_planner: bool) -> Change:
    text = " ".join(steer.text.split())[:STEER_CHARS]
    opened = open_subquestions(state)
    reply = await _ask_planner(gw, state, opened, text) if use_planner else None
    if reply is None:
        raised, dropped = rule(text, opened)
        return _change(state, Change(steer, "rule", tuple(raised), tuple(dropped)))
    added = await _add(state, reply.add, owner, similarity, cfg)
    change = Change(steer, "planner", tuple(dict.fromkeys(reply.first)),
                    tuple(d for d in dict.fromkeys(reply.drop) if d not in reply.first), added)
    return _change(state, change)


def planner_steers(settings: Settings) -> bool:
    """Whether the planner reads steers: any planner but the bundled 270M model (an endpoint,
    or a GGUF file of one's own), which does not follow such a request."""
    tier = settings.tiers.get("planner")
    return tier is not None and (bool(tier.base_url) or tier.model not in (BUNDLED, NO_MODEL))


def open_subquestions(state: RunState) -> list[Node]:
    return [n for n in state.tree.nodes.values() if n.status == "open" and n.depth > 0]


def rule(text: str, opened: list[Node]) -> tuple[list[str], list[str]]:
    """Without a model: each clause's terms pick the open sub-questions that name them;
    a clause that says skip, drop, not… drops them, one that says focus, first, only… (or
    says nothing of the kind after such a clause) raises them."""
    raised: list[str] = []
    dropped: list[str] = []
    away = False
    for clause in request_clauses(text):
        if says_away(clause) or says_toward(clause):  # a clause without a cue of its
            away = says_away(clause)  # own goes the way of the one before
        words = _words(clause) - CUES
        named = [n.id for n in opened if words & _words(n.question)]
        (dropped if away else raised).extend(named)
    raised = list(dict.fromkeys(raised))
    return raised, [d for d in dict.fromkeys(dropped) if d not in raised]


def _words(text: str) -> set[str]:
    """The words that name something: content words, and names written with a capital
    that a stop-word list would take for function words ("the UK", "US")."""
    names = capitalised_names(text)
    return {_stem(w) for w in terms(text)
            if (w in names or w not in function_words()) and not w.isdigit()}


def _stem(word: str) -> str:
    """"prices" and "price", "markets" and "market" as one word."""
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") \
        else word


async def _ask_planner(gw: Gateway, state: RunState, opened: list[Node],
                       text: str) -> SteerOut | None:
    ids = {n.id for n in opened}
    listing = "\n".join(f"{n.id}: {n.question}" for n in opened) or "none"
    messages = render("steer", goal=state.question, open=listing, steer=text)

    def check(out: SteerOut) -> str | None:
        unknown = sorted({*out.drop, *out.first} - ids)
        return f"unknown sub-question ids {unknown}; use ids from the list" if unknown else None

    return await gw.try_structured("planner", "steer", messages, SteerOut, check)


async def _add(state: RunState, asked: list[SubQuestion], owner: Budget,
               similarity: Similarity, cfg: EngineSettings) -> tuple[str, ...]:
    """The planner's new sub-questions that pass a decomposition's checks, while the run has
    discoveries left (one each): a steer never grants more."""
    taken = {n.question for n in state.tree.nodes.values()}
    vetted = await judgement.vet_subquestions(similarity, state.asked, asked, taken, cfg)
    for question, why in vetted.rejected:
        state.log.emit("subquestion-refused", f"steer's {question[:80]!r}: {why}")
    added = []
    for sub in vetted.accepted:
        if owner.available("discoveries") < 1 or not owner.spend("discoveries"):
            state.log.emit("subquestion-refused", f"steer's {sub.question[:80]!r}: no "
                           "discovery left in the budget")
            break
        added.append(state.tree.add_child(state.tree.root_id, sub.question,
                                          min(sub.value, ADDED_VALUE)).id)
    return tuple(added)


def _change(state: RunState, change: Change) -> Change:
    """Drop and re-rank as the change says; returns it."""
    for node_id in change.dropped:
        state.tree.nodes[node_id].status = "pruned"
    if change.raised or change.added:
        first = set(change.raised)
        for node in open_subquestions(state):
            node.value = FIRST_VALUE if node.id in first else min(node.value, OTHERS_BELOW)
    return change
