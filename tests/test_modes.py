"""Modes and the resource owner inside a real run: exhaustion, upgrades, cadence, limits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from research_core.delivery.publishers import MemoryPublisher
from research_core.store.sql import SqlStore
from tests.conftest import RecordingBackend
from tests.engine_run import Serve, run_engine
from tests.scripted import Script
from tests.test_delivery import correction_run

THREE = [("What were heat pump sales figures?", 0.9), ("What were heat pump prices?", 0.8),
         ("What happened to heat pump exports?", 0.7)]
# A split researches its first sub-question in the same step: a fourth keeps the run going
# past the usage reminder (step 3), so that an upgrade asked for there is decided at step 4.
FOUR = [*THREE, ("What were heat pump sales in September 2026?", 0.6)]


async def test_an_exhausted_axis_finalises_with_a_report_not_a_crash(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    out = await run_engine(serve, Script(subquestions=THREE), backend, store, model_calls=9)
    assert out.state.status == "finished" and out.report.text
    assert len(out.state.ledger.entries) <= 9
    finalise = out.state.log.of_kind("finalise")
    assert finalise and "model_calls exhausted" in finalise[0].message
    assert any(e.data.get("event") == "finalising" for e in out.state.log.of_kind("budget"))


async def test_auto_upgrades_to_deep_at_the_reminder_when_coverage_is_open(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    out = await run_engine(serve, Script(subquestions=FOUR), backend, store, steps=6,
                           evidence_per_done_node=9, rounds_per_node=1)
    budget = [e.data.get("event") for e in out.state.log.of_kind("budget")]
    assert "upgrade-requested" in budget and "deep-applied" in budget
    assert out.state.extra.budget["deep_state"] == "deep"
    assert out.state.extra.budget["totals"]["steps"] == 9


async def test_explicit_standard_is_never_upgraded(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    out = await run_engine(serve, Script(subquestions=THREE), backend, store, steps=6,
                           evidence_per_done_node=9, rounds_per_node=1, mode="standard")
    budget = [e.data.get("event") for e in out.state.log.of_kind("budget")]
    assert "deep-applied" not in budget
    assert out.state.extra.budget["deep_state"] == "standard"


async def test_deep_holds_parts_that_are_not_mature(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    """Maturity is the model's judgement: a covered node whose judge still names an unknown
    is held until the report."""
    def unsure(body: dict[str, Any]) -> str:
        return json.dumps({"answered": [0], "unknowns": ["a second, independent source"]})

    publisher = MemoryPublisher()
    out = await run_engine(serve, Script(subquestions=THREE, rules={"CoverageOut": unsure}),
                           backend, store, mode="deep", publisher=publisher, hits_per_query=1,
                           evidence_per_done_node=1)
    assert any(n.status == "done" for n in out.state.tree.nodes.values())  # covered, not mature
    keys = [p.part_key for p in publisher.parts]
    assert keys == ["report"], keys


async def test_a_revision_past_the_limit_is_refused_and_the_run_goes_on(
        serve: Serve, backend: RecordingBackend, store: SqlStore, tmp_path: Path) -> None:
    out, publisher = await correction_run(serve, backend, store, tmp_path,
                                          revisions_per_part=0)
    assert not [p for p in publisher.parts if p.replaces]
    refused = [e for e in out.state.log.of_kind("budget")
               if e.data.get("event") == "revision-refused"]
    assert refused and out.state.status == "finished"
