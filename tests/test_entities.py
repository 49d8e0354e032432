"""A disagreement is between figures of one thing (issue 25): two firms' or two countries'
figures for one quarter are no disagreement; two sources' figures for one firm are. Fixtures
from beekeeping, a field no evaluation suite uses."""

from __future__ import annotations

import datetime as dt

from research_core.loop.memory.evidence import Evidence
from research_core.loop.memory.pool import Line
from research_core.text import conflicts


def _line(source_id: str, text: str, publisher: str = "Apiary News") -> Line:
    evidence = Evidence(f"E{source_id}", "N1", "Q1", source_id, source_id, "https://x.example",
                        dt.date(2026, 10, 5), "official_statistics", publisher, text, 0.9, 1.0,
                        1.0, 0.9, "", True)
    return Line(text, evidence)


FIRM_A = _line("a", "Meadowbrook ran 12,400 hives in the third quarter of 2026.")
FIRM_B = _line("b", "Hollin Honey ran 11,900 hives in the third quarter of 2026.")
CENSUS = _line("c", "The census office counted 12,100 hives at Meadowbrook in the third quarter "
               "of 2026.", publisher="Vestland Census Office")


def test_two_firms_figures_for_one_quarter_are_no_disagreement() -> None:
    assert conflicts.find([FIRM_A, FIRM_B]) == []


def test_two_sources_figures_for_one_firm_are() -> None:
    found = conflicts.find([FIRM_A, CENSUS])
    assert len(found) == 1 and {found[0].first[1].value, found[0].second[1].value} == {
        "12400", "12100"}


def test_a_publisher_named_in_its_own_sentence_tells_nothing_apart() -> None:
    own = _line("d", "Vestland Census Office counted 12,100 hives at Meadowbrook in the third "
                "quarter of 2026.", publisher="Vestland Census Office")
    assert len(conflicts.find([FIRM_A, own])) == 1


def test_a_level_reached_over_a_span_is_no_figure_of_its_first_month() -> None:
    """"rose to €9.80 per kg between November 2025 and September 2026" states September's
    level (or none), never November's: it disagreed with November's €7.40 in a real run."""
    start = _line("e", "The Vestland wax price index stood at €7.40 per kg in November 2025.",
                  publisher="Vestland Wax Exchange")
    span = _line("f", "The Vestland wax price index rose 32% to €9.80 per kg between November "
                 "2025 and September 2026.", publisher="Apiary News")
    assert conflicts.find([start, span]) == []
    again = _line("g", "The Vestland wax price index stood at €9.10 per kg in November 2025.",
                  publisher="Apiary Weekly")
    assert len(conflicts.find([start, again])) == 1
