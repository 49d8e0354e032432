"""The goal tree as a plan: read from real engine runs (scripted tiers, a real corpus), and
folded to fit Slack's limits; rendered as the plan block of task cards Slack takes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from playground.fake_slack_blocks import check_message_blocks
from research_core.loop.publishing.plan_view import plan_view
from research_core.plan import PlanSource, PlanTask, PlanView
from research_core.search.corpus import CorpusBackend
from research_core.store.sql import SqlStore
from tests.conftest import RecordingBackend, write_doc
from tests.engine_run import Serve, run_engine
from tests.scripted import Script
from tests.test_modes import FOUR
from tests.test_progress_notes import CORRECTION
from workers.plan_blocks import PLAN_TASKS, plan_blocks


def rich(value: Any) -> str:
    return json.dumps(value or {}, ensure_ascii=False)


async def test_a_finished_run_reads_as_a_plan_with_findings_sources_and_conflicts(
        serve: Serve, corpus_dir: Path, store: SqlStore) -> None:
    write_doc(corpus_dir, "stats-sales-correction-2026-10", CORRECTION)
    backend = RecordingBackend(CorpusBackend.from_folder(corpus_dir))
    out = await run_engine(serve, Script(), backend, store, mode="standard")
    view = plan_view(out.state)
    assert view.title == "Done — standard"
    root, *tasks = view.tasks
    assert (root.task_id, root.status, root.output) == ("N0", "complete", "2 sub-questions")
    assert [t.title for t in tasks] == [q for q, _ in Script().subquestions]
    sales = tasks[0]
    assert sales.status == "complete" and "09,000 units" in sales.output  # figures kept
    assert not sales.output.startswith("E")  # the evidence line, not its tag
    assert sales.sources and all(s.url.startswith("https://") for s in sales.sources)
    assert any(d.startswith("Sources disagree: ") and "214,000 units" in d
               and "209,000 units" in d for d in sales.details), sales.details
    assert "Answer part published" in sales.details
    blocks = plan_blocks(view)
    check_message_blocks(blocks)  # what Slack takes
    [card] = [c for c in blocks[0]["tasks"] if c["task_id"] == sales.task_id]
    assert card["sources"][0] == {"type": "url", "url": sales.sources[0].url,
                                  "text": sales.sources[0].title}
    assert sales.output in rich(card["output"])


async def test_deep_decisions_reflection_and_whats_missing_are_task_details(
        serve: Serve, backend: RecordingBackend, store: SqlStore) -> None:
    out = await run_engine(serve, Script(subquestions=FOUR), backend, store, steps=6,
                           evidence_per_done_node=9, rounds_per_node=1)
    view = plan_view(out.state)
    details = [d for t in view.tasks for d in t.details]
    assert any(d.startswith("Deep research requested: ") for d in details), details
    assert any(d.startswith("Deep research applied: ") for d in details), details
    assert out.state.log.of_kind("reflect")  # reflection ran; its answers are the log's:
    assert not any("answers goal" in d or "drifted:" in d or "neglected:" in d
                   or "off-goal" in d for d in details), details  # no internal state shown
    assert view.title.endswith("— deep")  # applied deep: the run is deep from then on
    errors = [t for t in view.tasks if t.status == "error"]
    assert errors and all(t.output.startswith("Insufficient evidence: ") for t in errors)


def test_a_running_plan_shows_the_step_and_the_task_in_progress() -> None:
    from research_core.loop.memory.state import RunState
    from research_core.settings import Settings
    from tests.conftest import AS_OF
    state = RunState.new("How did heat pump sales move?", AS_OF, Settings())  # as resumed:
    # a checkpoint does not keep the mode; the run log's start event does
    state.log.emit("budget", "standard mode, deep state standard", event="start",
                   totals={"steps": 36})
    assert plan_view(state).title == "Planning — splitting the question (standard)"
    child = state.tree.add_child("N0", "What were the sales?", 0.9)
    state.tree.add_child("N0", "What were the prices?", 0.8)
    state.step = 7
    state.working.reset(child.id)
    view = plan_view(state)
    assert view.title == "Researching — step 7 of 36, standard"
    assert [t.status for t in view.tasks] == ["complete", "in_progress", "pending"]
    assert view.tasks[1].output == "Searching…"


def test_large_trees_fold_finished_branches_to_stay_within_the_limit() -> None:
    tasks = [PlanTask("N0", "split", "complete")]
    for i in range(1, 31):  # 30 sub-questions, each with two narrower ones
        tasks.append(PlanTask(f"A{i}", f"question {i}", "complete" if i < 25 else "pending",
                              parent_id="N0"))
        tasks += [PlanTask(f"A{i}.{j}", f"narrower {i}.{j}", "complete" if i < 25 else "error",
                           parent_id=f"A{i}", sources=(PlanSource("https://s.example", "s"),))
                  for j in (1, 2)]
    view = PlanView("Researching — step 90 of 108, deep", tuple(tasks))
    folded = view.folded(PLAN_TASKS)
    assert len(folded.tasks) <= PLAN_TASKS
    assert folded.tasks[0].task_id == "N0"
    ids = [t.task_id for t in folded.tasks]
    assert "A30" in ids and "A30.1" in ids, "unfinished branches stay as they are"
    folded_notes = [d for t in folded.tasks for d in t.details if "folded" in d]
    assert folded_notes and "2 answered" in folded_notes[0]
    blocks = plan_blocks(view)
    check_message_blocks(blocks)
    assert len(blocks[0]["tasks"]) <= PLAN_TASKS
    tiny = view.folded(5)
    assert len(tiny.tasks) == 5 and tiny.tasks[-1].task_id == "more"
    assert any(t.task_id == "folded" for t in tiny.tasks)


def test_task_texts_are_cut_and_unsafe_source_urls_dropped() -> None:
    task = PlanTask("N1", "q" * 500, "complete", output="o" * 900,
                    details=tuple(f"d{i} <!channel>" for i in range(3)),
                    sources=(PlanSource("javascript:alert(1)", "bad"),
                             PlanSource("https://ok.example/a", "ok <@U1>")))
    [block] = plan_blocks(PlanView("t" * 400, (task,)))
    check_message_blocks([block])
    card = block["tasks"][0]
    assert len(block["title"]) <= 150 and len(card["title"]) <= 150
    assert card["sources"] == [{"type": "url", "url": "https://ok.example/a",
                                "text": "ok <@U1>"}]  # plain text in a url element
    assert card["details"]["elements"][0]["type"] == "rich_text_list"
