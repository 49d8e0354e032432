"""Issue 16: coverage ends a sub-question and the run, the upgrade is the planner's decision,
deep composes its own instructions, conflicts travel to the report, and a task only a deeper,
conflict-seeking run can answer shows deep passing where standard does not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from research_core.delivery.publishers import MemoryPublisher
from research_core.loop.memory.memory import conflict_notes
from research_core.loop.planning.planner import query_fallback
from research_core.loop.review import coverage
from research_core.settings import EngineSettings
from research_core.store.sql import SqlStore
from research_core.text.asking import read_question
from tests.conftest import RecordingBackend, write_doc
from tests.engine_run import Outcome, Serve, default_similarity, run_engine
from tests.fakes.openai_server import last_user_text
from tests.scripted import Script, field_of

THREE = [("What were heat pump sales figures?", 0.9), ("What were heat pump prices?", 0.8),
         ("What happened to heat pump exports?", 0.7)]
FOUR = [*THREE, ("What were heat pump sales in September 2026?", 0.6)]  # test_modes.FOUR
CORRECTION = "stats-sales-erratum-2026-10"
SALES_Q = "What were heat pump sales in September 2026?"


def _system(body: dict[str, Any]) -> str:
    return str(body["messages"][0]["content"])


def test_a_question_s_facets_are_its_clauses_and_why() -> None:
    """The facets are the question's clauses as written (issue 25, issue 42): its topic, then
    a clause that asks beside it ("why", "which markets") completed with the topic; no
    template, and no cause unless the question asks why. Orchard fruit, a field no
    evaluation suite uses."""
    topic = "How did Fuji apple wholesale prices move in 2026"
    assert coverage.facets(read_question(f"{topic}, and why?")) == [f"{topic}?", f"Why ({topic})?"]
    which = coverage.facets(read_question(f"{topic}, and which markets paid the most?"))
    assert which[0] == f"{topic}?" and which[1].startswith("Which markets paid the most")
    assert len(which) == 2 and not any(f.startswith("Why") for f in which)
    prices = "What were Fuji apple prices?"
    assert coverage.facets(read_question(prices)) == [prices]


async def test_a_why_facet_is_covered_by_a_reason_without_figures() -> None:
    """A cause facet needs a reason, not a figure: a sentence that says why covers it."""
    reason = ["Fuji apple wholesale prices rose because a spring frost cut the harvest in the "
              "main orchards."]
    asked = read_question("How did Fuji apple wholesale prices move in 2026, and why?")
    [why] = [f for f in coverage.facets(asked) if f.startswith("Why")]
    judged = await coverage.by_embedder(default_similarity(), [why], reason, EngineSettings())
    assert judged.answered == [0]


async def test_a_node_is_done_when_covered_not_when_it_holds_n_items(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    """Deep with one item per query: the executor's judgement decides; a node whose facet it
    judges unanswered is not done however many items it holds."""
    def judge(body: dict[str, Any]) -> str:
        prices = "prices" in field_of(body, "Question")
        return json.dumps({"answered": [] if prices else [0],
                           "unknowns": ["installed prices by country"] if prices else []})

    out = await run_engine(serve, Script(subquestions=THREE[:2],
                                         rules={"CoverageOut": judge}),
                           backend, store, mode="deep", rounds_per_node=2, max_depth=1)
    nodes = {n.question: n for n in out.state.tree.nodes.values()}
    assert nodes["What were heat pump sales figures?"].status == "done"
    assert nodes["What were heat pump prices?"].status == "insufficient"
    prices = nodes["What were heat pump prices?"]
    assert out.state.kept_for({prices.id})  # evidence held, yet not covered
    assert out.state.extra.coverage[prices.id]["unknowns"] == ["installed prices by country"]
    done = " ".join(e.message for e in out.state.log.of_kind("done"))
    assert "1 of 1 facets covered (model)" in done
    # the second round on prices seeks corrections of the figures it already leans on
    second = [last_user_text(b) for b in out.server.requests_for("QueryPlan")
              if "prices" in field_of(b, "Question")][-1]
    assert "Figures relied on" in second and "euros" in second


async def test_uncovered_root_facets_become_sub_questions_then_unknowns(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    """The planner's split misses the 'why'; the root check adds it, and what stays uncovered
    is reported as unknown."""
    question = "How did heat pump sales move in 2026, and why?"

    def check(body: dict[str, Any]) -> str:
        return json.dumps({"answered": [0], "unknowns": []})  # the cause is never covered

    script = Script(subquestions=[("What were heat pump sales figures?", 0.9),
                                  ("Which countries bought the most heat pumps?", 0.8)],
                    rules={"CoverageOut": check})  # two: a plan of one is widened at once
    out = await run_engine(serve, script, backend, store, question=question, mode="deep")
    why = "Why (How did heat pump sales move in 2026)?"  # the question's clause, no template
    gaps = out.state.log.of_kind("coverage-gap")
    assert gaps and why in gaps[0].message
    assert why in out.state.extra.unknowns
    report_prompt = last_user_text(out.server.requests_for("")[-1])
    assert "Not covered by the findings" in report_prompt and why in report_prompt
    assert "What caused" not in report_prompt


async def test_the_upgrade_is_the_planner_s_decision_asked_until_80_percent(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    """A 'no' is logged and leaves the run standard even where the fixed rule would ask;
    the planner is asked again at later turns."""
    no = json.dumps({"upgrade": False, "reason": "none", "detail": "coverage is enough"})
    publisher = MemoryPublisher()
    out = await run_engine(serve, Script(subquestions=THREE, rules={"UpgradeOut": lambda b: no}),
                           backend, store, steps=10, evidence_per_done_node=9,
                           rounds_per_node=3, deep_read_relevance=1.0, publisher=publisher)
    asked = out.state.log.of_kind("upgrade-asked")
    assert len(asked) >= 2 and all(e.data["by"] == "model" for e in asked)
    assert min(e.step for e in asked) == 5 and max(e.step for e in asked) < 8  # 50 %..<80 %
    assert out.state.extra.budget["deep_state"] == "standard"
    budget = [e.data.get("event") for e in out.state.log.of_kind("budget")]
    assert "upgrade-requested" not in budget


async def test_an_unusable_upgrade_reply_falls_back_on_the_rule_and_shows_in_the_thread(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    publisher = MemoryPublisher()
    out = await run_engine(serve, Script(subquestions=FOUR,
                                         rules={"UpgradeOut": lambda b: "{no json"}),
                           backend, store, steps=6, evidence_per_done_node=9,
                           rounds_per_node=1, publisher=publisher)
    asked = out.state.log.of_kind("upgrade-asked")
    assert asked and asked[0].data["by"] == "rule"
    assert out.state.extra.budget["deep_state"] == "deep"
    notes = " | ".join(publisher.progress_notes)
    assert "Asked for deeper research" in notes and "Deep research applied" in notes


def _seeker(body: dict[str, Any]) -> str:
    """A planner that follows its instructions: the deep ones ask for a correcting source."""
    question = field_of(body, "Question")
    queries = [question]
    if "correct or contradict" in _system(body):
        queries.append("erratum restated unit count")
    return json.dumps({"queries": queries})


def _add_erratum(backend: RecordingBackend, tmp_path: Path) -> None:
    """Sales for September 2026 were restated; the erratum shares few words with the
    question, so only a query seeking corrections finds it."""
    extra = tmp_path / "erratum"
    extra.mkdir()
    write_doc(extra, CORRECTION, (
        "official_statistics", "en", "2026-10-28", "Erratum: September unit count restated",
        "Erratum: the statistics office restated the September 2026 heat pump unit count to "
        "209,000 units; the 214,000 units first published were corrected."))
    backend.inner.add_folder(extra)


async def _correction_task(serve: Serve, backend: RecordingBackend, store: SqlStore,
                           mode: str) -> Outcome:
    script = Script(subquestions=[("What were heat pump sales figures?", 0.9)],
                    rules={"QueryPlan": _seeker})
    return await run_engine(serve, script, backend, store, question=SALES_Q, mode=mode,
                            hits_per_query=2)


async def test_the_deeper_run_seeks_conflicts_and_finds_the_correction(
        serve: Serve, backend: RecordingBackend, store: SqlStore, tmp_path: Path) -> None:
    """Deep asks the reporter to align versions and finds the erratum. (Standard used to
    miss it; since a plan of one sub-question is widened from the evidence, it may find it
    too: a correction found is never the wrong answer.)"""
    _add_erratum(backend, tmp_path)
    standard = await _correction_task(serve, backend, store, "standard")
    deep = await _correction_task(serve, backend, store, "deep")
    assert CORRECTION in deep.report.cited_source_ids()
    report_call = deep.server.requests_for("")[-1]
    assert "Align versions and definitions" in _system(report_call)
    assert "Align versions" not in _system(standard.server.requests_for("")[-1])
    prompt = last_user_text(report_call)
    assert "Conflict" in prompt and "209,000" in prompt and "214,000" in prompt


def test_conflicts_name_both_sources_and_the_period(tmp_path: Path) -> None:
    from research_core.loop.memory.evidence import Evidence

    def item(source: str, text: str) -> Evidence:
        return Evidence(id=source, node_id="N1", query_id="Q1", source_id=source, title="t",
                        url="u", published=None, source_type="news", publisher=source,
                        text=text, relevance=0.9, credibility=0.6, recency=1.0, score=0.8,
                        reason="", kept=True)

    notes = conflict_notes([
        item("a", "Heat pump sales reached 214,000 units in September 2026 across Europe."),
        item("b", "Heat pump sales reached 209,000 units in September 2026 across Europe.")])
    assert notes and notes[0].startswith("Conflict") and "(a)" in notes[0] and "(b)" in notes[0]
    assert "2026-09" in notes[0]  # the period both figures apply to


async def test_deep_sends_a_part_the_model_judges_mature_before_the_report(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    """One source per node, but the judge finds every facet answered and nothing unknown:
    a mature independent part may still go early."""
    publisher = MemoryPublisher()
    await run_engine(serve, Script(subquestions=THREE), backend, store, mode="deep",
                     publisher=publisher, hits_per_query=1, evidence_per_done_node=1)
    keys = [p.part_key for p in publisher.parts]
    assert keys[-1] == "report" and len(keys) > 1, keys


async def test_an_empty_coverage_reply_is_no_judgement_and_falls_back_on_the_embedder(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    """A reply naming neither an answered facet nor a missing one goes back once, then the
    embedder judges (a small model's '{}' must not keep every node open)."""
    empty = json.dumps({"answered": [], "unknowns": []})
    out = await run_engine(serve, Script(subquestions=THREE[:1],
                                         rules={"CoverageOut": lambda b: empty}),
                           backend, store, mode="deep")
    assert len(out.server.requests_for("CoverageOut")) >= 2
    assert "list the answered facet indexes" in last_user_text(
        out.server.requests_for("CoverageOut")[1])
    judged = out.state.extra.coverage
    assert judged and all(c["by"] == "embedder" for c in judged.values())
    # deep does not take the embedder's word after one round on figures: it verifies first
    verified = [e.data["node"] for e in out.state.log.of_kind("verify")]
    assert verified and all(out.state.tree.nodes[n].rounds >= 2 for n in verified)


def test_deep_s_fallback_queries_seek_corrections_of_the_figures_it_leans_on() -> None:
    asked = read_question("What were heat pump sales in 2026?")
    plain, seeking = query_fallback(asked), query_fallback(asked, seek_corrections=True)
    assert seeking.queries[1:] == plain.queries
    assert "correction" in seeking.queries[0] and "heat" in seeking.queries[0]
    zh = read_question("过去一年富士苹果冷库仓储费是多少？")
    assert "更正" in query_fallback(zh, True).queries[0]


_FEEDBACK_SCRIPT = """
from research_core.loop.planning.planner import query_fallback
from research_core.text.asking import read_question
texts = ["Cherry growers in Otago lifted orchard output; frost hit blossom late.",
         "Otago cherry orchard output rose though frost cut blossom yields.",
         "Orchard blossom frost in Otago trimmed cherry output growth."]
print(query_fallback(read_question("How did Otago cherry exports do?"), feedback=texts).queries[0])
"""


def test_the_feedback_query_does_not_depend_on_the_hash_seed() -> None:
    """Words the kept texts use equally often come in the texts' order, not a set's: the
    query (and so the whole run) is the same in every process (a run differed with
    PYTHONHASHSEED before)."""
    def under(seed: str) -> str:
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", _FEEDBACK_SCRIPT], env=env, check=True,
                              capture_output=True, text=True, timeout=60)
        return done.stdout.strip()
    queries = {under(seed) for seed in ("1", "2", "3", "4", "5", "6")}
    assert len(queries) == 1 and "orchard" in next(iter(queries)), queries


async def test_deep_asks_every_sub_question_once_before_it_verifies_any(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    """Breadth first: deep's round that seeks corrections comes after every sub-question's
    first round (a budget spent verifying the first never leaves the last unasked, which
    standard answers), and a node answered in its first round sends its part before that
    round, so that what the round finds revises a published part."""
    empty = json.dumps({"answered": [], "unknowns": []})
    publisher = MemoryPublisher()
    script = Script(subquestions=THREE, rules={"CoverageOut": lambda b: empty})
    out = await run_engine(serve, script, backend, store, mode="deep", publisher=publisher)
    focus = {e.data["node"]: e.seq for e in reversed(out.state.log.of_kind("focus"))}
    last_asked = max(focus[n] for n in ("N1", "N2", "N3"))  # each one's first focus
    verified = [e.data["node"] for e in out.state.log.of_kind("verify")]
    sent = {e.message.split()[1]: e.seq for e in out.state.log.of_kind("publish")
            if e.message.startswith("part ") and e.message.endswith(" v1")}
    done = {e.data["node"]: e.seq for e in out.state.log.of_kind("done")}
    early = [n for n in verified if n in sent and sent[n] < done.get(n, 1 << 30)]
    assert early, (verified, sent, done)
    assert all(done[n] > last_asked for n in verified if n in done), (focus, done)
    assert {p.part_key for p in publisher.parts} >= set(early)
