"""Steering a running research (issue 30): a person's message read at the next step drops,
re-ranks or adds open sub-questions, by the planner (scripted tiers over HTTP) or, without
a usable model, by a rule (BM25 and the real embedder match what a clause names to the open
sub-questions; tests/test_steering_acts.py for what the rule adds and sets aside); the plan
shows the change and who asked; a steer never raises the budget and reaches the planner only as
a person's quoted words. The thread's steers in real Redis (`contract.steers`)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as aioredis

from contract.keys import steer_key
from contract.redis_server import awaited
from contract.requests import CHOOSING, ResearchRequestMsg
from contract.steers import ThreadSteers, add_steer, is_question
from research_core.loop.memory.goal_tree import Node
from research_core.loop.publishing.plan_view import plan_view
from research_core.loop.review.steering import planner_steers, rule
from research_core.policy import Policy
from research_core.protocols import Similarity, Steer
from research_core.settings import Settings, TierSettings
from research_core.store.sql import SqlStore
from tests.conftest import RecordingBackend, scripted_settings
from tests.engine_run import Serve, run_engine
from tests.fakes.openai_server import last_user_text
from tests.playground_stack import real_redis
from tests.scripted import Script
from tests.test_modes import THREE
from workers.plan_blocks import plan_blocks

ALICE = "U0ALICE"
SALES, PRICES, EXPORTS = (q for q, _ in THREE)


class LateSteers:
    """A thread where `steers` are written once the research has split its question (read
    before its second step)."""

    def __init__(self, *steers: Steer, after_calls: int = 2) -> None:
        self.steers = list(steers)
        self.after_calls = after_calls
        self.calls = 0
        self.told: list[tuple[str, str]] = []  # (who, what) of each steer read
        self.closed: list[int] = []  # how many had been read when steering ended

    async def after(self, read: int) -> list[Steer]:
        self.calls += 1
        return self.steers[read:] if self.calls >= self.after_calls and not self.closed \
            else []

    async def tell(self, steer: Steer, text: str) -> None:
        self.told.append((steer.who, text))

    async def close(self, read: int) -> list[Steer]:
        self.closed.append(read)
        return self.steers[read:]


def nodes(*questions: str) -> list[Node]:
    return [Node(f"N{i}", q, 0.8, 1, "N0") for i, q in enumerate(questions, 1)]


async def test_the_rule_drops_what_a_clause_says_to_skip_and_raises_what_it_names(
        similarity: Similarity) -> None:
    opened = nodes("What were heat pump sales in the UK?", "What were heat pump prices?",
                   "What happened to heat pump exports?")
    goal = "How did heat pumps do in the UK and abroad in 2026?"

    async def read(text: str, among: list[Node] = opened) -> tuple[list[str], list[str]]:
        found = await rule(text, among, goal, similarity)
        return found.raised, found.dropped

    assert await read("skip the UK, focus on prices") == (["N2"], ["N1"])
    assert await read("ignore exports and the UK") == ([], ["N3", "N1"])
    assert await read("price first please") == (["N2"], [])  # "price" names "prices"
    assert await read("thanks, looks good") == ([], [])  # names nothing
    assert await read("不要出口", nodes("热泵出口如何变化?", "价格如何变化?")) == ([], ["N1"])
    assert await read("不要出口") == ([], ["N3"])  # the embedder reads across languages


def steer_reply(first: list[str], drop: list[str], add: list[dict[str, Any]]) -> Any:
    def reply(body: dict[str, Any]) -> str:
        return json.dumps({"first": first, "drop": drop, "add": add})
    return reply


async def test_the_planner_reads_a_steer_and_the_plan_shows_who_asked_and_what_changed(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    asked: list[str] = []

    def planner(body: dict[str, Any]) -> str:
        asked.append(last_user_text(body))
        add = [{"question": "How did heat pump installer numbers change in 2026?",
                "value": 0.9}]
        return str(steer_reply(["N4"], ["N2"], add)(body))

    # The split researches its best sub-question (N1, sales) in the same step, before the
    # steer is read; of the rest, the steer drops prices (N2) and puts exports (N4) first,
    # though September's sales (N3) rank above it.
    ranked = [*THREE, ("What were heat pump sales in September 2026?", 0.75)]
    script = Script(subquestions=ranked, rules={"SteerOut": planner})
    steers = LateSteers(Steer(ALICE, "skip prices, focus on exports", "1.5"))
    out = await run_engine(serve, script, backend, store, mode="standard", steers=steers,
                           max_steps=6)
    state = out.state
    [event] = state.log.of_kind("steer")
    assert event.data["how"] == "planner" and event.data["who"] == ALICE
    [(who, told)] = steers.told  # the writer is told what their steer did
    assert who == ALICE and told.startswith("Your steer was read before step 2: added what")
    assert f"• Dropped: {PRICES}" in told and f"• First: {EXPORTS}" in told
    assert steers.closed == [1]  # steering ended when no step was left, the one steer read
    assert state.tree.nodes["N2"].status == "pruned"  # prices dropped
    added = event.data["added"]
    assert added and state.tree.nodes[added[0]].question.startswith("How did heat pump inst")
    focus = [e.data["node"] for e in state.log.of_kind("focus")]
    assert focus[:3] == ["N0", "N1", "N4"], focus  # exports first, though N3 ranked higher
    assert "N2" not in focus
    # the steer reached the planner as a person's words, quoted as data, beside no page text
    [prompt] = asked
    assert "<<<DATA\nskip prices, focus on exports\nDATA>>>" in prompt
    assert "N4: " + EXPORTS in prompt and "Heat pump sales reached" not in prompt
    view = plan_view(state)
    [steer] = [t for t in view.tasks if t.task_id.startswith("steer-")]
    assert steer.asked_by == ALICE and "skip prices, focus on exports" in steer.title
    assert f"First: {EXPORTS}" in steer.details and f"Dropped: {PRICES}" in steer.details
    [prices] = [t for t in view.tasks if t.task_id == "N2"]
    assert (prices.status, prices.output) == ("error", "Dropped, as asked in the thread")
    [card] = [c for c in plan_blocks(view)[0]["tasks"] if c["task_id"] == steer.task_id]
    assert card["output"]["elements"][0]["elements"][0] == {"type": "user", "user_id": ALICE}


async def test_a_steer_never_raises_the_budget(serve: Serve, backend: RecordingBackend,
                                              store: SqlStore) -> None:
    """The planner asks to add two sub-questions when the run has no discovery left: none is
    added, and every axis's total is what the run started with."""
    add = [{"question": f"What did heat pump installers charge in region {c}?", "value": 0.9}
           for c in "AB"]
    script = Script(subquestions=THREE, rules={"SteerOut": steer_reply([], [], add)})
    steers = LateSteers(Steer(ALICE, "also look at installers' charges by region"))
    out = await run_engine(serve, script, backend, store, mode="standard", steers=steers,
                           max_steps=5, discoveries=1)
    [event] = out.state.log.of_kind("steer")
    assert event.data["added"] == []
    refused = [e.message for e in out.state.log.of_kind("subquestion-refused")]
    assert any("no discovery left" in m for m in refused), refused
    totals = out.state.extra.budget["totals"]
    assert totals["steps"] == 5 and totals["discoveries"] == 1


async def test_without_a_usable_planner_reply_the_rule_decides(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    script = Script(subquestions=THREE, rules={"SteerOut": lambda body: "not json at all"})
    steers = LateSteers(Steer(ALICE, "skip prices; exports first"))  # sales is researched
    out = await run_engine(serve, script, backend, store, mode="standard", steers=steers,
                           max_steps=5)  # with the split, before the steer is read
    [event] = out.state.log.of_kind("steer")
    assert event.data["how"] == "rule"
    assert event.data["dropped"] == ["N2"] and event.data["raised"] == ["N3"]
    assert out.state.extra.steers_read == 1


@pytest.fixture
async def redis() -> AsyncIterator[aioredis.Redis]:
    async with real_redis() as client:
        yield client


async def test_a_threads_steers_are_read_once_each_in_order(redis: aioredis.Redis) -> None:
    request = ResearchRequestMsg("red:req:C1:1.0", ALICE, "C1", "1.0", "1.0", "q?", CHOOSING)
    await add_steer(redis, request, Steer(ALICE, "skip the UK", "1.1"))
    await add_steer(redis, request, Steer("U0BOB", "prices first", "1.2"))
    await awaited(redis.rpush(steer_key(request.key), "{not json"))
    source = ThreadSteers(redis, request.key)
    assert [s.text for s in await source.after(0)] == ["skip the UK", "prices first", ""]
    assert [s.who for s in await source.after(1)] == ["U0BOB", ""]
    assert await source.after(3) == []
    assert await redis.ttl(steer_key(request.key)) > 0


def test_the_bundled_model_leaves_steers_to_the_rule() -> None:
    assert not planner_steers(Settings())  # the bundled 270M planner
    own = dataclasses.replace(Settings(), tiers={
        **Settings().tiers, "planner": TierSettings(model="/models/qwen-7b.gguf")})
    assert planner_steers(own)
    assert planner_steers(scripted_settings("http://127.0.0.1:9/v1"))


def test_who_may_steer_is_the_policys_word() -> None:
    assert Policy().may_steer(ALICE, ALICE) and not Policy().may_steer("U0BOB", ALICE)
    assert Policy(steer=("*",)).may_steer("U0BOB", ALICE)
    assert Policy(steer=("U0BOB",)).may_steer("U0BOB", ALICE)
    assert not Policy(steer=("U0BOB",)).may_steer(ALICE, ALICE)  # not the requester then
    assert Policy(admins=("U0CAROL",)).may_steer("U0CAROL", ALICE)
    assert is_question("and what about prices?") and not is_question("skip the UK")
