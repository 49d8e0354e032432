"""The progress log says more than "Checking: …": conflicting figures, what is still missing,
and deep research requested, applied or refused, with the reason."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from research_core.delivery.publishers import MemoryPublisher
from research_core.loop.memory.evidence import Evidence
from research_core.loop.memory.node_conflicts import find_conflicts
from research_core.search.corpus import CorpusBackend
from research_core.store.sql import SqlStore
from tests.conftest import RecordingBackend, write_doc
from tests.engine_run import Serve, run_engine
from tests.scripted import Script
from tests.test_modes import FOUR

CORRECTION = ("official_statistics", "en", "2026-10-30", "Heat pump sales figures corrected",
              "Heat pump sales figures for September 2026 were corrected to 209,000 units.")


def _item(n: int, source: str, text: str) -> Evidence:
    return Evidence(f"E{n}", "N1", "Q1", source, "t", "u", dt.date(2026, 10, 20), "news", "p",
                    text, 0.9, 0.6, 1.0, 0.8, "", True)


def test_two_sources_stating_different_figures_for_one_period_conflict() -> None:
    """Wool purchase prices and ferry traffic, fields no evaluation suite uses."""
    items = [_item(1, "a", "9月羊毛收购均价为1.86万元/吨，环比持平。"),
             _item(2, "b", "更正：9月羊毛收购均价应为1.74万元/吨。"),
             _item(3, "c", "Ferry fares fell 9.5% to 7,150 euros.")]
    [conflict] = find_conflicts(items)
    assert (conflict.first, conflict.second, conflict.unit, conflict.period) == (
        ("a", "1.86万"), ("b", "1.74万"), "元/吨", "2026-09")
    assert conflict.note("羊毛收购价？") == "Conflict on '羊毛收购价？' (2026-09): 1.86万 元/吨 " \
        "(a) vs 1.74万 元/吨 (b)"
    same = [_item(1, "a", "Ferries carried 214,000 passengers in September 2026."),
            _item(2, "b", "In September 2026 ferries carried 214,000 passengers.")]
    assert find_conflicts(same) == []


def test_the_progress_log_reports_no_conflict_the_answer_would_not() -> None:
    """The answer's rules: a quarter's total and a month's, or two firms' figures, are no
    conflict, however alike the sentences."""
    quarter = _item(1, "a", "Ferry operators carried 474,000 passengers in the third quarter "
                    "of 2026.")
    month = _item(2, "b", "Ferry operators carried 214,000 passengers in September 2026.")
    assert find_conflicts([quarter, month]) == []
    q3 = "passengers in the third quarter of 2026."
    firms = [_item(1, "a", f"Northway Ferries carried 212,000 {q3}"),
             _item(2, "b", f"Islander Lines carried 198,000 {q3}")]
    assert find_conflicts(firms) == []
    revised = _item(3, "c", f"Northway Ferries carried 209,000 {q3}")
    [conflict] = find_conflicts([firms[0], revised])
    assert conflict.figures() == "212,000 passengers (a) vs 209,000 passengers (c)"


async def test_a_conflict_found_during_the_run_is_a_progress_note(
        serve: Serve, corpus_dir: Path, store: SqlStore) -> None:
    write_doc(corpus_dir, "stats-sales-correction-2026-10", CORRECTION)
    backend = RecordingBackend(CorpusBackend.from_folder(corpus_dir))
    publisher = MemoryPublisher()
    await run_engine(serve, Script(), backend, store, publisher=publisher)
    conflicts = [n for n in publisher.progress_notes if n.startswith("Conflict on")]
    assert any("214,000 units" in n and "209,000 units" in n for n in conflicts), \
        publisher.progress_notes
    assert len(conflicts) == len(set(conflicts)), "each conflict is told once"


async def test_deep_requested_and_applied_and_whats_missing_are_told(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    publisher = MemoryPublisher()
    await run_engine(serve, Script(subquestions=FOUR), backend, store, publisher=publisher,
                     steps=6, evidence_per_done_node=9, rounds_per_node=1)
    notes = publisher.progress_notes
    [requested] = [n for n in notes if n.startswith("Deep research requested: ")]
    assert "decided at the next step" in requested
    assert [n for n in notes if n.startswith("Deep research applied: ")]
    assert [n for n in notes if n.startswith("Still missing")]


async def test_deep_refused_is_told_with_the_reason(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    publisher = MemoryPublisher()
    await run_engine(serve, Script(), backend, store, publisher=publisher, mode="deep",
                     deep_allowed=("U-somebody-else",), max_steps=3)
    [refused] = [n for n in publisher.progress_notes if n.startswith("Deep research refused")]
    assert "not allowed deep" in refused
