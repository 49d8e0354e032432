"""The BM25 quoter (`research_core.evaluation.quoter`): the floor `redsearch eval` prints beside
every run. Its recipe is the shared script's: BM25 over jieba words of title and paragraph,
weighed by source type, at most two paragraphs a document, near-duplicates skipped, ids
quoted, within the budget; and evidence recall (`research_core.evaluation.recall`)."""

from __future__ import annotations

from pathlib import Path

from research_core.evaluation import quoter
from research_core.evaluation.recall import evidence_recall, needed_ids
from research_core.evaluation.suite import Check, Requirement
from research_core.search import bm25
from research_core.search.corpus import CorpusBackend
from tests.conftest import write_doc

FILLER = "The bakery opened a second oven line and hired four more bakers for the season."
DOCS = {
    "guild-rye-q3": ("official_statistics", "en", "2026-10-02", "Guild rye report",
                     "Rye flour deliveries to guild bakeries rose 12.5% in the third quarter "
                     "to 3,400 tonnes, the guild said.\n\n"
                     "Rye flour prices held at 41 crowns a sack through September, unchanged "
                     "on the second quarter.\n\n"
                     "Rye flour stocks at the mills ended September at 900 tonnes, a low "
                     "for the year.\n\n" + FILLER),
    "forum-rye": ("forum", "en", "2026-10-03", "Rye flour rumours",
                  "Rye flour deliveries rose 40% in the third quarter, someone in the rye "
                  "flour trade told me, rye flour rye flour."),
    "news-rye-copy": ("news", "en", "2026-10-04", "Guild rye report",
                      "Rye flour deliveries to guild bakeries rose 12.5% in the third quarter "
                      "to 3,400 tonnes, the guild said.\n\n" + FILLER),
    "zh-mianfen": ("industry_association", "zh", "2026-10-05", "面粉协会三季度报告",
                   "三季度黑麦面粉出厂价每袋41克朗，环比持平，协会称需求平稳，库存偏低，"
                   "各地面包房的采购量与二季度大体相当，四季度价格预计不变。"),
}


def corpus(tmp_path: Path) -> CorpusBackend:
    folder = tmp_path / "corpus"
    folder.mkdir()
    for doc_id, spec in DOCS.items():
        write_doc(folder, doc_id, spec)
    return CorpusBackend.from_folder(folder)


def test_the_best_paragraphs_by_bm25_and_source_type_within_the_budget(tmp_path: Path) -> None:
    quotes = quoter.quote("How did rye flour deliveries move in the third quarter?",
                          corpus(tmp_path).documents(), 2400)
    ids = [q.source_id for q in quotes]
    # the official paragraph on deliveries first; the forum's, with more of the words, lower
    assert quotes[0].source_id == "guild-rye-q3" and quotes[0].text.startswith("Rye flour deliv")
    assert ids.index("forum-rye") > ids.index("guild-rye-q3")
    assert ids.count("guild-rye-q3") == 2  # at most two paragraphs of one document
    # the news copy opens like the guild's paragraph: one of the two is quoted
    assert not any(q.source_id == "news-rye-copy" and q.text.startswith("Rye flour deliv")
                   for q in quotes)
    text = quoter.as_text(quotes)
    assert len(text) <= 2400 and "[guild-rye-q3]" in text


def test_a_small_budget_quotes_only_what_fits(tmp_path: Path) -> None:
    quotes = quoter.quote("rye flour deliveries third quarter", corpus(tmp_path).documents(),
                          160)
    assert [q.source_id for q in quotes] == ["guild-rye-q3"]
    assert len(quoter.as_text(quotes)) <= 160


def test_chinese_questions_are_matched_word_by_word(tmp_path: Path) -> None:
    quotes = quoter.quote("黑麦面粉出厂价多少？", corpus(tmp_path).documents(), 2400)
    assert quotes[0].source_id == "zh-mianfen"
    assert bm25.words("黑麦面粉出厂价") == ["黑麦", "面粉", "出厂价"]


def test_evidence_recall_is_the_share_of_the_accepted_citations_kept() -> None:
    groups = [Requirement("R1", "", (Check("cites_any", ("a", "b")),
                                     Check("mentions_any", ("x",)))),
              Requirement("R2", "", (Check("cites_none", ("c",)), Check("cites_any", ("d",)))),
              Requirement("R3", "", (Check("revised", True),))]
    assert needed_ids(groups) == {"a", "b", "d"}
    assert evidence_recall(groups, ["a", "c", "z"]) == 1 / 3
    assert evidence_recall(groups, ["a", "b", "d"]) == 1.0
    assert evidence_recall(groups[2:], ["a"]) is None  # no group names a document
