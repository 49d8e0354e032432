"""One citation style in every message (issue 44, item 1): [1], [2] … in order of first use,
each a link to its source, no gaps, no raw ids, and a Sources line of exactly the cited."""

from __future__ import annotations

import datetime as dt
import re

from research_core.delivery.numbering import Cite, number, plain
from research_core.loop.report.reporter import Report, Source
from workers.answer_blocks import answer_blocks, answer_message, part_blocks

PAGES = {"chpa-autumn": ("https://chpa.example/autumn", "CHPA autumn report"),
         "eesb-q2": ("https://eesb.example/q2", "EESB Q2 shipments"),
         "blog-seo": ("https://blog.example/seo", "Heat pump prices guide")}
RAW_ID = re.compile(r"chpa-autumn|eesb-q2|blog-seo")


def describe(source_id: str) -> tuple[str, str] | None:
    return PAGES.get(source_id)


def contexts(blocks: list[dict[str, object]]) -> list[str]:
    return [e["text"] for b in blocks if b["type"] == "context"
            for e in b["elements"]]  # type: ignore[attr-defined]


def test_ids_and_numbers_become_numbers_in_order_of_first_use() -> None:
    text = "Sales rose [eesb-q2]. Prices fell [chpa-autumn][eesb-q2] [sic] in [2025]."
    numbered = number(text, {}, {"chpa-autumn", "eesb-q2"})
    assert plain(numbered) == "Sales rose [1]. Prices fell [2][1] [sic] in [2025]."
    assert numbered.sources == ["eesb-q2", "chpa-autumn"]
    listed = number("A [7]. B [3, 7]. C [3，3].", {3: "x", 7: "y"}, set())
    assert plain(listed) == "A [1]. B [2][1]. C [2]."
    assert [p for p in listed.pieces if isinstance(p, Cite)][1] == Cite(2, "x")


def test_a_reports_gapped_numbers_are_renumbered_and_linked() -> None:
    sources = [Source(n, sid, PAGES[sid][1], PAGES[sid][0], "pub", dt.date(2026, 10, 1), "web")
               for n, sid in ((1, "blog-seo"), (3, "eesb-q2"), (5, "chpa-autumn"))]
    report = Report("Q2 came to 612,000 [3]. September was a record [5][3].", sources,
                    cited=[3, 5], fallback=False)
    blocks = answer_blocks(report.render(), [s.source_id for s in sources], describe=describe)
    body = str(blocks[0]["text"])
    assert "[\\[1\\]](https://eesb.example/q2)" in body
    assert "[\\[2\\]](https://chpa.example/autumn)" in body and "[3]" not in body
    [line] = contexts(blocks)
    assert line == ("Sources: [1] <https://eesb.example/q2|EESB Q2 shipments> · "
                    "[2] <https://chpa.example/autumn|CHPA autumn report>")
    assert "blog.example" not in line, "a listed source the text does not cite"
    assert not RAW_ID.search(body + line)


def test_a_part_cites_by_link_and_its_revision_names_sources_as_the_reader_sees_them() -> None:
    text = "*Q2*\n• 571,000 units [chpa-autumn]\n• 612,000 units [eesb-q2]"
    sources = ["blog-seo", "chpa-autumn", "eesb-q2"]
    blocks = part_blocks(text, sources, revised="corrected by eesb-q2, blog-seo",
                         describe=describe)
    section = blocks[0]["text"]["text"]
    assert "<https://chpa.example/autumn|[1]>" in section
    assert "<https://eesb.example/q2|[2]>" in section
    sources_line, note = contexts(blocks)
    assert sources_line.count("[") == 2 and "blog.example" not in sources_line
    assert note == "_revised: corrected by [2], Heat pump prices guide_"
    assert not RAW_ID.search(section + sources_line + note)
    shown, _ = answer_message(text, sources, describe=describe)
    assert shown == "*Q2*\n• 571,000 units [1]\n• 612,000 units [2]"


def test_a_message_that_cites_nothing_lists_no_sources() -> None:
    assert contexts(answer_blocks("No figures here.", ["blog-seo"], describe=describe)) == []


def test_an_evidence_line_and_a_conflict_cite_by_id_too() -> None:
    text = ("E12 [eesb-q2; EESB; 2026-07-30] 612,000 units. (chpa-autumn) says 571,000 "
            "(a definition) [eesb-q2; EESB; 2026-07-30].")
    numbered = number(text, {}, {"chpa-autumn", "eesb-q2"})
    assert plain(numbered) == "E12 [1] 612,000 units. [2] says 571,000 (a definition) [1]."
