"""A watch cycle in the engine: a finished run researched again as of a later date, over a
corpus whose late documents (a `corpus_late/` folder) appear between two cycles: one cycle
revises the part the late document changes, the next finds nothing and changes nothing."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from research_core.delivery.publishers import MemoryPublisher
from research_core.loop.engine import Engine
from research_core.models.tier_factory import aclose_tiers, build_tiers
from research_core.store.restore import load_state
from research_core.store.sql import SqlStore
from tests.conftest import AS_OF, RecordingBackend, scripted_settings, write_doc
from tests.engine_run import Serve, default_similarity, run_engine
from tests.scripted import Script

LATE_ID = "stats-sales-correction-2026-11"
LATE = ("official_statistics", "en", "2026-11-05", "Heat pump sales figures corrected",
        "Heat pump sales figures for September 2026 were corrected to 209,000 units.")


def watch_script() -> Script:
    return Script(subquestions=[("What were heat pump sales figures?", 0.9),
                                ("What were heat pump prices?", 0.7)])


def late_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus_late"
    folder.mkdir()
    write_doc(folder, LATE_ID, LATE)
    return folder


async def test_a_cycle_with_a_late_document_revises_and_one_without_changes_nothing(
        serve: Serve, backend: RecordingBackend, store: SqlStore, tmp_path: Path) -> None:
    publisher = MemoryPublisher()
    done = await run_engine(serve, watch_script(), backend, store, publisher=publisher)
    assert done.state.status == "finished"
    first_parts = dict(publisher.latest())
    settings = scripted_settings(done.server.base_url)
    tiers = build_tiers(settings)
    try:
        engine = Engine.build(settings, tiers, backend, store,
                              similarity=default_similarity(), publisher=publisher)
        backend.inner.add_folder(late_folder(tmp_path))  # appears between the run and cycle 1
        searched = len(backend.requests)
        day1 = AS_OF + dt.timedelta(days=7)
        state = await load_state(store, done.state.run_id, settings)
        revised = await engine.watch_cycle(state, day1)

        cycle_requests = backend.requests[searched:]
        assert cycle_requests, "the cycle searched"
        assert all(r.time_range.since == AS_OF + dt.timedelta(days=1)
                   and r.time_range.until == day1 for r in cycle_requests)
        assert [p.part_key for p in revised], "the late correction revised a part"
        # every part that stated the corrected figure is revised, and no other (issue 25)
        stated = {k for k, p in first_parts.items() if "214,000" in p.text and k != "report"}
        assert {p.part_key for p in revised} == stated
        for part in revised:
            assert part.reason.startswith(f"update {day1.isoformat()}: ")
            assert LATE_ID in part.reason and "209,000" in part.text
            assert part.replaces == first_parts[part.part_key].channel_id
        assert state.as_of == day1 and state.status == "finished"

        day2 = day1 + dt.timedelta(days=7)
        state = await load_state(store, done.state.run_id, settings)
        assert state.as_of == day1, "the cycle's date was checkpointed"
        searched = len(backend.requests)
        assert await engine.watch_cycle(state, day2) == []
        assert all(r.time_range.since == day1 + dt.timedelta(days=1)
                   for r in backend.requests[searched:])
        assert "nothing changed since" in "\n".join(e.message for e in state.log.events)
    finally:
        await aclose_tiers(tiers)
