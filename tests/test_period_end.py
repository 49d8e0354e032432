"""The last month a question's span reaches is a facet of its own (issue 15): findings whose
newest figures are a month short of it leave it uncovered, and the run searches for it."""

from __future__ import annotations

import datetime as dt

from research_core.loop import period_end

AS_OF = dt.date(2026, 10, 31)
ZH = "帮忙梳理一下近一年（25年11月到26年10月）动力电池上游材料的价格波动，要有具体数字"
EN = "How did heat pump sales move between November 2025 and October 2026?"
SEPT = "电池级碳酸锂：9月均价8.55万元/吨，环比+2.0%。协会将于10月底发布10月价格快报。"
OCT = "电池级碳酸锂：10月均价8.62万元/吨，环比+0.8%。"


def test_the_month_a_span_ends_in() -> None:
    assert period_end.last_month(ZH, AS_OF) == "2026-10"
    assert period_end.last_month(EN, AS_OF) == "2026-10"
    assert period_end.last_month("How did sales move over the past year?", AS_OF) == "2026-10"
    early = dt.date(2026, 11, 3)  # November's figures are not out yet
    assert period_end.last_month("What are the latest heat pump sales?", early) == "2026-10"
    assert period_end.last_month("Why did sales fall in 2025?", AS_OF) is None


def test_findings_a_month_short_leave_the_last_month_to_research() -> None:
    day = dt.date(2026, 10, 15)
    question, reached = period_end.facet(ZH, AS_OF, [SEPT], [day]) or ("", True)
    assert question == "2026年10月动力电池上游材料价格的数据是多少？" and not reached
    assert period_end.facet(ZH, AS_OF, [SEPT, OCT], [day, AS_OF]) == (question, True)
    en = period_end.facet(EN, AS_OF, ["Sales reached 612,000 units in September."], [day])
    assert en == ("What were the figures for heat pump sales in October 2026?", False)


async def test_the_root_check_adds_the_last_month_when_findings_stop_short() -> None:
    from research_core.loop import gaps
    from research_core.loop.evidence import Evidence
    from research_core.loop.state import RunState
    from research_core.models.gateway import Gateway
    from research_core.models.ledger import Ledger
    from research_core.runlog import RunLog
    from research_core.settings import Settings
    from tests.engine_run import default_similarity

    settings = Settings()
    state = RunState.new(EN, AS_OF, settings, mode="standard")
    state.evidence.append(Evidence(
        "E1", "N1", "Q1", "stats-sales-2026-09", "Heat pump sales statistics", "https://x.example",
        dt.date(2026, 10, 10), "official_statistics", "Stats", "Heat pump sales reached 214,000 "
        "units in September 2026.", 0.9, 1.0, 1.0, 0.94, "", True))
    cov = await gaps.judge_root(Gateway({}, Ledger({}), RunLog()), default_similarity(), state,
                                settings.engine, deep=False)
    last = "What were the figures for heat pump sales in October 2026?"
    assert last in cov.uncovered()
