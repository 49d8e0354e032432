"""Paired evaluation: a tiny suite run in two modes with scripted tiers behind the fake OpenAI
server, the recording publisher's versions and its late-document event hook."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from redsearch.evaluate import (
    RecordingPublisher,
    add_arguments,
    evaluate,
    late_docs_hook,
    render,
    run_suite,
)
from research_core.corpus import CorpusBackend
from research_core.protocols import SearchRequest
from research_core.suite import Suite, SuiteError, load_suite
from tests.conftest import DOCS, scripted_settings, write_doc
from tests.engine_run import Serve, default_similarity
from tests.scripted import Script

LATE_ID = "late-sales-correction"
LATE_DOC = ("official_statistics", "en", "2026-10-30", "Correction notice on heat pump sales",
            "Correction: September 2026 heat pump sales were 209,000 units, not 214,000.")

TASKS_YAML = """
- id: hp-sales
  question: "How did heat pump sales and prices move in 2026?"
  as_of: 2026-10-31
  depth: standard
  events:
    - when: after_first_answer_part
      add_docs: [late-sales-correction]
  requirements:
    - id: R1
      why: the scripted report's findings, citing the sales statistics
      checks:
        - mentions_any: ["finding number"]
        - cites_any: [stats-sales-2026-09]
        - cites_none: [old-sales-2022]
    - id: R2
      why: a fact no scripted text states
      checks:
        - mentions_all: ["finding number", "unobtainium"]
"""


def make_suite(root: Path, tasks_yaml: str = TASKS_YAML) -> Suite:
    (root / "corpus").mkdir(parents=True)
    (root / "corpus_late").mkdir()
    for doc_id in ("stats-sales-2026-09", "news-prices-2026-10", "zh-export-2026-10"):
        write_doc(root / "corpus", doc_id, DOCS[doc_id])
    write_doc(root / "corpus_late", LATE_ID, LATE_DOC)
    root.joinpath("tasks.yaml").write_text(tasks_yaml, "utf-8")
    return load_suite(root)


def found(backend: CorpusBackend, query: str) -> list[str]:
    return [h.source_id for h in backend.search_sync(SearchRequest(query))]


async def test_the_late_doc_is_searchable_only_after_the_first_answer_part(
        tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    task = suite.task("hp-sales")
    backend = CorpusBackend.from_folder(suite.corpus_dir)
    said: list[str] = []
    hook = late_docs_hook(suite, task, backend, said.append)
    publisher = RecordingPublisher(task.requirements, on_first_part=hook)
    await publisher.progress("run", "Checking: sales")
    assert found(backend, "correction notice") == []
    assert publisher.first_part_hook_s is None
    await publisher.answer_part("run", "n1", "Sales rose [1].", ["stats-sales-2026-09"])
    assert found(backend, "correction notice") == [LATE_ID]
    assert publisher.first_part_hook_s is not None
    assert said == ["[hp-sales] first answer part published: 1 late document(s) now searchable"]
    await publisher.answer_part("run", "n2", "Prices fell [2].", ["news-prices-2026-10"])
    assert len(backend) == 4 and len(said) == 1
    assert sorted(p.name for p in suite.late_files.values()) == [f"{LATE_ID}.md"]


async def test_a_task_without_events_has_no_hook(tmp_path: Path) -> None:
    suite = make_suite(tmp_path, TASKS_YAML.replace(
        "  events:\n    - when: after_first_answer_part\n      add_docs: [late-sales-correction]\n",
        ""))
    backend = CorpusBackend.from_folder(suite.corpus_dir)
    assert late_docs_hook(suite, suite.tasks[0], backend, print) is None


async def test_revisions_replace_the_visible_version_and_set_revised(tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    now = [100.0]
    publisher = RecordingPublisher(suite.tasks[0].requirements, clock=lambda: now[0])
    now[0] = 102.0
    first = await publisher.answer_part("run", "n1", "Finding number one, old.", ["x"])
    assert first is not None and publisher.answer().revised is False
    now[0] = 105.0
    await publisher.answer_part("run", "n1", "Finding number one, unobtainium.",
                                ["stats-sales-2026-09"], replaces=first, reason="correction")
    ans = publisher.answer()
    assert ans.revised and (publisher.publications, publisher.revisions) == (2, 1)
    assert "old" not in ans.text and "unobtainium" in ans.text
    assert ans.cited_ids == frozenset({"stats-sales-2026-09"})
    assert publisher.first_all_passed_s == 5.0
    assert publisher.parts["n1"][-1].reason == "correction"


async def test_replaces_under_a_new_key_revises_the_old_part(tmp_path: Path) -> None:
    publisher = RecordingPublisher(make_suite(tmp_path).tasks[0].requirements)
    await publisher.answer_part("run", "a", "one", [])
    await publisher.answer_part("run", "b", "two", [])
    await publisher.answer_part("run", "a-v2", "one again", [], replaces="a")
    assert [v[-1].text for v in publisher.parts.values()] == ["one again", "two"]
    assert publisher.revisions == 1 and publisher.answer().revised


async def test_run_suite_grades_every_mode_and_prints_the_table(
        tmp_path: Path, serve: Serve, capsys: pytest.CaptureFixture[str]) -> None:
    suite = make_suite(tmp_path)
    server = await serve(Script())
    said: list[str] = []
    results = await run_suite(suite, ["standard", "deep"], None,
                              scripted_settings(server.base_url, max_steps=4),
                              similarity=default_similarity(), say=said.append)
    assert [(r.task_id, r.mode) for r in results] == [("hp-sales", "standard"),
                                                      ("hp-sales", "deep")]
    for r in results:
        assert not r.error
        assert (r.groups_passed, len(r.groups)) == (1, 2)
        assert [g.id for g in r.groups if not g.passed] == ["R2"]
        assert r.first_all_passed_s is None
        assert r.completion_s > 0
        assert {t.tier for t in r.tiers} == {"planner", "executor", "reporter"}
        assert all(r.tokens(t) > 0 for t in ("planner", "executor", "reporter"))
    assert sum(r.model_calls for r in results) == len(server.requests)
    assert said[0] == "[hp-sales/standard] start" and said[-1].startswith(
        "[hp-sales/deep] end: 1/2 groups")
    table = render(suite, results)
    print(table)
    out = capsys.readouterr().out
    assert "== hp-sales (suite depth standard, as of 2026-10-31)" in out
    assert "all passed at" in out and "planner tok" in out
    rows = [line for line in out.splitlines() if line.startswith(("standard", "deep"))]
    assert len(rows) == 2 and all("1/2" in row and "not reached" in row for row in rows)
    assert "  standard failed R2: mentions_all: does not mention ['unobtainium']" in out


async def test_evaluate_reports_the_first_moment_all_groups_passed_and_writes_json(
        tmp_path: Path, serve: Serve, capsys: pytest.CaptureFixture[str]) -> None:
    make_suite(tmp_path / "suite", TASKS_YAML.replace('"unobtainium"', '"from the sources"'))
    server = await serve(Script())
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    out_json = tmp_path / "results.json"
    args = parser.parse_args(["--suite", str(tmp_path / "suite"), "--modes", "standard",
                              "--tasks", "hp-sales", "--json", str(out_json), "--quiet"])
    said: list[str] = []
    code = await evaluate(args, scripted_settings(server.base_url, max_steps=3), said.append)
    assert code == 0
    data = json.loads(out_json.read_text("utf-8"))
    [result] = data["results"]
    assert (result["mode"], result["groups_passed"], result["groups_total"]) == ("standard", 2, 2)
    assert 0 < result["first_all_passed_s"] <= result["completion_s"]
    assert result["model_calls"] == len(server.requests)
    assert all(not line.startswith("[hp-sales/standard] [step") for line in said)
    assert "2/2" in capsys.readouterr().out


async def test_unknown_modes_and_tasks_are_suite_errors(tmp_path: Path) -> None:
    make_suite(tmp_path / "suite")
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    for extra, message in ((["--modes", "turbo"], "unknown mode"),
                           (["--tasks", "nope"], "unknown task 'nope'")):
        args = parser.parse_args(["--suite", str(tmp_path / "suite"), *extra])
        with pytest.raises(SuiteError, match=message):
            await evaluate(args, scripted_settings("http://127.0.0.1:9/v1"))
