"""Which dated series an answer part can chart (issue 30): at least three values of one
measure, each for its own period, in one unit, read from the part's kept evidence with the
figure and period grammar; never from one value, mixed units, places or grains, spans, or a
figure the evidence does not state. Over the sample corpus's own pages, and over small ones."""

from __future__ import annotations

import datetime as dt

from research_core.loop.memory.evidence import Evidence
from research_core.loop.publishing.series import series_of
from research_core.search.corpus import CorpusBackend, sample_corpus_dir
from research_core.text import conflicts
from research_core.text.conflicts import Statement
from research_core.text.dated import dated_figures

ABOUT = "How did heat pump sales move in 2026?"


def item(source_id: str, text: str, published: dt.date = dt.date(2026, 10, 20),
         credibility: float = 0.65, publisher: str = "") -> Evidence:
    return Evidence(f"E{abs(hash(source_id)) % 1000}", "N1", "q1", source_id, source_id.title(),
                    f"https://{source_id}.example/", published, "news",
                    publisher or source_id.title(), text, 0.9, credibility, 1.0, 0.9, "", True)


async def test_the_sample_corpus_gives_the_quarterly_sales_series_stated_in_its_pages() -> None:
    corpus = CorpusBackend.from_folder(sample_corpus_dir())
    items = [item(sid, await corpus.read_body(sid) or "", credibility=c)
             for sid, c in (("chpa-autumn-market-report-2026", 0.85),
                            ("eurobuild-daily-september-2026-sales", 0.65))]
    found = series_of(items, ABOUT)
    assert found is not None
    assert (found.unit, found.grain) == ("units", "quarter")
    assert [(p.label, p.written) for p in found.points] == [
        ("Q1 2025", "515,000"), ("Q1 2026", "474,000"), ("Q2 2026", "571,000"),
        ("Q3 2026", "548,000")]
    texts = {e.source_id: e.text for e in items}
    assert all(p.written in texts[p.source_id] for p in found.points)  # as the page says it
    described = found.describe({e.source_id: e.title for e in items})
    assert "Q1 2025: 515,000; Q1 2026: 474,000" in described
    assert "Chpa-Autumn-Market-Report-2026" in described  # the sources, by title


def test_no_series_from_too_few_values_mixed_units_or_places() -> None:
    one = item("a", "Sales reached 214,000 units in September 2026.")
    assert series_of([one], ABOUT) is None
    two = item("b", "Sales reached 190,400 units in September 2025 and 222,000 units in "
                    "October 2026.")
    assert series_of([one, two], ABOUT) is not None  # three months of one measure
    euros = item("c", "Sales reached 214,000 euros in August 2026.")
    assert series_of([one, euros], ABOUT) is None  # units and euros
    places = [item("d", "Vestmark heat pump sales were 18,400 units in Q1 2026."),
              item("e", "Lunesse heat pump sales were 20,100 units in Q2 2026."),
              item("f", "Kordavia heat pump sales were 22,800 units in Q3 2026.")]
    assert series_of(places, ABOUT) is None  # three places, one value each
    grains = [one, item("g", "Heat pump sales were 571,000 units in Q2 2026."),
              item("h", "Heat pump sales were 1.2 million units in H1 2026.")]
    assert series_of(grains, ABOUT) is None  # a month, a quarter and a half


def test_spans_and_dates_are_no_values_of_a_period() -> None:
    texts = [
        "Sales were 2.245 million units for the twelve months from November 2025 to October "
        "2026, up from 2.134 million.",
        "Figures released on 21 April show 474,000 units sold in Q1 2026.",
        "The grant has been in force since 1 April 2026; sales were 571,000 units in Q2 2026.",
    ]
    found = series_of([item(f"s{i}", t) for i, t in enumerate(texts)], ABOUT)
    assert found is None  # two quarters only: the span's totals and the days are not values


def test_a_list_of_figures_each_said_for_its_period_is_a_series() -> None:
    listed = item("l", "Heat pump sales were 515,000 units in Q1 2025, 474,000 units in Q1 "
                       "2026 and 571,000 units in Q2 2026.")
    found = series_of([listed], ABOUT)
    assert found is not None
    assert [(p.label, p.written) for p in found.points] == [
        ("Q1 2025", "515,000"), ("Q1 2026", "474,000"), ("Q2 2026", "571,000")]


def test_a_figure_said_a_year_earlier_is_the_previous_year_s() -> None:
    """"up 4.1% from 2.49 million a year earlier" is September 2025's figure, not a second
    figure for September 2026: a chart plots it there, and the conflict detector compares it
    with that month's figures only. Ferry traffic, a field no suite uses."""
    rose = ("Ferry passengers on the Sound crossing rose to 2.61 million in September 2026, up "
            "4.8% from 2.49 million a year earlier.")
    more = item("b", "Ferry passengers on the Sound crossing were 2.30 million in July 2026.")
    found = series_of([item("a", rose), more], "How many passengers did the Sound ferries carry?")
    assert found is not None
    assert [(p.label, p.written) for p in found.points] == [
        ("Sep 2025", "2.49 million"), ("Jul 2026", "2.30 million"), ("Sep 2026", "2.61 million")]
    zh = dated_figures("2026年9月客运量为261万人次，上年同期为249万人次。", dt.date(2026, 10, 5))
    assert [(p, f.text) for p, f, _ in zh] == [("2026-09", "261万")]  # unclear: no guess
    board = Statement("Ferry passengers on the Sound crossing were 2.52 million in September "
                      "2025.", "board", dt.date(2025, 10, 5), 0.9, "Sound Ferry Board")
    news = Statement(rose, "news", dt.date(2026, 10, 5), 0.6, "Harbour News")
    assert [(d.period, d.second[1].text) for d in conflicts.every([board, news])] == [
        ("2025-09", "2.49 million")]


def test_a_series_is_named_by_words_that_state_no_figure() -> None:
    """Where the question's words are not the sources' (a Chinese question, English pages),
    the name is the words the sentences share; a stretch of them across a figure runs over a
    clause ("Record of 248,000 residential heat pumps"), and is no name."""
    items = [item(f"s{i}", f"A record of {n} residential heat pumps was sold in {month}.")
             for i, (n, month) in enumerate((("189,000", "December 2024"),
                                             ("248,000", "December 2025"),
                                             ("214,000", "September 2026")))]
    found = series_of(items, "哪个月的销量最高？")
    assert found is not None and len(found.points) == 3
    assert not any(c.isdigit() for c in found.measure + found.title), found.title
