"""The replay teaches the next run: query patterns with their citation records, wasted ones
rewritten or dropped before they are sent (logged with the pattern and its record), paying
ones first; a finished run adds its queries' outcomes to the records."""

from __future__ import annotations

import json
from typing import Any

from redsearch.cli import build_parser
from research_core.search.patterns import (
    Outcome,
    Pattern,
    PatternRecord,
    pattern_of,
    vet,
)
from research_core.store.patterns import SqlPatternBook
from research_core.store.sql import SqlStore
from tests.conftest import RecordingBackend
from tests.engine_run import Serve, run_engine
from tests.scripted import Script, field_of

HABIT = "forum discussion thread"


def test_a_habit_is_one_pattern_whatever_the_question() -> None:
    a = pattern_of(f"heat pump sales {HABIT}", "How did heat pump sales develop in 2026?")
    b = pattern_of(f"heat pump prices {HABIT}", "What happened to heat pump prices in 2026?")
    assert a == b and a.terms == {"forum", "discussion", "thread"} and a.shape == "most+W"
    plain = pattern_of("heat pump sales 2026", "How did heat pump sales develop in 2026?")
    assert plain.terms == frozenset() and plain != a


def record(query: str, question: str, sent: int, results: int, cited: int) -> PatternRecord:
    return PatternRecord(pattern_of(query, question), sent, results, cited)


def test_vet_drops_or_rewrites_the_wasted_and_puts_the_paying_first() -> None:
    question = "How did heat pump exports change in 2026?"
    records = [record(f"heat pump sales {HABIT}", "heat pump sales?", 3, 15, 0),
               record("heat pump sales", "heat pump sales?", 4, 20, 9),
               record("heat pump sales official statistics", "heat pump sales?", 2, 10, 4)]
    said: list[str] = []
    sent = vet([f"heat pump exports {HABIT}",  # wasted; rewritten it would repeat the next
                "heat pump exports 2026",
                "heat pump exports official statistics",
                f"heat pump exports Europe {HABIT}"],  # rewritten: Europe is still new
               question, records, lambda kind, text: said.append(f"{kind}: {text}"))
    assert sent == ["heat pump exports 2026", "heat pump exports official statistics",
                    "heat pump exports Europe"]
    assert said[0].startswith(f"learned: dropped 'heat pump exports {HABIT}': resembles "
                              "wasted pattern [all+W] discussion forum thread (sent 3, "
                              "15 results, 0 cited)")
    assert said[1].startswith(f"learned: rewrote 'heat pump exports Europe {HABIT}' → "
                              "'heat pump exports Europe'")


def test_vet_keeps_one_query_and_leaves_the_unknown_alone() -> None:
    records = [PatternRecord(Pattern("some+W", frozenset({"forum"})), 5, 25, 0)]
    said: list[str] = []
    assert vet(["pumps forum"], "heat pumps?", records, lambda k, t: said.append(t)) == [
        "pumps forum"]
    assert "every proposed query resembled a wasted pattern" in said[-1]
    assert vet(["heat pump prices"], "heat pump prices?", [], lambda k, t: None) == [
        "heat pump prices"]


def habit_script() -> Script:
    script = Script()

    def plan(body: dict[str, Any]) -> str:
        question = field_of(body, "Question").rstrip("?")
        topic = " ".join(question.split()[-3:])
        return json.dumps({"queries": [question, f"{topic} {HABIT}"]})

    script.rules["QueryPlan"] = plan
    return script


async def test_a_run_teaches_the_next_one(serve: Serve, backend: RecordingBackend,
                                          store: SqlStore) -> None:
    book = SqlPatternBook(store, backend.name)
    first = await run_engine(serve, habit_script(), backend, store, learning=book)
    habit = [r for r in await book.records() if r.pattern.terms == {"forum", "discussion",
                                                                    "thread"}]
    assert sum(r.sent for r in habit) >= 2, "the first run recorded its habit's sends"
    assert sum(r.sent for r in await book.records()) == len(first.state.queries)

    await book.record([Outcome(f"heat pump sales {HABIT}", "What were heat pump sales?", 5, 0)
                       for _ in range(3)])  # the habit never paid off, say
    backend.requests.clear()
    second = await run_engine(serve, habit_script(), backend, store, learning=book)
    assert not [r for r in backend.requests if HABIT in r.query], "wasted queries were sent"
    learned = [e.message for e in second.state.log.events if e.kind == "learned"]
    assert learned and all("resembles wasted pattern" in m for m in learned)
    assert any("discussion forum thread (sent" in m for m in learned)


async def test_without_learning_nothing_is_vetted_or_recorded(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    done = await run_engine(serve, habit_script(), backend, store)
    assert any(HABIT in r.query for r in backend.requests)
    assert not [e for e in done.state.log.events if e.kind == "learned"]
    assert await SqlPatternBook(store, backend.name).records() == []


def test_learn_report_is_a_command() -> None:
    assert build_parser().parse_args(["learn-report"]).command == "learn-report"
