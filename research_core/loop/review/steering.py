"""Steering a running research: what a person writes in the thread while the run works
("skip the UK, focus on prices") is read at the run's next step and changes which open
sub-questions it works on.

Where the planner tier is a model that can follow such a request (not the bundled 270M model,
which does not), the planner reads the steer and says which open sub-questions to drop, which
to work on first and at most two to add; its reply is checked (only open ids, and added
sub-questions pass the checks a decomposition's pass). Otherwise, or when its reply is unusable
or changes nothing, a rule decides without a model (issue 44 item 5). The grammar
(`research_core.text.requests`) cuts the steer into clauses, each turning toward what it names,
away from it, or neither, and reads what each names ("focus on prices" → "prices"); statistics,
not word lists, decide which open sub-questions a topic names (`near`): BM25 over the open
sub-questions, on the topic's words that tell them apart, or the embedder's clear match (close
to the topic, and closer than the question is; English and Chinese alike). Then:
- a toward clause moves the sub-questions it names first; one that names something no open
  sub-question covers adds a NEW sub-question (the topic, completed with the question's topic
  as a decomposition completes a clause), researched next;
- a clause that narrows (focus, only, mainly…, 重点, 只) drops the open sub-questions that are
  not near what it names (`near`), once what it names is researched next (moved first or
  added); the narrowing holds, the planner's too: a sub-question added to the
  root later (a gap, a facet of the evidence) that is near none of it is dropped before a
  step is spent on it (`keep_focus`);
- an away clause drops the sub-questions it names; a clause with no cue moves them first.

A steer never raises the budget: the planner's call is one model call of the run's own, an
added sub-question takes one of its discoveries (none left: none added, and the plan and the
writer are told so), and nothing else is granted. It is a person's words, quoted to the
planner as data and never mixed with page text; evidence never becomes a steer. Each steer read
is one `steer` event in the run log (who, what, and what changed), which the plan shows and the
writer is told (`SteerSource.tell`); how many were read is kept in the checkpoint, so a resumed
run reads each once. When no step is left (`close_steers`), steering ends: a steer written
after the last step was read is logged as late, and the channel answers it as a follow-up.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from research_core.budget.axes import Budget
from research_core.loop.memory.goal_tree import Node
from research_core.loop.memory.state import RunState
from research_core.loop.planning import judgement, subquestions
from research_core.models.gateway import Gateway
from research_core.models.prompts import render
from research_core.models.schemas import SteerOut, SubQuestion
from research_core.protocols import Similarity, Steer, SteerSource
from research_core.search import bm25
from research_core.settings import BUNDLED, NO_MODEL, EngineSettings, Settings
from research_core.text.requests import CUES, capitalised_names, read_request
from research_core.text.terms import function_words, terms
from research_core.wording import N_, Words, for_question

FIRST_VALUE = 1.0  # a sub-question asked for first, or added for a steer
OTHERS_BELOW = 0.95  # every other open sub-question waits below it
STEER_CHARS = 500  # what of a steer is read (the bot takes longer messages as questions)
MAX_ADDED = 2  # new sub-questions one steer adds at most (as the planner's reply)
# A topic names a sub-question by the embedder when their similarity is at least COVERS and
# exceeds the topic's similarity to the question by MARGIN (measured with the bundled encoder
# on English and Chinese plans: a topic's own sub-question scores 0.2–0.55 and 0.15–0.45
# above the question; another's, below); a narrowing steer keeps the sub-questions at least
# NEAR above the question (what it names is close to them: "prices" and installation costs),
# and those the topic pulls the question toward within PULL of the most (on the same plans,
# a topic's own sub-question always was, in either language: "价格" and "Heat Pump Price
# Tracker, October 2026").
COVERS, MARGIN, NEAR, PULL = 0.2, 0.15, 0.1, 0.05
BUDGET, REFUSED = "budget", "refused"  # why a topic asked for was not added


@dataclass(frozen=True)
class Change:
    """What one steer did to the plan: the sub-questions moved first, dropped and added, and
    what it asked that changed nothing (topics to skip that no open sub-question is about;
    topics asked for that could not be added, and why)."""

    steer: Steer
    how: str  # "planner" or "rule"
    raised: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    unmatched: tuple[str, ...] = ()
    wanted: tuple[str, ...] = ()
    why: str = ""  # BUDGET or REFUSED, for `wanted`
    named: bool = True  # whether the steer named anything at all
    narrowed: tuple[str, ...] = ()  # the topics the research is narrowed to from now on
    kept: tuple[str, ...] = ()  # the open sub-questions a narrowing kept (near its topics)

    def summary(self, state: RunState) -> str:
        """"first: …; dropped: …; added: …" with the sub-questions' texts."""
        def listed(ids: tuple[str, ...]) -> str:
            return "; ".join(state.tree.nodes[i].question for i in ids)

        parts = [f"{what}: {listed(ids)}" for what, ids in (
            ("first", self.raised), ("dropped", self.dropped), ("added", self.added)) if ids]
        parts += [f"not added ({self.why}): {'; '.join(self.wanted)}"] if self.wanted else []
        parts += [f"nothing to skip: {'; '.join(self.unmatched)}"] if self.unmatched else []
        return " | ".join(parts) or "no open sub-question matched it"


async def read_steers(source: SteerSource | None, gw: Gateway, state: RunState, owner: Budget,
                      similarity: Similarity, cfg: EngineSettings,
                      use_planner: bool) -> list[Change]:
    """Apply the steers written since the run last read them, oldest first; each writer is
    told what their steer changed."""
    if source is None:
        return []
    await keep_focus(state, similarity)
    changes = []
    for steer in await source.after(state.extra.steers_read):
        if not steer.text.strip():  # nothing to read (an unreadable record)
            state.extra.steers_read += 1
            continue
        change = await _apply(steer, gw, state, owner, similarity, cfg, use_planner)
        state.extra.steers_read += 1
        event = state.log.emit(
            "steer", f"{change.steer.who}: {change.steer.text[:120]!r} → "
            f"{change.summary(state)} ({change.how})", node=state.tree.root_id, who=steer.who,
            text=steer.text[:STEER_CHARS], how=change.how, raised=list(change.raised),
            dropped=list(change.dropped), added=list(change.added),
            unmatched=list(change.unmatched), wanted=list(change.wanted), why=change.why,
            named=change.named, narrowed=list(change.narrowed), kept=list(change.kept))
        w = for_question(state.question)
        output, details = described(event.data, state, w)
        told = w("Your steer was read before step {n}: {what}.", n=state.step + 1, what=output)
        await source.tell(steer, "\n".join([told, *(f"• {d}" for d in details)]))
        changes.append(change)
    return changes


async def close_steers(source: SteerSource | None, state: RunState) -> list[Steer]:
    """No step is left: steering ends. The steers written after the last read, which no step
    reads, are each logged as late (the plan shows them); the channel answers them as
    follow-ups."""
    if source is None:
        return []
    late = await source.close(state.extra.steers_read)
    state.extra.steers_read += len(late)
    for steer in late:
        if steer.text.strip():
            state.log.emit("steer", f"{steer.who}: {steer.text[:120]!r} came after the last "
                           "step: answered as a follow-up", node=state.tree.root_id,
                           who=steer.who, text=steer.text[:STEER_CHARS], how="late")
    return late


def described(data: dict[str, Any], state: RunState, w: Words) -> tuple[str, tuple[str, ...]]:
    """What a steer event says to people: one line of what it did, and one detail per
    sub-question it moved first, dropped or added, and per thing it asked that changed
    nothing."""
    if data.get("how") == "late":
        return w("came after the research's last step: answered as a follow-up instead"), ()

    def listed(what: str) -> list[str]:
        return [state.tree.nodes[i].question for i in data.get(what) or []
                if i in state.tree.nodes]

    def said(what: str) -> list[str]:
        return [str(t) for t in data.get(what) or []]

    not_added = N_("Not added, the run's budget has no room for a new sub-question: {topic}") \
        if data.get("why") == BUDGET else N_("Not added, it is not a sub-question the plan "
                                             "takes: {topic}")
    details = [w(label, question=q) for what, label in (
        ("added", N_("Added: {question}")), ("raised", N_("First: {question}")),
        ("dropped", N_("Dropped: {question}"))) for q in listed(what)]
    details += [w(not_added, topic=t) for t in said("wanted")]
    details += [w("Nothing to drop: no open sub-question is about {topic}", topic=t)
                for t in said("unmatched")]
    if data.get("added"):
        output = w("added what no open sub-question covered; it is researched next")
    elif data.get("raised") or data.get("dropped"):
        output = w("asked to change the plan")
    elif data.get("named") is False:
        output = w("asked; it names nothing the plan could change, so the plan stays")
    else:
        output = w("asked; no open sub-question matched what they named, so the plan stays")
    return output, tuple(details)


async def _apply(steer: Steer, gw: Gateway, state: RunState, owner: Budget,
                 similarity: Similarity, cfg: EngineSettings, use_planner: bool) -> Change:
    text = " ".join(steer.text.split())[:STEER_CHARS]
    opened = open_subquestions(state)
    reply = await _ask_planner(gw, state, opened, text) if use_planner else None
    if reply is not None and (reply.first or reply.drop or reply.add):
        added, refused = await _add(state, reply.add, owner, similarity, cfg)
        first = tuple(dict.fromkeys(reply.first))
        drop = tuple(d for d in dict.fromkeys(reply.drop) if d not in first)
        narrowed = tuple(c.topic for c in read_request(text) if c.narrows) \
            if first or added else ()  # the planner's focus holds as the rule's does
        change = Change(steer, "planner", first, drop, added, wanted=tuple(refused),
                        why=_why(refused, owner), narrowed=narrowed,
                        kept=tuple(n.id for n in opened if n.id not in drop) if narrowed else ())
        return _change(state, change)
    reading = await rule(text, opened, state.question, similarity)
    proposed = {t: judgement.real_subquestion(_as_subquestion(t, state), FIRST_VALUE)
                for t in reading.wanted}  # or why it is none ("UK?" is too short)
    asked = [sub for sub in proposed.values() if isinstance(sub, SubQuestion)]
    added, refused = await _add(state, asked, owner, similarity, cfg)
    wanted = [t for t, sub in proposed.items()
              if not isinstance(sub, SubQuestion) or sub.question in refused]
    # a narrowing steer sets the rest aside only once all it names is researched next
    focus = bool(reading.narrowing) and not set(reading.narrowing) & set(wanted)
    dropped = [*reading.dropped, *(reading.set_aside if focus else [])]
    dropped = [d for d in dict.fromkeys(dropped) if d not in reading.raised]
    kept = [n.id for n in opened if n.id not in dropped] if focus else []
    return _change(state, Change(steer, "rule", tuple(reading.raised), tuple(dropped), added,
                                 tuple(reading.unmatched), tuple(wanted), _why(wanted, owner),
                                 reading.named, tuple(reading.narrowing if focus else ()),
                                 tuple(kept)))


async def keep_focus(state: RunState, similarity: Similarity) -> list[str]:
    """A narrowing holds after its steer: a sub-question added to the root since (a gap of
    the question, a facet of the evidence, a neglected one) that is near none of the topics
    the latest narrowing named is dropped too, before a step is spent on it (the narrowed
    sub-questions' own splits are theirs). Each look is one `steer-focus` event (what it kept
    and dropped), so that each sub-question is judged once. Returns the ids dropped."""
    narrowings = [e for e in state.log.of_kind("steer") if e.data.get("narrowed")]
    if not narrowings:
        return []
    looked = {i for kind in ("steer", "steer-focus") for e in state.log.of_kind(kind)
              for what in ("raised", "added", "kept", "dropped") for i in e.data.get(what) or []}
    new = [n for n in open_subquestions(state)
           if n.parent_id == state.tree.root_id and n.id not in looked]
    if not new:
        return []
    topics = [str(t) for t in narrowings[-1].data["narrowed"]]
    found = await near(topics, new, state.question, similarity)
    close = {i for _, near_ids in found for i in near_ids}
    dropped = [n.id for n in new if n.id not in close]
    for node_id in dropped:
        state.tree.nodes[node_id].status = "pruned"
    state.log.emit("steer-focus", f"narrowed to {'; '.join(topics)!r}: kept "
                   f"{sorted(close) or 'none'}, dropped {dropped or 'none'}",
                   node=state.tree.root_id, kept=sorted(close), dropped=dropped)
    return dropped


def _why(refused: list[str], owner: Budget) -> str:
    if not refused:
        return ""
    return BUDGET if owner.available("discoveries") < 1 else REFUSED


def _as_subquestion(topic: str, state: RunState) -> str:
    """A topic as a sub-question of the run: as written where it names something of the
    question's topic or enough on its own, else completed with the question's topic
    ("Prices (What holds back heat pump installations in the UK)?")."""
    return subquestions.as_question(subquestions.completed(topic, state.asked.topic))


def planner_steers(settings: Settings) -> bool:
    """Whether the planner reads steers: any planner but the bundled 270M model (an endpoint,
    or a GGUF file of one's own), which does not follow such a request."""
    tier = settings.tiers.get("planner")
    return tier is not None and (bool(tier.base_url) or tier.model not in (BUNDLED, NO_MODEL))


def open_subquestions(state: RunState) -> list[Node]:
    return [n for n in state.tree.nodes.values() if n.status == "open" and n.depth > 0]


@dataclass(frozen=True)
class Reading:
    """The rule's reading of a steer against the open sub-questions."""

    raised: list[str]  # ids to work on first
    dropped: list[str]  # ids an away clause names
    wanted: list[str]  # topics asked for that no open sub-question covers (MAX_ADDED at most)
    unmatched: list[str]  # topics to skip that no open sub-question is about
    narrowing: list[str]  # topics the research is narrowed to
    set_aside: list[str]  # ids far from every topic it is narrowed to
    named: bool  # whether the steer names anything


async def rule(text: str, opened: list[Node], goal: str, similarity: Similarity) -> Reading:
    """Without a model: each clause's topic names the open sub-questions `near` finds; a
    toward clause raises them (none: the topic is wanted as a new sub-question), an away
    clause drops them (none: unmatched), a clause with no cue raises them; a narrowing clause
    sets aside what is near none of the topics narrowed to."""
    clauses = read_request(text)
    found = await near([c.topic for c in clauses], opened, goal, similarity)
    raised: list[str] = []
    dropped: list[str] = []
    wanted: list[str] = []
    unmatched: list[str] = []
    narrowing: list[str] = []
    kept: set[str] = set()  # the ids near a topic narrowed to
    for clause, (covers, close) in zip(clauses, found, strict=True):
        if clause.way == "away":
            dropped += covers
            unmatched += [] if covers else [clause.topic]
            continue
        raised += covers
        if clause.way == "toward" and not covers and len(wanted) < MAX_ADDED:
            wanted.append(clause.topic)
        if clause.narrows:
            narrowing.append(clause.topic)
            kept |= set(close)
    raised = list(dict.fromkeys(raised))
    set_aside = [n.id for n in opened if narrowing and n.id not in kept]
    return Reading(raised, [d for d in dict.fromkeys(dropped) if d not in raised],
                   list(dict.fromkeys(wanted)), unmatched, narrowing, set_aside, bool(clauses))


async def near(topics: list[str], opened: list[Node], goal: str,
               similarity: Similarity) -> list[tuple[list[str], list[str]]]:
    """For each topic, the open sub-questions that name it, and those near it. A sub-question
    names a topic when BM25 over the open sub-questions scores it at least half as high as
    the best one, on the topic's words that tell them apart (not in every one; of a lone
    sub-question, not in the question), or when the embedder finds them close (COVERS) and
    closer than the topic and the question (MARGIN). Near are these, the ones the embedder
    puts at least NEAR closer to the topic than to the question, and the ones the topic pulls
    the question toward most (the question with the topic, against the question alone: within
    PULL of the best; a one-word topic's own embedding is weak, across languages above all)."""
    if not topics or not opened:
        return [([], []) for _ in topics]
    docs = [Counter(_words(n.question)) for n in opened]
    common = set.intersection(*(set(d) for d in docs)) | \
        (_words(goal) if len(docs) == 1 else set())
    framed = [f"{t} {goal.rstrip('?？')}" for t in topics]
    rows = await similarity.matrix([goal, *topics, *framed],
                                   [goal, *(n.question for n in opened)])
    plain = rows[0][1:]
    found = []
    for i, topic in enumerate(topics):
        row, with_topic = rows[1 + i], rows[1 + len(topics) + i][1:]
        telling = Counter(_words(topic) - common)
        lexical = bm25.scores(telling, docs)
        best = max(lexical)
        base = row[0]
        covers = [n.id for n, lex, sim in zip(opened, lexical, row[1:], strict=True)
                  if (lex > 0 and 2 * lex >= best) or (sim >= COVERS and sim - base >= MARGIN)]
        pulls = [a - b for a, b in zip(with_topic, plain, strict=True)]
        close = [n.id for n, sim, pull in zip(opened, row[1:], pulls, strict=True)
                 if n.id in covers or sim - base >= NEAR or pull >= max(pulls) - PULL]
        found.append((covers, close))
    return found


def _words(text: str) -> set[str]:
    """The words that name something: content words, and names written with a capital
    that a stop-word list would take for function words ("the UK", "US")."""
    names = capitalised_names(text)
    return {_stem(w) for w in terms(text)
            if (w in names or w not in function_words()) and not w.isdigit() and w not in CUES}


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
               similarity: Similarity, cfg: EngineSettings) -> tuple[tuple[str, ...], list[str]]:
    """The new sub-questions that pass a decomposition's checks, while the run has
    discoveries left (one each): a steer never grants more. Each is researched next (it is
    what the person asked for). Returns the ids added and the texts refused."""
    taken = {n.question for n in state.tree.nodes.values()}
    vetted = await judgement.vet_subquestions(similarity, state.asked, asked, taken, cfg)
    refused = [question for question, _ in vetted.rejected]
    for question, why in vetted.rejected:
        state.log.emit("subquestion-refused", f"steer's {question[:80]!r}: {why}")
    added = []
    for sub in vetted.accepted:
        if owner.available("discoveries") < 1 or not owner.spend("discoveries"):
            state.log.emit("subquestion-refused", f"steer's {sub.question[:80]!r}: no "
                           "discovery left in the budget")
            refused.append(sub.question)
            continue
        added.append(state.tree.add_child(state.tree.root_id, sub.question, FIRST_VALUE).id)
    return tuple(added), refused


def _change(state: RunState, change: Change) -> Change:
    """Drop and re-rank as the change says; returns it."""
    for node_id in change.dropped:
        state.tree.nodes[node_id].status = "pruned"
    if change.raised or change.added:
        first = {*change.raised, *change.added}
        for node in open_subquestions(state):
            node.value = FIRST_VALUE if node.id in first else min(node.value, OTHERS_BELOW)
    return change
