"""Steering acts (issue 44 item 5): a steer that names something no open sub-question covers
becomes a NEW sub-question, researched next, within the budget; one that narrows ("focus on…",
"only…", 重点) drops the open sub-questions far from what it names; the acknowledgement says
what will happen and the plan shows what did. What a clause names is matched to the open
sub-questions with BM25 and the real bundled embedder (English and Chinese), never a word
list; the run is the real engine on scripted tiers whose planner's reply is unusable (the
bundled model's path: the rule decides)."""

from __future__ import annotations

import dataclasses
from typing import Any

from contract.steers import steer_ack
from research_core.budget.owner import BudgetOwner
from research_core.loop.memory.state import RunState
from research_core.loop.publishing.plan_view import plan_view
from research_core.loop.review import steering
from research_core.models.gateway import Gateway
from research_core.plan import PlanTask
from research_core.protocols import Similarity, Steer
from research_core.settings import BudgetSettings, Settings
from research_core.store.sql import SqlStore
from research_core.text.requests import Clause, read_request
from research_core.wording import CHINESE, Words
from tests.conftest import AS_OF, RecordingBackend
from tests.engine_run import Serve, run_engine
from tests.scripted import Script
from tests.test_steering import LateSteers

ALICE = "U0ALICE"
GOAL = "What holds back heat pump installations in the UK?"
PLAN = [("What permitting delays hold back heat pump installations?", 0.9),
        ("How does rooftop solar compete with heat pumps for installers?", 0.85),
        ("What do heat pumps cost to install compared with gas boilers?", 0.8),
        ("What grants are available for heat pumps?", 0.7)]
PERMITS, SOLAR, COSTS, GRANTS = (q for q, _ in PLAN)
PRICES = "Prices (What holds back heat pump installations in the UK)?"


def unusable(body: dict[str, Any]) -> str:
    return "not json at all"


def steer_task(state: RunState) -> PlanTask:
    [task] = [t for t in plan_view(state).tasks if t.task_id.startswith("steer-")]
    return task


def task_of(state: RunState, question: str) -> PlanTask:
    [task] = [t for t in plan_view(state).tasks if t.title == question]
    return task


async def test_focus_on_what_no_sub_question_covers_adds_it_researched_next(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    """The user's run: Deep, on what holds installations back; "focus on prices" is read
    after the split's first step. Prices become a sub-question of their own, researched at
    the very next step; rooftop solar, far from prices, is dropped; installation costs, close
    to prices, wait."""
    script = Script(subquestions=PLAN, rules={"SteerOut": unusable})
    steers = LateSteers(Steer(ALICE, "focus on prices", "1.5"))
    out = await run_engine(serve, script, backend, store, question=GOAL, mode="deep",
                           steers=steers, max_steps=6)
    state = out.state
    [event] = state.log.of_kind("steer")
    assert event.data["how"] == "rule" and event.data["who"] == ALICE
    [added] = event.data["added"]
    assert state.tree.nodes[added].question == PRICES
    after = [e.data["node"] for e in state.log.events
             if e.kind == "focus" and e.seq > event.seq]
    assert after[0] == added  # researched next
    assert state.tree.nodes[added].status in ("done", "insufficient")
    dropped = {state.tree.nodes[i].question for i in event.data["dropped"]}
    assert SOLAR in dropped and COSTS not in dropped
    assert not {state.tree.nodes[i].question for i in after} & dropped  # never researched
    assert state.tree.nodes[added].value == steering.FIRST_VALUE
    budget = state.extra.budget  # the added sub-question took a discovery: none granted
    deep = BudgetOwner.start(dataclasses.replace(BudgetSettings(), steps=6), "deep")
    assert budget["totals"] == deep.totals
    assert budget["used"]["discoveries"] <= budget["totals"]["discoveries"]

    task = steer_task(state)  # the plan card shows it
    assert task.asked_by == ALICE and task.title == "Steer: “focus on prices”"
    assert task.output == "added what no open sub-question covered; it is researched next"
    assert f"Added: {PRICES}" in task.details and f"Dropped: {SOLAR}" in task.details
    assert "Added as asked in the thread, researched next" in task_of(state, PRICES).details
    assert task_of(state, SOLAR).output == "Dropped, as asked in the thread"
    [(who, told)] = steers.told  # and the writer is told
    assert who == ALICE and told.startswith("Your steer was read before step 2: added what")
    assert f"• Added: {PRICES}" in told


class Thread:
    """Steers written to a run read by `read_steers` directly."""

    def __init__(self, *texts: str) -> None:
        self.steers = [Steer(ALICE, t, f"1.{i}") for i, t in enumerate(texts, 1)]
        self.told: list[str] = []

    async def after(self, read: int) -> list[Steer]:
        return self.steers[read:]

    async def tell(self, steer: Steer, text: str) -> None:
        self.told.append(text)

    async def close(self, read: int) -> list[Steer]:
        return self.steers[read:]


async def read(state: RunState, thread: Thread, similarity: Similarity,
               budget: BudgetSettings | None = None) -> list[steering.Change]:
    owner = BudgetOwner.start(budget or Settings().budget, state.mode, ALICE)
    gateway = Gateway({}, state.ledger, state.log)
    return await steering.read_steers(thread, gateway, state, owner, similarity,
                                      Settings().engine, use_planner=False)


def planned(question: str, plan: list[str], mode: str = "deep") -> RunState:
    state = RunState.new(question, AS_OF, Settings(), mode=mode)
    for i, q in enumerate(plan):
        state.tree.add_child(state.tree.root_id, q, 0.9 - 0.05 * i)
    return state


async def test_a_steer_in_chinese_adds_and_narrows_and_the_plan_says_so_in_chinese(
        similarity: Similarity) -> None:
    state = planned("什么阻碍了英国热泵的安装？", ["审批延误如何阻碍热泵安装？",
                                           "屋顶太阳能如何与热泵争夺安装工？",
                                           "热泵安装费用与燃气锅炉相比如何？"])
    thread = Thread("重点看价格，不要管屋顶太阳能")
    [change] = await read(state, thread, similarity)
    [added] = change.added
    assert state.tree.nodes[added].question == "价格（什么阻碍了英国热泵的安装）？"
    assert state.tree.next_open(breadth_first=True) is state.tree.nodes[added]
    assert state.tree.nodes["N2"].status == "pruned"  # rooftop solar: skipped and far
    assert state.tree.nodes["N1"].status == "pruned"  # permitting: far from prices
    task = steer_task(state)
    assert task.output == "新增了未完成的子问题都未涵盖的内容，接下来就研究它"
    assert "新增：价格（什么阻碍了英国热泵的安装）？" in task.details
    [told] = thread.told
    assert told.startswith("你的引导已在第 1 步之前读取：新增了")


async def test_a_narrowing_steer_keeps_what_is_near_and_an_ordering_one_drops_nothing(
        similarity: Similarity) -> None:
    state = planned(GOAL, [q for q, _ in PLAN])
    await read(state, Thread("only costs"), similarity)
    status = {n.question: n.status for n in state.tree.nodes.values() if n.depth}
    assert status == {PERMITS: "pruned", SOLAR: "pruned", COSTS: "open", GRANTS: "open"}
    assert (first := state.tree.next_open()) is not None and first.question == COSTS

    state = planned(GOAL, [q for q, _ in PLAN])
    [change] = await read(state, Thread("grants first please"), similarity)
    assert change.dropped == () and change.added == ()
    assert [state.tree.nodes[i].question for i in change.raised] == [GRANTS]
    assert (first := state.tree.next_open()) is not None and first.question == GRANTS


async def test_without_a_discovery_left_nothing_is_added_nor_set_aside_and_it_says_so(
        similarity: Similarity) -> None:
    state = planned(GOAL, [q for q, _ in PLAN], mode="standard")
    budget = dataclasses.replace(Settings().budget, discoveries=1)
    thread = Thread("focus on prices")
    owner = BudgetOwner.start(budget, "standard", ALICE)
    assert owner.spend("discoveries")  # the split took the one discovery
    gateway = Gateway({}, state.ledger, state.log)
    [change] = await steering.read_steers(thread, gateway, state, owner, similarity,
                                          Settings().engine, use_planner=False)
    assert change.added == () and change.wanted == ("prices",) and change.why == "budget"
    assert change.dropped == ()  # prices are not researched: the plan is not narrowed
    assert all(n.status == "open" for n in state.tree.nodes.values() if n.depth)
    task = steer_task(state)
    assert task.output == ("asked; no open sub-question matched what they named, so the plan "
                           "stays")
    assert task.details == ("Not added, the run's budget has no room for a new sub-question: "
                            "prices",)
    assert owner.totals["discoveries"] == 1  # never raised


async def test_what_a_steer_asks_that_changes_nothing_is_said(similarity: Similarity) -> None:
    state = planned(GOAL, [q for q, _ in PLAN])
    await read(state, Thread("skip Germany", "thanks, looks good"), similarity)
    skipped, thanked = [t for t in plan_view(state).tasks if t.task_id.startswith("steer-")]
    assert skipped.details == ("Nothing to drop: no open sub-question is about Germany",)
    assert thanked.output == "asked; it names nothing the plan could change, so the plan stays"
    assert all(n.status == "open" for n in state.tree.nodes.values() if n.depth)


def test_the_grammar_reads_each_clauses_way_and_what_it_names() -> None:
    assert read_request("skip the UK, focus on prices") == [
        Clause("away", False, "UK"), Clause("toward", True, "prices")]
    assert read_request("focus on prices instead of rooftop solar") == [
        Clause("toward", True, "prices"), Clause("away", False, "rooftop solar")]
    assert read_request("skip exports but prices") == [
        Clause("away", False, "exports"), Clause("toward", False, "prices")]
    assert read_request("look at how installers are trained") == [
        Clause("toward", False, "installers are trained")]
    assert read_request("thanks, looks good") == []
    assert read_request("重点看价格，不要管屋顶太阳能了") == [
        Clause("toward", True, "价格"), Clause("away", False, "屋顶太阳能")]
    assert read_request("不是太阳能，而是价格") == [
        Clause("away", False, "太阳能"), Clause("toward", False, "价格")]


def test_the_acknowledgement_says_what_will_happen() -> None:
    w = Words()
    assert steer_ack("focus on prices", w) == (
        "Noted: at its next step the research will research “prices” next, as a new "
        "sub-question if no open one covers it, and drop the open sub-questions far from it. "
        "I'll tell you here what it changed.")
    assert steer_ack("skip exports <@U0BOB> deals", w) == (  # quoted as text, never markup
        "Noted: at its next step the research will drop the open sub-questions about "
        "“exports &lt;@U0BOB&gt; deals”. I'll tell you here what it changed.")
    assert steer_ack("thanks!", w) == ("Noted, but this names nothing the plan could change, "
                                       "so the plan stays as it is.")
    assert steer_ack("what about installers?", w).endswith(
        "Your question is also answered once the research is done.")
    assert steer_ack("只看出口", Words(CHINESE)).startswith("已收到：研究将在下一步优先研究“出口”")


async def test_a_topic_too_short_to_research_is_not_added_and_it_says_so(
        similarity: Similarity) -> None:
    state = planned(GOAL, [q for q, _ in PLAN])
    [change] = await read(state, Thread("focus on heat"), similarity)  # "Heat?"
    assert change.added == () and change.wanted == ("heat",) and change.why == "refused"
    assert change.dropped == ()  # the focus is not researched: the plan is not narrowed
    assert steer_task(state).details == (
        "Not added, it is not a sub-question the plan takes: heat",)


async def test_a_narrowing_holds_for_what_the_run_adds_later(similarity: Similarity) -> None:
    """After "focus on prices", a sub-question the run adds to the root (a gap, a facet of
    the evidence) far from prices is dropped before a step is spent on it; one near prices,
    and a split of the prices sub-question, stay."""
    state = planned(GOAL, [q for q, _ in PLAN])
    thread = Thread("focus on prices")
    [change] = await read(state, thread, similarity)
    assert change.narrowed == ("prices",)
    [added] = change.added
    solar = state.tree.add_child(state.tree.root_id, "How fast are rooftop solar panels being "
                                 "installed in Europe?", 0.8)
    tariffs = state.tree.add_child(state.tree.root_id, "How did heat pump retail prices and "
                                   "tariffs change in 2026?", 0.7)
    split = state.tree.add_child(added, "How did installers' labour charges change?", 0.6)
    thread.steers = thread.steers[:1]  # nothing new written: the next step's read
    assert await read(state, thread, similarity) == []
    assert state.tree.nodes[solar.id].status == "pruned"
    assert state.tree.nodes[tariffs.id].status == "open"
    assert state.tree.nodes[split.id].status == "open"
    assert task_of(state, solar.question).output == "Dropped, as asked in the thread"
    before = len(state.log.of_kind("steer-focus"))
    await read(state, thread, similarity)  # each sub-question is judged once
    assert len(state.log.of_kind("steer-focus")) == before == 1


async def test_a_chinese_focus_keeps_the_english_sub_question_it_names(
        similarity: Similarity) -> None:
    """As the bundled model's run split "是什么阻碍了热泵的安装？" (facets named by English and
    Chinese titles): "重点看价格" keeps the price tracker's sub-question and drops solar."""
    tracker = "Heat Pump Price Tracker, October 2026: Equipment Cheaper, Installation Dearer"
    solar = "Residential Rooftop Solar in Europe, 2026: Installations Slow as Feed-in Support"
    state = planned("是什么阻碍了热泵的安装？", [tracker, solar])
    [change] = await read(state, Thread("重点看价格"), similarity)
    status = {n.question: n.status for n in state.tree.nodes.values() if n.depth}
    assert status[tracker] == "open" and status[solar] == "pruned"
    assert change.narrowed == ("价格",) and len(change.added) == 1
