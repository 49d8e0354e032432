"""The reporter's evidence list (issue 27): figure sentences, never whole pages; every source
gets its first fact before any gets a second; bounded whatever the run's length."""

from __future__ import annotations

import datetime as dt

from research_core.loop.memory.evidence import Evidence
from research_core.loop.memory.memory import Summary
from research_core.loop.report.report_evidence import block, evidence_list, facts_of, findings

PAGE = ("Sales in {c} reached {n:,} units in the third quarter of 2026. Analysts linked the "
        "movement to subsidies and said more would follow. Installations rose {p}% on the "
        "year. The figure is final.")


def _item(i: int, score: float = 0.8) -> Evidence:
    text = PAGE.format(c=f"Country{i}", n=1000 + i, p=i % 9 + 1)
    return Evidence(f"E{i}", "N1", "Q1", f"src-{i}", f"Heat pumps in Country{i}", "u",
                    dt.date(2026, 10, 1), "news", "Daily", text, 0.9, 0.65, 1.0, score, "r",
                    True)


def _listed_chars(items: list[Evidence], limit: int) -> int:
    return sum(len(block(i + 1, e)) + 1 for i, e in enumerate(evidence_list(items, limit)))


def test_a_source_is_given_by_its_figure_sentences_not_its_page() -> None:
    facts = facts_of(_item(3).text)
    assert facts == ["Sales in Country3 reached 1,003 units in the third quarter of 2026.",
                     "Installations rose 4% on the year."]
    assert facts_of("No figure here. Nor here.") == ["No figure here."]


def test_the_list_is_bounded_however_many_sources_the_run_kept() -> None:
    for count in (10, 100, 1000):
        assert _listed_chars([_item(i) for i in range(count)], 4000) <= 4000
    few = evidence_list([_item(i) for i in range(5)], 4000)
    assert all(len(s.facts) == 2 for s in few)  # room enough: every fact of every source


def test_every_source_gets_its_first_fact_before_any_gets_a_second() -> None:
    items = [_item(i, score=0.9 - i / 100) for i in range(40)]
    listed = evidence_list(items, 4000)
    counts = [len(s.facts) for s in listed]
    assert max(counts) - min(counts) <= 1
    assert [s.best.source_id for s in listed][:3] == ["src-0", "src-1", "src-2"]  # best first


def test_findings_are_bounded_and_a_summary_kept_as_notes_adds_only_its_question() -> None:
    kept = Summary("N1", "What were sales?", "Best supported: x", ["x"], [], ["s"],
                   lossless_fallback=True)
    written = Summary("N2", "What were prices?", "Prices rose 4% [s2]. " * 30, [], [], ["s2"])
    text = findings([kept, written] * 50, [], 1000)
    assert len(text) <= 1000 + 60
    assert text.startswith("- What were sales?\n- What were prices?: Prices rose")
    assert text.splitlines()[-1].endswith("more sub-questions: see the sources")
