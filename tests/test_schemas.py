"""Validation of model output beyond the grammar: what goes back to the model."""

from __future__ import annotations

import datetime as dt

import pytest
from pydantic import ValidationError

from research_core.loop.planning.planner import _range_problem, split_fallback, time_range
from research_core.models.schemas import Decomposition, QueryPlan, SubQuestion
from research_core.text.asking import read_question

AS_OF = dt.date(2026, 10, 31)


@pytest.mark.parametrize("query", ["and", "the of", "???", "query1", "string"])
def test_queries_without_a_searchable_word_are_refused(query: str) -> None:
    with pytest.raises(ValidationError):
        QueryPlan(queries=[query])


def test_real_queries_pass_in_both_languages() -> None:
    plan = QueryPlan(queries=["heat pump prices", "热泵 出口"])
    assert plan.queries == ["heat pump prices", "热泵 出口"]


@pytest.mark.parametrize("question", ["subqestion1", "sub-question 2", "Question", "short"])
def test_placeholder_subquestions_are_refused(question: str) -> None:
    with pytest.raises(ValidationError):
        Decomposition(subquestions=[SubQuestion(question=question, value=0.5)])


def test_a_range_past_the_as_of_date_or_too_short_is_sent_back() -> None:
    assert _range_problem(QueryPlan(queries=["x y z"], until="2027-01-01"), AS_OF)
    assert _range_problem(QueryPlan(queries=["x y z"], since="2021-10-31",
                                    until="2021-10-31"), AS_OF)
    assert _range_problem(QueryPlan(queries=["x y z"], since="2026-01-01"), AS_OF) is None


def test_the_range_sent_never_passes_the_as_of_date() -> None:
    window = time_range(QueryPlan(queries=["x y z"]), AS_OF, lookback_days=365)
    assert (window.since, window.until) == (AS_OF - dt.timedelta(days=365), AS_OF)


def test_fallback_split_keeps_the_question_language_and_its_own_words() -> None:
    zh = [s.question for s in split_fallback(read_question("蜂蜜和蜂蜡的价格怎么走的？要数据。"))]
    assert zh and all("价格" in q or "蜂" in q for q in zh)
    asked = read_question("Why did hive losses rise, and how big are they?")
    en = [s.question for s in split_fallback(asked)]
    assert any(q.startswith("How big are they") for q in en)
    assert not any(q.startswith("What caused") for q in en)  # no template is filled in
