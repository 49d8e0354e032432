"""Query de-duplication and paragraph-level deep reading, with the real offline embedder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from research_core.loop.gathering.admission import stated_figures
from research_core.protocols import Similarity
from research_core.runlog import RunLog
from research_core.search.reading import deep_read
from research_core.search.tool import SearchTool
from research_core.settings import EngineSettings
from research_core.store.sql import SqlStore
from tests.conftest import RecordingBackend, write_doc
from tests.engine_run import Serve, run_engine
from tests.scripted import Script

LONG_PAGE = [
    "The European heat pump market report covers fourteen markets in 2026.",
    "Sales fell in the first quarter after Vestmark cut its grant.",
    "The second quarter brought a recovery helped by the Sudria bonus.",
    "Refrigerant choice shifted towards propane models during the year.",
    "Chinese exporters increased their share of imports into Europe.",
    "Compressor prices fell as component makers expanded capacity.",
    "Installer day rates rose 12.5% to 585 euros as the installer shortage deepened.",
    "Installer waiting times grew from seven to eleven weeks across the markets.",
    "Distributor stock levels normalised by the end of the summer.",
    "The association expects modest growth in the coming year.",
]


def _tool(backend: RecordingBackend, store: SqlStore, similarity: Similarity,
          log: RunLog) -> SearchTool:
    return SearchTool(backend, store, EngineSettings(), log, similarity)


async def test_a_paraphrased_query_is_dropped_and_a_distinct_one_kept(
        backend: RecordingBackend, store: SqlStore, similarity: Similarity) -> None:
    log = RunLog()
    tool = _tool(backend, store, similarity, log)
    earlier = ["heat pump prices in Europe 2026"]
    kept = await tool.dedupe(["heat pump prices in Europe in 2026",
                              "installer shortage waiting times"], earlier)
    assert kept == ["installer shortage waiting times"]
    (event,) = log.of_kind("dedup")
    assert event.data["duplicate_of"] == "heat pump prices in Europe 2026"


async def test_queries_one_key_word_apart_are_both_kept(
        backend: RecordingBackend, store: SqlStore, similarity: Similarity) -> None:
    """Their embeddings score 0.89–0.90, above the threshold; their words differ both ways."""
    log = RunLog()
    tool = _tool(backend, store, similarity, log)
    earlier = ["heat pump sales Germany 2026"]
    kept = await tool.dedupe(["heat pump prices Germany 2026", "heat pump sales France 2026",
                              "heat pump sales Germany in 2026"], earlier)
    assert kept == ["heat pump prices Germany 2026", "heat pump sales France 2026"]
    assert [e.data["duplicate_of"] for e in log.of_kind("dedup")] == earlier


async def test_chinese_near_duplicates_are_dropped_but_related_queries_kept(
        backend: RecordingBackend, store: SqlStore, similarity: Similarity) -> None:
    tool = _tool(backend, store, similarity, RunLog())
    kept = await tool.dedupe(["碳酸锂价格的走势", "氢氧化锂价格走势"], ["碳酸锂价格走势"])
    assert kept == ["氢氧化锂价格走势"]


async def test_engine_sends_only_distinct_variants(
        serve: Serve, backend: RecordingBackend, store: SqlStore,
        similarity: Similarity) -> None:
    def plan(body: dict[str, Any]) -> str:
        return json.dumps({"queries": ["heat pump sales 2026", "heat pump sales in 2026",
                                       "heat pump equipment prices"]})

    out = await run_engine(serve, Script(rules={"QueryPlan": plan}), backend, store,
                           similarity=similarity, max_steps=2)
    sent = sorted(r.query for r in backend.requests)  # a batch runs concurrently
    assert sent == ["heat pump equipment prices", "heat pump sales 2026"]
    assert out.state.log.of_kind("dedup")


async def test_deep_read_keeps_the_one_or_two_closest_paragraphs(
        backend: RecordingBackend, similarity: Similarity, tmp_path: Path) -> None:
    extra = tmp_path / "long"
    extra.mkdir()
    write_doc(extra, "long-report-2026", ("industry_association", "en", "2026-10-29",
                                          "Market report", "\n\n".join(LONG_PAGE)))
    backend.inner.add_folder(extra)
    read = await deep_read(backend, similarity, "N1", "How much did installer day rates rise?",
                           "long-report-2026", keep=2)
    assert read is not None and read.paragraphs_total == 10
    assert 1 <= len(read.chosen) <= 2
    assert LONG_PAGE[6] in read.chosen
    assert read.tokens_read * 3 < read.tokens_full


async def test_body_read_cap_marks_the_node_insufficient(
        serve: Serve, backend: RecordingBackend, store: SqlStore,
        similarity: Similarity) -> None:
    out = await run_engine(serve, Script(relevance=lambda line: 0.95), backend, store,
                           similarity=similarity, deep_reads_per_node=1,
                           evidence_per_done_node=9)
    assert out.state.log.of_kind("deep-read")
    capped = out.state.log.of_kind("read-cap")
    assert capped
    node_id = capped[0].data["node"]
    assert out.state.tree.nodes[node_id].status == "insufficient"
    assert out.state.reads_for(node_id) == 1


async def test_deep_read_weighs_a_paragraph_by_its_words_not_its_figures(
        backend: RecordingBackend, similarity: Similarity, tmp_path: Path) -> None:
    """The paragraph that answers, written with figures, is read before the page's note on
    method (its figures used to sink it below: 0.22 against 0.41 with the bundled embedder,
    0.35 without its figures)."""
    answer = ("In the second quarter of 2026 Ostvale's wool stores sold 4,210 thousand kg of "
              "greasy wool (4.21 million kg), up 3.4% on the second quarter of 2025 and up "
              "11.8% on the first quarter; clean prices fell 6.1% to 912 cents a kg.")
    paragraphs = ["The Ostvale Wool Board records every bale sold at auction under a permit.",
                  "1. Auction sales", answer, "2. Outlook",
                  "The next auction report is due on 14 February 2027."]
    extra = tmp_path / "wool"
    extra.mkdir()
    write_doc(extra, "wool-board-q2", ("official_statistics", "en", "2026-07-09",
                                       "Wool auction sales", "\n\n".join(paragraphs)))
    backend.inner.add_folder(extra)
    read = await deep_read(backend, similarity, "N1", "What was Ostvale's latest quarterly "
                           "wool sales volume?", "wool-board-q2", keep=1,
                           prefer=stated_figures)  # as admission reads a page
    assert read is not None and answer in read.chosen
