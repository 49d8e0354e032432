"""Answer parts and progress as two paths, revisions in place, and the outbox."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from research_core.delivery.publications import Delivery, Publication
from research_core.delivery.publishers import MemoryPublisher
from research_core.loop.memory.memory import Summary
from research_core.loop.publishing import cadence
from research_core.runlog import RunLog
from research_core.store.models import PublicationRow
from research_core.store.sql import SqlStore
from tests.conftest import RecordingBackend, write_doc
from tests.engine_run import Outcome, Serve, run_engine
from tests.scripted import Script


async def test_parts_go_out_as_nodes_finish_and_the_report_comes_last(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    publisher = MemoryPublisher()
    out = await run_engine(serve, Script(), backend, store, publisher=publisher)
    keys = [p.part_key for p in publisher.parts]
    assert keys[-1] == "report" and len(keys) >= 2
    assert all(p.sources for p in publisher.parts)
    assert any(n.startswith("Checking:") for n in publisher.progress_notes)
    rows = await store.rows(PublicationRow, out.state.run_id)
    parts = {(r.part_key, r.version) for r in rows if r.kind == "part"}
    assert parts == {(k, 1) for k in keys}
    assert {r.channel_id for r in rows if r.kind == "part"} == {
        p.channel_id for p in publisher.parts}


class LateDocs(MemoryPublisher):
    """Makes a folder searchable right after the first answer part, like a late correction."""

    def __init__(self, backend: RecordingBackend, folder: Path) -> None:
        super().__init__()
        self.backend, self.folder = backend, folder

    async def answer_part(self, run_id: str, part_key: str, text: str, sources: list[str],
                          replaces: str | None = None, reason: str = "",
                          key: str = "") -> str | None:
        if not self.parts:
            self.backend.inner.add_folder(self.folder)
        return await super().answer_part(run_id, part_key, text, sources, replaces, reason)


async def correction_run(serve: Serve, backend: RecordingBackend, store: SqlStore,
                         tmp_path: Path, **overrides: Any) -> tuple[Outcome, LateDocs]:
    """A run on sales figures during which a correction of a published figure appears."""
    late = tmp_path / "late"
    late.mkdir()
    write_doc(late, "stats-sales-correction-2026-10", (
        "official_statistics", "en", "2026-10-30", "Heat pump sales figures corrected",
        "Heat pump sales figures for September 2026 were corrected to 209,000 units."))
    publisher = LateDocs(backend, late)
    script = Script(subquestions=[("What were heat pump sales figures?", 0.9),
                                  ("What were heat pump sales figures corrected?", 0.8),
                                  ("What were heat pump prices?", 0.7)])
    out = await run_engine(serve, script, backend, store, publisher=publisher, **overrides)
    return out, publisher


async def test_later_evidence_revises_a_published_part_in_place(
        serve: Serve, backend: RecordingBackend, store: SqlStore, tmp_path: Path) -> None:
    out, publisher = await correction_run(serve, backend, store, tmp_path)
    revised = [p for p in publisher.parts if p.replaces]
    assert revised, [p.part_key for p in publisher.parts]
    first = next(p for p in publisher.parts if p.part_key == revised[0].part_key)
    assert revised[0].replaces == first.channel_id
    assert "stats-sales-correction-2026-10" in revised[0].reason
    assert "209,000" in revised[0].text
    rows = await store.rows(PublicationRow, out.state.run_id)
    assert any(r.version == 2 and r.part_key == revised[0].part_key for r in rows)


async def test_a_correction_kept_under_another_sub_question_revises_the_part_it_corrects(
        serve: Serve, backend: RecordingBackend, store: SqlStore, tmp_path: Path) -> None:
    """The notice is found while researching the announcements, not the sales figures: it
    still revises the sales part, whose figure it corrects (issue 25)."""
    late = tmp_path / "late"
    late.mkdir()
    write_doc(late, "stats-notice-2026-10", (
        "official_statistics", "en", "2026-10-30", "Statistics office notices, October 2026",
        "Notice: heat pump sales reached 209,000 units in September 2026; the 214,000 units "
        "first published counted returns twice."))
    publisher = LateDocs(backend, late)
    script = Script(subquestions=[
        ("What were heat pump sales figures?", 0.9),
        ("What did the statistics office announce about heat pumps in 2026?", 0.8)])
    out = await run_engine(serve, script, backend, store, publisher=publisher)
    revised = [p for p in publisher.parts if p.replaces]
    assert revised, [(p.part_key, p.text[:60]) for p in publisher.parts]
    assert revised[0].reason.startswith("corrected by") and "209,000" in revised[0].text
    node = out.state.tree.nodes[revised[0].part_key]
    assert "sales figures" in node.question
    assert any(e.source_id == "stats-notice-2026-10" and e.node_id != node.id
               for e in out.state.kept())


async def test_the_outbox_keeps_a_resumed_run_from_publishing_twice(store: SqlStore) -> None:
    publisher = MemoryPublisher()
    first = Delivery("run1", publisher, store, RunLog())
    await first.part("N1", "Sales rose [1].", ["a"])
    again = Delivery("run1", publisher, store, RunLog())
    sent = await again.part("N1", "Sales rose [1].", ["a"])
    assert len(publisher.parts) == 1
    assert isinstance(sent, Publication) and sent.channel_id == "m1"
    assert again.log.of_kind("outbox")


def test_a_revision_shows_the_evidence_that_revised_it_first() -> None:
    lines = [f"E{n} [old-{n}; p; 2026-10-01] Sales were {n},000 units." for n in range(1, 9)]
    lines.append("E9 [late-fix; p; 2026-10-30] Sales were corrected to 209,000 units.")
    summary = Summary("N1", "Sales?", "Sales were corrected.", lines, [], ["old-1", "late-fix"])
    assert "209,000" not in cadence.part_text(summary)
    shown = cadence.part_text(summary, frozenset({"late-fix"})).splitlines()
    assert shown[2] == "• E9 [late-fix; p; 2026-10-30] Sales were corrected to 209,000 units."
