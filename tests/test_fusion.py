"""Hybrid corpus search (`research_core.search.fusion`): BM25 and the embedder fused by
reciprocal rank fusion. The dense ranking carries a query across languages and keeps to the
request's time range and language, as the lexical search does."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from research_core.protocols import SearchRequest, TimeRange
from research_core.search.corpus import CorpusBackend
from research_core.search.fusion import rrf
from tests.conftest import write_doc
from tests.engine_run import default_similarity

DOCS = {
    "zh-tea-exports": ("official_statistics", "zh", "2026-10-09", "三季度茶叶出口统计",
                       "三季度全国茶叶出口量为9.8万吨，同比增长4.1%，绿茶占七成。"),
    "en-tea-prices": ("news", "en", "2026-10-12", "Auction prices at the tea exchange",
                      "Average auction prices at the tea exchange rose 3% in September."),
    "en-rice": ("news", "en", "2026-10-02", "Rice harvest", "The rice harvest was early."),
    "zh-park": ("news", "zh", "2026-10-03", "公园游客", "周末公园里散步的人很多，天气晴朗。"),
    "zh-tea-2023": ("news", "zh", "2023-10-09", "2023年三季度茶叶出口",
                    "2023年三季度茶叶出口下降。"),
}


def backend(tmp_path: Path, hybrid: bool) -> CorpusBackend:
    folder = tmp_path / "corpus"
    folder.mkdir(exist_ok=True)
    for doc_id, spec in DOCS.items():
        write_doc(folder, doc_id, spec)
    return CorpusBackend.from_folder(folder, default_similarity() if hybrid else None)


def test_rrf_sums_reciprocal_ranks_and_keeps_first_appearance_on_ties() -> None:
    # k = 1: c 1/4 + 1/2, b 1/3 + 1/3, a 1/2
    assert rrf([["a", "b", "c"], ["c", "b"]], k=1) == ["c", "b", "a"]
    assert rrf([["a"], ["b"]]) == ["a", "b"]
    assert rrf([]) == []


async def test_an_english_query_finds_a_chinese_report_only_when_hybrid(tmp_path: Path) -> None:
    query = SearchRequest("tea export volume in the third quarter", limit=3)
    lexical = [h.source_id for h in await backend(tmp_path, False).search(query)]
    assert "zh-tea-exports" not in lexical
    found = [h.source_id for h in await backend(tmp_path, True).search(query)]
    assert "zh-tea-exports" in found and len(found) == 3


async def test_the_dense_ranking_keeps_to_the_time_range_and_language(tmp_path: Path) -> None:
    hybrid = backend(tmp_path, True)
    window = TimeRange(since=dt.date(2026, 1, 1))
    found = [h.source_id for h in await hybrid.search(
        SearchRequest("tea exports third quarter", time_range=window, limit=8))]
    assert "zh-tea-2023" not in found and "zh-tea-exports" in found
    assert "zh-park" not in found  # far below the best: no dense match, though there is room
    english = [h.source_id for h in await hybrid.search(
        SearchRequest("tea exports third quarter", lang="en", limit=8))]
    assert english and all(i.startswith("en-") for i in english)
    assert await hybrid.search(SearchRequest("tea", limit=0)) == []
