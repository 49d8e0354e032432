"""Follow-ups use the thread's evidence, the series behind its own charts included (issue 44,
item 7). After a run on the sample corpus's heat pump sales, "which month had the highest
sales?" was answered "The sources give no month by month series" under the run's own chart
of December 2025 at 248,000: the figure and period grammar missed a count written with its
noun ("248,000 residential heat pumps") and a period's figure in a bracket ("January
(158,000)"), and the follow-up read only the few sentences closest to it. Now it reads the
series the run's parts chart and those of all its kept sources, and names the month and the
figure, cited, in English and in Chinese; a model answer that does not is not taken."""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

from research_core.delivery.publications import Publication
from research_core.delivery.publishers import MemoryPublisher
from research_core.loop.engine import Engine
from research_core.loop.memory.evidence import Evidence
from research_core.loop.memory.state import RunState
from research_core.loop.publishing.extremes import described, extreme_line, extreme_of
from research_core.loop.publishing.followup import FollowUpAnswer
from research_core.loop.publishing.series import (
    COUNTED,
    Point,
    Series,
    charted,
    every_series,
    part_series,
)
from research_core.models.tier_factory import aclose_tiers, build_tiers
from research_core.search.corpus import CorpusBackend, sample_corpus_dir
from research_core.store.sql import SqlStore
from research_core.text.asking import read_question
from research_core.text.dated import bracketed, dated_figures
from research_core.text.figures import counted
from tests.conftest import AS_OF, scripted_settings
from tests.engine_run import Serve, default_similarity, run_engine
from tests.scripted import Script

SAMPLE_QUESTION = "how did heat pump sales move in 2026?"
CHPA = "chpa-autumn-market-report-2026"
REPORT = dt.date(2026, 10, 29)


def item(source_id: str, text: str, published: dt.date = REPORT,
         credibility: float = 0.85) -> Evidence:
    return Evidence(f"E{abs(hash(source_id)) % 1000}", "N1", "q1", source_id, source_id.title(),
                    f"https://{source_id}.example/", published, "industry_association",
                    "Publisher", text, 0.9, credibility, 1.0, 0.9, "", True)


def _cite(source_id: str) -> str:
    return f"[{source_id}]"


# -- the grammar: a count's noun, a period's figure in a bracket ----------------------------


def test_a_count_names_what_it_counts_after_it() -> None:
    def noun(text: str) -> str:
        return counted(text, text.index(" "))

    assert noun("248,000 residential heat pumps sold, up 31.2%") == "pumps"
    assert noun("474,000 units from 515,000") == "units"
    assert noun("920 ferry passengers a day") == "passengers"
    assert noun("3,400 people") == "people"
    assert noun("189,000 in December 2024") == ""  # a function word ends the phrase
    assert noun("8 kW monobloc units") == ""  # a unit's symbol is no count's noun
    assert noun("12 heat pump makers") == "makers"  # the head, not the first word


def test_a_figure_in_a_bracket_after_its_period_is_that_periods() -> None:
    text = ("Sales fell 8.0% to 474,000 units in the first quarter of 2026; January (158,000) "
            "and February (150,000) were the weakest months, and the 14 markets (in 2026) "
            "grew.")
    dated = dated_figures(text, REPORT)
    marked = {f.text: bracketed(text, at, f, REPORT) for _, f, at in dated}
    assert marked == {"474,000": False, "158,000": True, "150,000": True}
    zh = "2026年1月（15.8万台），2月（15万台）。"
    assert all(bracketed(zh, at, f, REPORT) for _, f, at in dated_figures(zh, REPORT))


# -- the series a follow-up reads -----------------------------------------------------------


async def test_the_sample_report_states_a_monthly_series_with_its_december_record() -> None:
    corpus = CorpusBackend.from_folder(sample_corpus_dir())
    page = item(CHPA, await corpus.read_body(CHPA) or "")
    found = every_series([page], SAMPLE_QUESTION, joined=True)
    months = next(s for s in found if s.grain == "month")
    assert months.unit == COUNTED
    points = {p.label: p.written for p in months.points}
    # "248,000 residential heat pumps" counts heat pumps; "January (158,000)" is January's
    assert {"Dec 2025": "248,000", "Jan 2026": "158,000", "Feb 2026": "150,000"}.items() \
        <= points.items()
    # a chart reads one page's sentences as one measure only where they share what they are
    # about (tests/test_series.py: the sample's chart is its quarters)
    chart = next(s for s in every_series([page], SAMPLE_QUESTION) if s.grain == "month")
    assert len(chart.points) < len(months.points)


async def test_which_month_was_highest_or_lowest_names_it_in_either_language() -> None:
    corpus = CorpusBackend.from_folder(sample_corpus_dir())
    items = [item(CHPA, await corpus.read_body(CHPA) or "")]
    about = f"{SAMPLE_QUESTION}\n"
    found = every_series(items, about, joined=True)
    high = extreme_line(read_question("Which month had the highest sales?"), [], _cite, found)
    assert high is not None, "no line"
    assert high.startswith("• Dec 2025: 248,000 units, the highest of the"), high
    assert high.endswith(f"[{CHPA}]")
    low = extreme_line(read_question("and the lowest month?"), [], _cite, found)
    assert low is not None and low.startswith("• Feb 2026: 150,000 units, the lowest"), low
    zh = extreme_line(read_question("哪个月销量最高？"), [], _cite, found)
    assert zh is not None and zh.startswith("• 2025年12月：248,000，为来源给出的"), zh
    assert zh.endswith(f"中最高。 [{CHPA}]")
    # a question about something no series measures gets no line from them
    assert extreme_line(read_question("which month had the most installers?"), [], _cite,
                        found) is None


def test_the_series_a_chart_shows_is_read_first() -> None:
    """The run's parts show charts; a follow-up reads those series, whatever evidence is
    closest to it (here none at all)."""
    text = ("The Sound crossing carried 310,000 passengers in July 2026, 402,000 in August "
            "2026 and 288,000 in September 2026.")
    state = RunState.new("How did ferry passenger numbers move in 2026?", AS_OF,
                         scripted_settings("http://unused"))
    state.evidence.append(item("ferry-stats", text))
    state.publications.append(Publication(state.run_id, "report", 1, "part", "…",
                                          ["ferry-stats"]))
    shown = part_series(state, "report", ["ferry-stats"])
    assert shown is not None and charted(state) == [shown]
    top = extreme_of(read_question("which month was the busiest?"), charted(state))
    assert top is not None and (top.point.label, top.point.written) == ("Aug 2026", "402,000")
    assert top.line(False, "[1]") == ("• Aug 2026: 402,000 units, the highest of the 3 months "
                                      "the sources give (Jul 2026 to Sep 2026). [1]")
    # a revised part shows the chart of its latest version (here none)
    state.publications.append(Publication(state.run_id, "report", 2, "part", "…", []))
    assert charted(state) == []


# -- the follow-up in the thread of a run on the sample corpus ------------------------------


def _bullets(done: FollowUpAnswer) -> list[str]:
    return [ln for ln in done.text.splitlines() if ln.startswith("• ")]


async def _follow_ups(serve: Serve, store: SqlStore, handler: Any,
                      questions: list[str]) -> list[FollowUpAnswer]:
    backend = CorpusBackend.from_folder(sample_corpus_dir())
    out = await run_engine(serve, lambda body: "", backend, store, SAMPLE_QUESTION,
                           mode="standard", max_steps=8)
    server = await serve(handler)
    settings = scripted_settings(server.base_url)
    tiers = build_tiers(settings)
    try:
        engine = Engine.build(settings, tiers, backend, store, similarity=default_similarity(),
                              publisher=MemoryPublisher())
        return [await engine.follow_up(out.state, q, f"followup-{i}")
                for i, q in enumerate(questions)]
    finally:
        await aclose_tiers(tiers)


async def test_follow_ups_on_the_sample_run_name_the_month_and_its_figure(
        serve: Serve, store: SqlStore) -> None:
    """Every model reply unusable: the extractive answer leads with the month, cited."""
    done = await _follow_ups(serve, store, lambda body: "", [
        "Which month had the highest sales?", "Which month had the lowest sales?",
        "哪个月销量最高？"])
    wanted = [r"• Dec 2025: 248,000 units, the highest of the \d+ months",
              r"• Feb 2026: 150,000 units, the lowest of the \d+ months",
              r"• 2025年12月：248,000，为来源给出的\d+个月"]
    for answer, pattern in zip(done, wanted, strict=True):
        first = _bullets(answer)[0]
        assert re.match(pattern, first), answer.text
        cited = re.findall(r"\[(\d+)\]$", first)
        published = answer.publication.text if answer.publication else ""
        assert cited and f"\n[{cited[0]}] " in published, published  # listed as a source
        assert "no month by month series" not in published


async def test_a_model_answer_that_misses_the_month_is_not_taken(
        serve: Serve, store: SqlStore) -> None:
    asked: list[str] = []
    script = Script()

    def no_series(body: dict[str, Any]) -> str:
        asked.append(json.dumps(body))
        return json.dumps({"answer": "The sources give no month by month series [1].",
                           "sufficient": True})

    script.rules["FollowUpOut"] = no_series
    done, = await _follow_ups(serve, store, script, ["Which month had the highest sales?"])
    assert len(asked) >= 2, "the answer went back to the model"
    assert "Dec 2025: 248,000 units, the highest" in asked[0]  # the series, among its findings
    assert _bullets(done)[0].startswith("• Dec 2025: 248,000 units, the highest"), done.text


async def test_a_chinese_question_picks_the_series_it_asks_about_across_languages() -> None:
    """哪个月的销量最高？ shares no word with English series: the embedder's closeness, not the
    series with most points (installers' waiting weeks), decides which one answers it."""
    def months(unit: str, said: str, values: list[float]) -> Series:
        return Series("heat pumps", unit, "month", tuple(
            Point(f"2026-0{i}", v, f"{v:,.0f}", "src") for i, v in enumerate(values, 1)),
            said=(said,))

    waits = months("weeks", "Households waited 11 weeks for an installer in September.",
                   [9, 10, 11, 8, 7])
    sales = months("units", "Heat pump sales reached 248,000 units, the most heat pumps sold "
                   "in one month.", [180_000, 248_000, 150_000])
    asked = read_question("哪个月的销量最高？")
    unranked = extreme_of(asked, [waits, sales])
    assert unranked is not None and unranked.series is waits  # words alone: the longer one
    [close] = await default_similarity().matrix([asked.text],
                                                [described(s) for s in (waits, sales)])
    found = extreme_of(asked, [waits, sales], close)
    assert found is not None and found.series is sales and found.point.value == 248_000
