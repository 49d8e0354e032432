"""Tables read as sentences: every row of a markdown table in a corpus document becomes a
sentence that an extractive answer can quote (issue 15: answers with their figures)."""

from __future__ import annotations

from pathlib import Path

from research_core.loop.memory.pool import whole
from research_core.search.corpus import parse_document
from research_core.search.tables import table_sentences, with_tables_as_sentences

ZH_TABLE = """以下为季度均价。

| 品种 | 规格 | 单位 | 三季度均价 | 同比 |
|---|---|---|---|---|
| 碳酸锂 | 电池级 | 万元/吨 | 8.34 | +13.8% |
| 湿法隔膜 | 9μm基膜 | 元/平方米 | 0.84 | +6.3% |

主要特点见下文。"""


def test_a_chinese_row_names_its_item_values_columns_and_unit() -> None:
    body = with_tables_as_sentences(ZH_TABLE)
    assert "碳酸锂（电池级）：三季度均价8.34万元/吨，同比+13.8%。" in body
    assert "湿法隔膜（9μm基膜）：三季度均价0.84元/平方米，同比+6.3%。" in body
    assert "|" not in body and body.startswith("以下为季度均价。") and "主要特点见下文。" in body
    assert all(whole(line) for line in body.splitlines()[2:4])  # rows an answer may quote


def test_an_english_row_reads_as_a_sentence_and_a_non_table_is_left_alone() -> None:
    table = ("| Month | Units | Change |\n| --- | ---: | --- |\n"
             "| September 2026 | 41,200 | -3.1% |")
    assert table_sentences(table) == "September 2026: Units 41,200, Change -3.1%."
    prose = "| a pipe | in prose |\nnot a rule line\n| still not | a table |"
    assert table_sentences(prose) == prose


def test_a_corpus_document_is_indexed_with_its_table_as_sentences(tmp_path: Path) -> None:
    path = tmp_path / "doc.md"
    path.write_text("---\nid: t1\ntitle: Prices\nurl: https://x.example/t1\npublished: "
                    "2026-10-01\nsource_type: news\npublisher: X\nlang: zh\n---\n" + ZH_TABLE,
                    encoding="utf-8")
    doc = parse_document(path)
    assert "碳酸锂（电池级）：三季度均价8.34万元/吨" in doc.body


def test_a_table_of_months_reads_one_sentence_a_series_not_one_a_month() -> None:
    table = ("| 月份 | 电池级碳酸锂 | 价差 |\n|---|---|---|\n| 2025-11 | 7.66 | 0.48 |\n"
             "| 2025-12 | 8.05 | 0.90 |\n| 2026-01 | 8.48 | 1.38 |")
    assert table_sentences(table).splitlines() == [
        "电池级碳酸锂：2025-11 7.66，2025-12 8.05，2026-01 8.48。",
        "价差：2025-11 0.48，2025-12 0.90，2026-01 1.38。"]


def test_a_column_named_by_a_period_keeps_its_value_apart() -> None:
    table = ("| 项目 | 2025-11 | 2026-03 | Q3 |\n|---|---|---|---|\n"
             "| 细羊毛，万元/吨 | 5.62 | 5.80 | 5.91 |")
    assert table_sentences(table) == "细羊毛，万元/吨：2025-11 5.62，2026-03 5.80，Q3 5.91。"
