"""The last month a question's span reaches is a facet of its own (issue 15): findings whose
newest figures are a month short of it leave it uncovered, and the run searches for it. The
facet is the question's topic clause asked for that month (issue 25: no template). Orchard
fruit wholesale prices, a field no evaluation suite uses."""

from __future__ import annotations

import datetime as dt

from research_core.loop.planning import period_end
from research_core.text.asking import read_question

AS_OF = dt.date(2026, 10, 31)
ZH = "近一年（25年11月到26年10月）富士苹果批发价格怎么走的？请给出每月数字。"
EN = "How did Fuji apple wholesale prices move between November 2025 and October 2026?"
SEPT = "山东富士苹果：9月批发均价0.97万元/吨，环比+2.0%。协会将于10月底发布10月价格快报。"
OCT = "山东富士苹果：10月批发均价0.99万元/吨，环比+2.1%。"


def test_the_month_a_span_ends_in() -> None:
    assert period_end.last_month(read_question(ZH), AS_OF) == "2026-10"
    assert period_end.last_month(read_question(EN), AS_OF) == "2026-10"
    past_year = read_question("How did sales move over the past year?")
    assert period_end.last_month(past_year, AS_OF) == "2026-10"
    early = dt.date(2026, 11, 3)  # November's figures are not out yet
    latest = read_question("What are the latest apple prices?")
    assert period_end.last_month(latest, early) == "2026-10"
    assert period_end.last_month(read_question("Why did sales fall in 2025?"), AS_OF) is None


def test_findings_a_month_short_leave_the_last_month_to_research() -> None:
    day = dt.date(2026, 10, 15)
    question, reached = period_end.facet(read_question(ZH), AS_OF, [SEPT], [day]) or ("", True)
    assert question == "2026年10月富士苹果批发价格怎么走的？" and not reached  # the question's
    # topic clause, its span taken out, asked for the month; no template
    assert period_end.facet(read_question(ZH), AS_OF, [SEPT, OCT], [day, AS_OF]) == (question, True)
    en = period_end.facet(read_question(EN), AS_OF,
                          ["Prices averaged 9,700 yuan a tonne in September."], [day])
    assert en == ("How did Fuji apple wholesale prices move in October 2026?", False)


async def test_the_root_check_adds_the_last_month_when_findings_stop_short() -> None:
    from research_core.loop.memory.evidence import Evidence
    from research_core.loop.memory.state import RunState
    from research_core.loop.review import gaps
    from research_core.models.gateway import Gateway
    from research_core.models.ledger import Ledger
    from research_core.runlog import RunLog
    from research_core.settings import Settings
    from tests.engine_run import default_similarity

    settings = Settings()
    state = RunState.new(EN, AS_OF, settings, mode="standard")
    state.evidence.append(Evidence(
        "E1", "N1", "Q1", "stats-fruit-2026-09", "Fruit wholesale price statistics",
        "https://x.example", dt.date(2026, 10, 10), "official_statistics", "Stats",
        "Fuji apple wholesale prices averaged 9,700 yuan a tonne in September 2026.", 0.9, 1.0,
        1.0, 0.94, "", True))
    cov = await gaps.judge_root(Gateway({}, Ledger({}), RunLog()), default_similarity(), state,
                                settings.engine, deep=False)
    last = "How did Fuji apple wholesale prices move in October 2026?"
    assert cov.facets[-1] == last and last in cov.uncovered()
