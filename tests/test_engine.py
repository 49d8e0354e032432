"""The research loop end to end with scripted tiers behind a local OpenAI-compatible server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from research_core.store.models import EvidenceRow, LedgerRow, NodeRow, QueryRow
from research_core.store.sql import SqlStore
from tests.conftest import AS_OF, DOCS, RecordingBackend, write_doc
from tests.engine_run import Outcome, Serve, run_engine
from tests.fakes.openai_server import Reply, last_user_text
from tests.scripted import Script, data_block


async def test_a_run_reaches_a_cited_report_and_stores_everything(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    out = await run_engine(serve, Script(), backend, store)
    assert out.state.status == "finished"
    assert out.report.cited and not out.report.fallback
    stored = {r.source_id for r in await store.rows(EvidenceRow, out.state.run_id) if r.kept}
    assert set(out.report.cited_source_ids()) <= stored
    nodes = await store.rows(NodeRow, out.state.run_id)
    assert {n.status for n in nodes if n.depth == 1} <= {"done", "insufficient"}
    assert "planner" in out.state.ledger.table() and "TOTAL" in out.state.ledger.table()


async def test_evidence_below_threshold_is_discarded_with_its_weights(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    def relevance(line: str) -> float:
        return 0.5 if "fall" in line else 0.95

    out = await run_engine(serve, Script(relevance=relevance), backend, store)
    judged = {e.source_id: e for e in out.state.evidence}
    news = judged["news-prices-2026-10"]   # 0.6*0.5 + 0.2*0.65 + 0.2*1.0 = 0.63
    assert (news.score, news.kept) == (0.63, False)
    assert "0.63 < 0.65" in news.discarded_reason
    stats = judged["stats-sales-2026-09"]  # 0.6*0.95 + 0.2*1.0 + 0.2*1.0 = 0.97
    assert (stats.score, stats.kept) == (0.97, True)
    assert "news-prices-2026-10" not in out.report.cited_source_ids()
    assert "news-prices-2026-10" not in "".join(s.text() for s in out.state.summaries.values())


async def _fallback_split(serve: Serve, backend: RecordingBackend,
                          store: SqlStore) -> tuple[Outcome, list[str]]:
    """A run whose planner answers the decomposition twice with broken JSON: the root's
    children then come from `decomposition.split`."""
    script = Script(rules={"Decomposition": lambda body: "{not json at all"})
    out = await run_engine(serve, script, backend, store, max_steps=3)
    root = out.state.tree.root
    return out, [out.state.tree.nodes[c].question for c in root.children]


async def test_malformed_json_is_retried_with_the_error_then_falls_back(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    """The fallback split (issue 25) reads the evidence: the question asks one thing, so its
    children are what the credible retrieved sources are about (their titles), most relevant
    first; no template, never the question itself, no blog's title."""
    out, children = await _fallback_split(serve, backend, store)
    calls = out.server.requests_for("Decomposition")
    assert len(calls) == 2
    assert "not valid JSON" in last_user_text(calls[1])
    titles = {spec[3] for spec in DOCS.values()}
    assert len(children) >= 2 and out.state.question not in children
    assert children[0] == "Heat pump sales statistics September 2026"  # the official table
    assert "Heat pump prices fall" in children
    assert set(children) <= titles  # the sources' own words
    assert not any(c.startswith(("What were", "What caused", "What are the latest"))
                   for c in children)
    assert "Heat pump prices guide blog" not in children  # low credibility: no facet
    assert [e.kind for e in out.state.log.events].count("fallback") == 1
    outcomes = [e.outcome for e in out.state.ledger.entries if e.purpose == "decompose"]
    assert outcomes == ["invalid-1", "invalid-2"]


async def test_the_fallback_split_reads_no_facet_off_an_outdated_source(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    """A 2022 article (recency 0 on 2026-10-31: the answer never cites it) is no facet."""
    _, children = await _fallback_split(serve, backend, store)
    assert "Heat pump sales boom 2022" not in children


async def test_placeholder_subquestions_are_rejected(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    script = Script(subquestions=[("subqestion1", 0.5), ("subqestion2", 0.5)])
    out = await run_engine(serve, script, backend, store, max_steps=2)
    assert "placeholder" in last_user_text(out.server.requests_for("Decomposition")[1])


async def test_repeated_query_is_served_from_cache(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    first = await run_engine(serve, Script(), backend, store)
    sent = len(backend.requests)
    second = await run_engine(serve, Script(), backend, store)
    assert len(backend.requests) == sent, "the second run reached the backend"
    assert all(q.from_cache for q in second.state.queries)
    assert second.state.log.of_kind("cache-hit")
    rows = await store.rows(QueryRow, second.state.run_id)
    assert rows and all(r.from_cache for r in rows)
    assert {q.text for q in first.state.queries} == {q.text for q in second.state.queries}


async def test_time_range_reaches_the_backend(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    def plan(body: dict[str, Any]) -> str:
        return json.dumps({"queries": ["heat pump sales"], "since": "2026-01-01"})

    out = await run_engine(serve, Script(rules={"QueryPlan": plan}), backend, store, max_steps=2)
    ranges = {(r.time_range.since, r.time_range.until) for r in backend.requests}
    assert ranges == {(AS_OF.replace(month=1, day=1), AS_OF)}
    assert "old-sales-2022" not in {e.source_id for e in out.state.evidence}


async def test_hits_are_cut_to_200_characters_at_a_sentence_end(
        serve: Serve, backend: RecordingBackend, store: SqlStore, tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    long_body = "Heat pump sales grew strongly. " * 40
    write_doc(extra, "long-sales-2026",
              ("news", "en", "2026-10-01", "Heat pump sales long article", long_body))
    backend.inner.add_folder(extra)
    out = await run_engine(serve, Script(), backend, store, deep_read_relevance=1.1)
    item = next(e for e in out.state.evidence if e.source_id == "long-sales-2026")
    assert len(item.text) <= 200 and item.text.endswith("grew strongly.")
    assert len(item.text) > 200 - len("Heat pump sales grew strongly. ")
    prompt = data_block(out.server.requests_for("HitScores")[0])
    assert all(len(line) < 200 + 120 for line in prompt.splitlines())


async def test_unresolvable_citations_are_retried_then_assembled(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    script = Script(rules={"report": lambda body: "Sales rose 12.4% [9]."})
    out = await run_engine(serve, script, backend, store)
    reports = out.server.requests_for("")
    assert len(reports) == 2 and "do not exist" in last_user_text(reports[1])
    assert out.report.fallback
    numbers = {s.number for s in out.report.sources}
    assert out.report.cited and set(out.report.cited) <= numbers
    kept = {e.source_id for e in out.state.kept()}
    assert set(out.report.cited_source_ids()) <= kept


async def test_ledger_records_every_call_with_cost(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    script = Script(rules={"report": lambda body: Reply(
        "Sales rose [1].", prompt_tokens=1000, completion_tokens=500)})
    out = await run_engine(serve, script, backend, store)
    rows = await store.rows(LedgerRow, out.state.run_id)
    assert len(rows) == len(out.server.requests)
    report_row = next(r for r in rows if r.purpose == "report")
    assert report_row.cost_usd == (1000 * 1.0 + 500 * 2.0) / 1e6
    assert report_row.model == "reporter-script"


async def test_a_report_that_echoes_its_prompt_is_rejected(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    def echo(body: dict[str, Any]) -> str:
        return "\n".join(m["content"] for m in body["messages"])

    out = await run_engine(serve, Script(rules={"report": echo}), backend, store)
    reports = out.server.requests_for("")
    assert "repeats the instructions" in last_user_text(reports[1])
    assert out.report.fallback and "<<<DATA" not in out.report.text


async def test_a_plan_of_one_sub_question_is_widened_from_the_evidence(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    """The bundled planner split "installers in X: day rates, backlog, a shortage?" into the
    single "How are installers doing in X?", and the run ended at step 2 of 8. The planner's
    sub-question stays; the evidence split adds the others."""
    script = Script(subquestions=[("How did heat pump sales move in 2026?", 0.9)])
    out = await run_engine(serve, script, backend, store, max_steps=4)
    root = out.state.tree.nodes["N0"]
    children = [out.state.tree.nodes[c].question for c in root.children]
    assert children[0] == "How did heat pump sales move in 2026?"
    assert len(children) >= 2, children


async def test_a_sub_question_whose_queries_were_all_asked_judges_what_they_found(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    """Every sub-question's query plan repeats the first one's (a weak planner does): the
    repeats are not sent again, but the hits the first query found are judged for each later
    sub-question, from the cache, so that no sub-question ends unread."""
    script = Script(rules={"QueryPlan": lambda body: json.dumps(
        {"queries": ["heat pump sales and prices 2026"]})})
    out = await run_engine(serve, script, backend, store)
    sent = {r.query for r in backend.requests}
    assert sent == {"heat pump sales and prices 2026"}, sent
    researched = [n for n in out.state.tree.nodes.values() if n.depth == 1 and n.rounds]
    assert len(researched) >= 2
    assert all(out.state.judged_sources(n.id) for n in researched)
    assert any("asked before" in e.message for e in out.state.log.of_kind("cache-hit"))


async def test_a_repeated_query_beside_new_ones_still_brings_what_it_found(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    """A plan that repeats a query another sub-question sent and adds one of its own: the new
    one is sent, and what the repeat found is judged from the cache as well (issue 25: it
    was read back only when every query of the plan repeated)."""
    plans = iter(range(1000))

    def plan(body: dict[str, Any]) -> str:
        return json.dumps({"queries": ["heat pump sales and prices 2026",
                                       f"heat pump market note {next(plans)}"]})

    out = await run_engine(serve, Script(rules={"QueryPlan": plan}), backend, store)
    later = [e for e in out.state.log.of_kind("cache-hit") if "asked before" in e.message]
    assert later, "the repeated query's hits were not judged again"
    assert len({r.query for r in backend.requests}) >= 3  # the new queries were sent


async def test_the_step_that_splits_the_question_researches_its_best_sub_question(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    """No step goes on planning alone (issue 27): step 1 splits the root and searches for
    the most valuable sub-question, and every later step researches one."""
    out = await run_engine(serve, Script(), backend, store)
    log = out.state.log
    [split] = [e for e in log.of_kind("expand") if e.step == 1]
    assert split.data["node"] == "N0"
    first = [e.data["node"] for e in log.of_kind("focus") if e.step == 1]
    assert first == ["N0", "N1"]
    searched = {q.step for q in out.state.queries if q.node_id != "N0"}
    assert searched == set(range(1, out.state.step + 1))
