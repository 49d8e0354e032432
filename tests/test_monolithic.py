"""The naive monolithic baseline with a scripted strong tier behind the local OpenAI server."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from research_core.evaluation.monolithic import MonolithicAgent, prompt_chars
from research_core.evaluation.replay import live_trace, stored_trace
from research_core.loop.memory.state import RunState
from research_core.loop.report.reporter import Report
from research_core.models.tier_factory import aclose_tiers, build_tiers
from research_core.store.models import QueryRow, ReportRow
from research_core.store.sql import SqlStore
from tests.conftest import AS_OF, RecordingBackend, scripted_settings
from tests.engine_run import QUESTION, Serve
from tests.fakes.openai_server import FakeOpenAIServer, Reply, last_user_text, schema_name

QUERIES = ["heat pump sales", "heat pump prices", "热泵 出口", "heat pump sales boom",
           "heat pump prices guide", "heat pump statistics"]
Rule = Callable[[dict[str, Any]], "str | Reply"]


@dataclass
class Outcome:
    state: RunState
    report: Report
    server: FakeOpenAIServer


def searching(queries: list[str] = QUERIES) -> Rule:
    """A decision rule that always searches, cycling through `queries`."""
    cycle = itertools.cycle(queries)
    return lambda body: json.dumps({"action": "search", "query": next(cycle),
                                    "reason": "need more"})


def cite_first(body: dict[str, Any]) -> str:
    return "Heat pump sales rose 12.4% in September 2026 [1].\n\nPrices fell [2]."


def tier(decide: Rule, answer: Rule = cite_first) -> Rule:
    return lambda body: decide(body) if schema_name(body) == "NextAction" else answer(body)


async def run_mono(serve: Serve, handler: Rule, backend: RecordingBackend, store: SqlStore,
                   context_chars: int | None = None, **engine: Any) -> Outcome:
    server = await serve(handler)
    settings = scripted_settings(server.base_url, **engine)
    tiers = build_tiers(settings)
    state = RunState.new(QUESTION, AS_OF, settings)
    agent = MonolithicAgent(settings, tiers, backend, store, context_chars=context_chars)
    try:
        report = await agent.run(state)
    finally:
        await aclose_tiers(tiers)
    return Outcome(state, report, server)


def largest_prompt_per_step(state: RunState) -> dict[int, int]:
    largest: dict[int, int] = {}
    for e in state.ledger.entries:
        largest[e.step] = max(largest.get(e.step, 0), e.prompt_tokens)
    return largest


def messages(o: Outcome) -> list[str]:
    return [e.message for e in o.state.log.events]


async def test_the_prompt_grows_turn_by_turn(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    out = await run_mono(serve, tier(searching()), backend, store, max_steps=6)
    largest = largest_prompt_per_step(out.state)
    assert sorted(largest) == [1, 2, 3, 4, 5, 6]
    growth = [largest[step] for step in sorted(largest)]
    assert all(a < b for a, b in itertools.pairwise(growth)), growth
    assert {e.tier for e in out.state.ledger.entries} == {"reporter"}
    assert [q.step for q in out.state.queries] == [1, 2, 3, 4, 5, 6]
    assert len(backend.requests) == 6, "one backend query per turn: no variants, no cache"
    assert any(m.startswith("step limit 6") for m in messages(out))


async def test_it_reads_full_bodies_and_keeps_the_whole_history(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    out = await run_mono(serve, tier(searching()), backend, store, max_steps=3)
    third = last_user_text(out.server.requests_for("NextAction")[2])
    assert "Q3 2026 heat pump sales were 548,000 units." in third  # a body's 2nd paragraph
    assert "Turn 1 — decision: search 'heat pump sales'" in third
    assert "Turn 2 — decision: search 'heat pump prices'" in third
    assert "(read in turn 1)" in third


async def test_it_stops_when_the_model_answers(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    decisions = iter([{"action": "search", "query": "heat pump sales", "reason": "start"},
                      {"action": "answer", "query": "none", "reason": "enough"}])
    out = await run_mono(serve, tier(lambda body: json.dumps(next(decisions))), backend, store,
                         max_steps=8)
    assert out.state.step == 2 and len(out.state.queries) == 1
    assert len(out.server.requests_for("NextAction")) == 2
    assert "turn 2: the model answers (enough)" in messages(out)
    assert out.state.status == "finished" and not out.report.fallback


async def test_answering_before_reading_anything_is_refused(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    answer = json.dumps({"action": "answer", "query": "none", "reason": "I know"})
    out = await run_mono(serve, tier(lambda body: answer), backend, store, max_steps=4)
    retry = last_user_text(out.server.requests_for("NextAction")[1])
    assert "nothing has been read yet" in retry
    assert [q.text for q in out.state.queries] == ["heat pump sales prices move 2026"]
    assert out.state.step == 2


async def test_the_context_guard_stops_the_run(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    budget = 3000
    out = await run_mono(serve, tier(searching()), backend, store, context_chars=budget,
                         max_steps=10)
    full = [m for m in messages(out) if m.startswith("context full")]
    assert len(full) == 1, messages(out)
    assert 1 < out.state.step < 10 and out.state.evidence
    for request in out.server.requests:
        text = "\n".join(m["content"] for m in request["messages"])
        assert prompt_chars(text) <= budget
    assert out.report.cited and not out.report.fallback


async def test_malformed_action_json_falls_back_and_the_run_finishes(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    out = await run_mono(serve, tier(lambda body: "{not json"), backend, store, max_steps=6)
    assert [q.text for q in out.state.queries] == ["heat pump sales prices move 2026"]
    assert len(out.state.log.of_kind("fallback")) == 2  # search once, then answer
    assert out.state.step == 2 and out.state.status == "finished"
    outcomes = [e.outcome for e in out.state.ledger.entries if e.purpose == "mono_decide"]
    assert outcomes == ["invalid-1", "invalid-2"] * 2
    assert out.report.cited and not out.report.fallback


async def test_the_answer_cites_pages_it_read(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    out = await run_mono(serve, tier(searching()), backend, store, max_steps=2)
    numbers = {s.number for s in out.report.sources}
    assert out.report.cited == [1, 2] and set(out.report.cited) <= numbers
    read = [e.source_id for e in out.state.evidence]
    assert out.report.cited_source_ids() == read[:2]
    assert "[1]" in out.report.render().split("Sources", 1)[1]


async def test_unresolvable_citations_fall_back_to_the_pages_read(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    out = await run_mono(serve, tier(searching(), lambda body: "Sales rose 12.4% [42]."),
                         backend, store, max_steps=2)
    answers = out.server.requests_for("")
    assert len(answers) == 2 and "do not exist" in last_user_text(answers[1])
    assert out.report.fallback
    assert set(out.report.cited) == {s.number for s in out.report.sources}


async def test_the_run_is_stored_like_a_hierarchical_one(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    out = await run_mono(serve, tier(searching()), backend, store, max_steps=3)
    rid = out.state.run_id
    assert len(await store.rows(QueryRow, rid)) == 3
    (row,) = await store.rows(ReportRow, rid)
    assert row.cited == out.report.cited
    assert all(e.kept and e.score == 0.0 for e in out.state.evidence)
    assert await stored_trace(store, rid) == live_trace(out.state, out.report)


async def test_a_query_that_repeats_the_task_is_refused(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    echo = json.dumps({"action": "search", "query": "next_action", "reason": "none"})
    out = await run_mono(serve, tier(lambda body: echo), backend, store, max_steps=1)
    retry = last_user_text(out.server.requests_for("NextAction")[1])
    assert "repeats the task" in retry
    assert [q.text for q in out.state.queries] == ["heat pump sales prices move 2026"]
