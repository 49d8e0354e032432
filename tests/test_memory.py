"""Working-memory cap, lossless summaries, and reflection-driven backtracking."""

from __future__ import annotations

import json
from typing import Any

from research_core.loop.memory.evidence import Evidence
from research_core.loop.memory.memory import WorkingMemory, facts_of, missing_facts
from research_core.settings import EngineSettings
from research_core.store.models import EvidenceRow, NodeRow, SummaryRow
from research_core.store.sql import SqlStore
from tests.conftest import RecordingBackend
from tests.engine_run import Serve, run_engine
from tests.fakes.openai_server import last_user_text
from tests.scripted import Script, field_of


def _item(n: int, text: str = "sales 1,234 units on 2026-09-30") -> Evidence:
    return Evidence(f"E{n}", "N1", "Q1", f"src-{n}", "t", "u", None, "news", "p", text,
                    0.9, 0.65, 1.0, 0.9, "r", True)


def test_working_memory_holds_at_most_30_items_by_default() -> None:
    memory = WorkingMemory(cap=EngineSettings().working_memory_cap)
    assert all(memory.add(_item(n)) for n in range(30))
    assert memory.full and not memory.add(_item(31))
    assert len(memory.items) == 30


def test_missing_facts_finds_lost_numbers_dates_and_ids() -> None:
    required = facts_of([_item(1)])
    assert required == {"1234", "2026-09-30", "src-1"}
    assert missing_facts("src-1 sold 1234 units on 2026-09-30", required) == []
    assert missing_facts("src-1 sold 1,234 units", required) == ["2026-09-30"]


async def test_cap_forces_a_summary_rewrite_mid_question(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    out = await run_engine(serve, Script(), backend, store, working_memory_cap=2,
                           evidence_per_done_node=9, max_steps=3)
    assert any("cap of 2" in e.message for e in out.state.log.of_kind("memory"))
    summary = out.state.summaries["N1"]
    assert summary.version >= 2
    kept = [e for e in out.state.kept() if e.node_id == "N1"]
    assert len(kept) >= 3
    assert not missing_facts(summary.text(), facts_of(kept))


def _lossy(body: dict[str, Any]) -> str:
    return json.dumps({"conclusion": "Sales went up.", "evidence": ["prices changed"],
                       "open_doubts": []})


async def test_lossy_summary_is_caught_retried_and_replaced_losslessly(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    script = Script(rules={"MemorySummaryOut": _lossy})  # the model summarises every note
    out = await run_engine(serve, script, backend, store, summary_model_min_chars=0)
    calls = out.server.requests_for("MemorySummaryOut")
    assert "dropped these numbers" in last_user_text(calls[1])
    for summary in out.state.summaries.values():
        assert summary.lossless_fallback
        items = [e for e in out.state.kept() if e.node_id == summary.node_id]
        assert not missing_facts(summary.text(), facts_of(items))
    rows = await store.rows(SummaryRow, out.state.run_id)
    assert rows and all(r.lossless_fallback for r in rows)


async def test_a_corrected_summary_after_the_retry_is_accepted(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    seen: list[int] = []
    default = Script().default_MemorySummaryOut

    def once_lossy(body: dict[str, Any]) -> str:
        seen.append(1)
        return _lossy(body) if len(seen) % 2 == 1 else default(body)

    out = await run_engine(serve, Script(rules={"MemorySummaryOut": once_lossy}),
                           backend, store, summary_model_min_chars=0)
    assert out.state.summaries
    assert not any(s.lossless_fallback for s in out.state.summaries.values())


async def test_drift_at_reflection_backtracks_and_drops_the_branch_evidence(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    def reflect(body: dict[str, Any]) -> str:
        drifted = "prices" in field_of(body, "Current sub-question")
        return json.dumps({"answers_goal": False, "off_goal": [], "neglected": "",
                           "drifted": drifted})

    # The embedder must agree that the branch is far from the goal: with the threshold at
    # 0.99 it agrees about anything (tests/test_model_checks.py has the default refusing).
    # A split researches its first sub-question in the same step, so N2 ("prices") is
    # researched at step 2: the reflection comes every 2 steps to see it.
    out = await run_engine(serve, Script(rules={"ReflectionOut": reflect}), backend, store,
                           off_goal_similarity=0.99, reflect_every_steps=2)
    assert out.state.log.of_kind("backtrack")
    assert out.state.tree.nodes["N2"].status == "pruned"
    branch = [e for e in out.state.evidence if e.node_id == "N2"]
    assert branch and not any(e.kept for e in branch)
    dropped = [e for e in branch if "off-branch" in e.discarded_reason]
    assert dropped, "the branch had kept evidence and the backtrack dropped it"
    assert "N2" not in out.state.summaries
    rows = await store.rows(EvidenceRow, out.state.run_id)
    assert not any(r.kept for r in rows if r.node_id == "N2")
    nodes = {n.node_id: n.status for n in await store.rows(NodeRow, out.state.run_id)}
    assert nodes["N2"] == "pruned" and nodes["N1"] == "done"
    cited_nodes = {e.node_id for e in out.state.kept()
                   if e.source_id in out.report.cited_source_ids()}
    assert "N2" not in cited_nodes


async def test_reflection_off_goal_ids_are_discarded(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    def reflect(body: dict[str, Any]) -> str:
        ids = [line.split()[0] for line in last_user_text(body).splitlines()
               if line.startswith("E") and "blog" in line]
        return json.dumps({"answers_goal": True, "off_goal": ids[:1], "neglected": "",
                           "drifted": False})

    out = await run_engine(serve, Script(rules={"ReflectionOut": reflect}), backend, store,
                           reflect_every_steps=2, off_goal_similarity=0.99)
    off = [e for e in out.state.evidence
           if e.discarded_reason == "off-goal (reflection, embedder agrees)"]
    assert off and all(e.source_id.startswith("blog") for e in off)



async def test_short_notes_are_kept_as_the_summary_without_a_model_call_in_standard(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    out = await run_engine(serve, Script(), backend, store, mode="standard")
    assert not out.server.requests_for("MemorySummaryOut")
    assert out.state.summaries
    for summary in out.state.summaries.values():  # the notes themselves: nothing lost
        items = [e for e in out.state.kept() if e.node_id == summary.node_id]
        assert summary.lossless_fallback
        assert not missing_facts(summary.text(), facts_of(items))
    assert any("kept as the summary, no model call" in e.message
               for e in out.state.log.of_kind("memory"))
