"""Paired evaluation: a tiny suite run in two modes with scripted tiers behind the fake OpenAI
server, the recording publisher's versions, the graded text within the reading budget, the
naive baseline beside it, paraphrases and their gap, and the late documents' moment."""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path

import pytest

from redsearch.harness.evaluate import add_arguments, evaluate, render, run_suite
from redsearch.harness.late_docs import LateDocs, LatePoint, late_point, parse_late_at
from redsearch.harness.recording import RecordingPublisher
from research_core.errors import SuiteError
from research_core.evaluation.suite import AFTER_STEP, FIRST_PART, Suite, load_suite
from research_core.loop.report.reporter import Report, Source
from research_core.protocols import SearchRequest
from research_core.runlog import RunLog
from research_core.search.corpus import CorpusBackend
from tests.conftest import DOCS, scripted_settings, write_doc
from tests.engine_run import Serve, default_similarity
from tests.scripted import Script, field_of

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
        - mentions_any: ["from the sources"]
        - cites_any: [stats-sales-2026-09]
    - id: R2
      why: a fact no scripted text states
      checks:
        - mentions_all: ["from the sources", "unobtainium"]
"""


# A page of many figure sentences: enough for the naive baseline to fill a reading budget.
INSTALLS_ID = "stats-installs-2026-09"
INSTALLS_DOC = ("official_statistics", "en", "2026-10-12", "Heat pump sales and installations",
                " ".join(f"Heat pump sales in region {n} were {n * 1000 + 37} units in "
                         f"September 2026, prices {n}.5% lower." for n in range(1, 13)))


def make_suite(root: Path, tasks_yaml: str = TASKS_YAML, *, installs: bool = False) -> Suite:
    (root / "corpus").mkdir(parents=True)
    (root / "corpus_late").mkdir()
    for doc_id in ("stats-sales-2026-09", "news-prices-2026-10", "zh-export-2026-10"):
        write_doc(root / "corpus", doc_id, DOCS[doc_id])
    if installs:
        write_doc(root / "corpus", INSTALLS_ID, INSTALLS_DOC)
    write_doc(root / "corpus_late", LATE_ID, LATE_DOC)
    root.joinpath("tasks.yaml").write_text(tasks_yaml, "utf-8")
    return load_suite(root)


def found(backend: CorpusBackend, query: str) -> list[str]:
    return [h.source_id for h in backend.search_sync(SearchRequest(query))]


def late_docs(suite: Suite, point: LatePoint, publisher: RecordingPublisher,
              said: list[str]) -> tuple[CorpusBackend, LateDocs]:
    backend = CorpusBackend.from_folder(suite.corpus_dir)
    late = LateDocs(suite, suite.tasks[0], backend, point, publisher.elapsed,
                    publisher.late_arrived, said.append)
    publisher.on_first_part = late.after_first_part
    return backend, late


async def test_late_docs_after_the_first_answer_part(tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    publisher = RecordingPublisher(suite.tasks[0].requirements)
    said: list[str] = []
    backend, _ = late_docs(suite, LatePoint(FIRST_PART), publisher, said)
    await publisher.progress("run", "Checking: sales")
    assert found(backend, "correction notice") == []
    await publisher.answer_part("run", "n1", "Sales rose [1].", ["stats-sales-2026-09"])
    assert found(backend, "correction notice") == [LATE_ID]
    assert publisher.late_at_s is not None and publisher.late_after == 1
    assert said == ["[hp-sales] first answer part published: 1 late document(s) now searchable"]
    await publisher.answer_part("run", "n2", "Prices fell [2].", ["news-prices-2026-10"])
    assert len(backend) == 4 and len(said) == 1


async def test_late_docs_after_step_k_whatever_was_published(tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    publisher = RecordingPublisher(suite.tasks[0].requirements)
    said: list[str] = []
    backend, late = late_docs(suite, LatePoint(AFTER_STEP, 2), publisher, said)
    log = RunLog(listeners=[late.on_event])
    await publisher.answer_part("run", "n1", "Sales rose.", [])
    for step in (1, 2):
        log.step = step
        log.emit("focus", "N1")
    assert found(backend, "correction notice") == []
    log.step = 3
    log.emit("focus", "N2")
    assert found(backend, "correction notice") == [LATE_ID]
    assert said == ["[hp-sales] step 2 done: 1 late document(s) now searchable"]


def test_paired_runs_take_a_moment_that_does_not_depend_on_the_mode(tmp_path: Path) -> None:
    task = make_suite(tmp_path).tasks[0]
    assert late_point(task, ["standard", "deep"], None) == LatePoint(AFTER_STEP, 6)
    assert late_point(task, ["standard", "deep"], None, budget_steps=8) == LatePoint(AFTER_STEP, 2)
    assert late_point(task, ["deep"], None) == LatePoint(FIRST_PART)
    assert late_point(task, ["standard", "deep"], LatePoint(FIRST_PART)) == LatePoint(FIRST_PART)
    assert parse_late_at("step:4") == LatePoint(AFTER_STEP, 4)
    assert parse_late_at("time:2.5").describe() == "at 2.5 s"
    for bad in ("step", "step:1.5", "time:-1", "first-part:3", "noon"):
        with pytest.raises(SuiteError, match="--late-at"):
            parse_late_at(bad)


async def test_revised_needs_a_revision_after_the_late_docs_that_cites_one(
        tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    ids = frozenset({"stats-sales-2026-09", LATE_ID})
    publisher = RecordingPublisher(suite.tasks[0].requirements, known_ids=ids,
                                   late_ids=frozenset({LATE_ID}))
    first = await publisher.answer_part("run", "n1", "Sales 214,000 (stats-sales-2026-09).", [])
    await publisher.answer_part("run", "n1", "Sales were 214,000 units (stats-sales-2026-09).",
                                [LATE_ID], replaces=first, reason="reworded")
    assert publisher.revisions == 1 and not publisher.answer().revised  # before the late docs
    publisher.late_arrived()
    await publisher.answer_part("run", "n1", "Sales: 214,000 (stats-sales-2026-09).",
                                [LATE_ID], replaces=first, reason="again")
    assert not publisher.answer().revised  # after them, but its text does not cite one
    await publisher.answer_part("run", "n1", f"Sales were corrected to 209,000 ({LATE_ID}).",
                                [], replaces=first, reason="correction")
    answer = publisher.answer()
    assert answer.revised and answer.cited_ids == frozenset({LATE_ID})
    assert LATE_ID not in answer.text and "209,000" in answer.text
    assert publisher.parts["n1"][-1].reason == "correction"


async def test_replaces_under_a_new_key_revises_the_old_part(tmp_path: Path) -> None:
    publisher = RecordingPublisher(make_suite(tmp_path).tasks[0].requirements)
    await publisher.answer_part("run", "a", "one", [])
    await publisher.answer_part("run", "b", "two", [])
    await publisher.answer_part("run", "a-v2", "one again", [], replaces="a")
    assert [v[-1].text for v in publisher.parts.values()] == ["one again", "two"]
    assert publisher.revisions == 1


async def test_run_suite_grades_every_mode_and_prints_the_table(
        tmp_path: Path, serve: Serve, capsys: pytest.CaptureFixture[str]) -> None:
    suite = make_suite(tmp_path)
    server = await serve(Script())
    said: list[str] = []
    settings = scripted_settings(server.base_url, max_steps=4, deep_allowed=("U-nobody",))
    results = await run_suite(suite, ["standard", "deep"], None, settings,
                              similarity=default_similarity(), say=said.append,
                              late_at=LatePoint(AFTER_STEP, 1))  # the split researches
    # its first sub-question in the same step: this run's two take steps 1 and 2
    assert [(r.task_id, r.mode, r.mode_applied) for r in results] == [
        ("hp-sales", "standard", "standard"), ("hp-sales", "deep", "standard")]
    for r in results:
        assert not r.error and r.late_at == "after step 1" and r.late_docs_s is not None
        assert (r.groups_passed, len(r.groups)) == (1, 2)
        assert [g.id for g in r.groups if not g.passed] == ["R2"]
        assert r.first_all_passed_s is None and r.completion_s > 0
        assert all(r.tokens(t) > 0 for t in ("planner", "executor", "reporter"))
        # the BM25 quoter on the whole corpus: its paragraphs never say "from the sources"
        assert [g.id for g in r.quoter_groups] == ["R1", "R2"] and r.quoter_groups_passed == 0
        assert "[" not in r.quoter_answer and "heat pump" in r.quoter_answer.lower()
        assert r.evidence_recall == r.retrieval_recall == 1.0  # the needed document was kept
    assert sum(r.model_calls for r in results) == len(server.requests)
    assert said[0] == "[hp-sales/standard] start" and said[-1].startswith(
        "[hp-sales/deep] end: 1/2 groups")
    assert "[hp-sales/deep] step 1 done: 1 late document(s) now searchable" in said
    print(render(suite, results))
    out = capsys.readouterr().out
    assert "== hp-sales (suite depth standard, as of 2026-10-31)" in out
    assert "late documents: after step 1 (arrived: standard " in out
    rows = [line for line in out.splitlines() if line.startswith(("standard", "deep"))]
    assert len(rows) == 2 and rows[1].startswith("deep→standard ")
    assert all("1/2" in row and "not reached" in row for row in rows)
    assert "  standard failed R2: mentions_all: does not mention ['unobtainium']" in out
    assert all("0/2     100%" in row for row in rows)  # the quoter's groups, the recall
    assert "all tasks, standard: 1/2 groups, BM25 quoter 0/2 (n/a), evidence recall 100% " \
        "(retrieved 100%)" in out


async def test_evaluate_reports_the_first_moment_all_groups_passed_and_writes_json(
        tmp_path: Path, serve: Serve, capsys: pytest.CaptureFixture[str]) -> None:
    make_suite(tmp_path / "suite", TASKS_YAML.replace('"unobtainium"', '"finding"'))
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
    assert result["mode_applied"] == "standard"
    assert result["late_at"] == "after the first answer part"
    assert 0 < result["first_all_passed_s"] <= result["completion_s"]
    assert result["model_calls"] == len(server.requests)
    assert result["answer_chars"] == result["graded_chars"] == len(result["answer"]) > 0
    assert "from the sources" in result["answer"] and "stats-sales" not in result["answer"]
    assert len(result["naive_answer"]) <= result["graded_chars"]
    assert result["naive_groups_passed"] == 0 and len(result["naive_groups"]) == 2
    assert (result["paraphrase_of"], data["paraphrase_gaps"]) == ("", {})
    assert all(not line.startswith("[hp-sales/standard] [step") for line in said)
    assert "2/2" in capsys.readouterr().out


async def test_unknown_modes_tasks_and_moments_are_suite_errors(tmp_path: Path) -> None:
    make_suite(tmp_path / "suite")
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    for extra, message in ((["--modes", "turbo"], "unknown mode"),
                           (["--tasks", "nope"], "unknown task 'nope'"),
                           (["--late-at", "lunch"], "--late-at 'lunch'")):
        args = parser.parse_args(["--suite", str(tmp_path / "suite"), *extra])
        with pytest.raises(SuiteError, match=message):
            await evaluate(args, scripted_settings("http://127.0.0.1:9/v1"))


GOLD_TASK = """
- id: foil-fee
  question: "铜箔加工费近一年怎么变？"
  as_of: 2026-10-31
  depth: standard
  requirements:
    - id: R1
      why: the processing fee, with its figure and a primary source
      checks:
        - mentions_any: ["铜箔", "copper foil"]
        - mentions_any: ["加工费", "processing fee"]
        - mentions_number: {any_of: ["1.86", "18,600"]}
        - cites_any: [assoc-foil-2026-09]
"""
FOIL_DOC = ("industry_association", "zh", "2026-10-05", "Copper foil processing fee 1.86 in "
            "September", "6μm铜箔9月加工费为1.86万元/吨。")


def _report(body: str) -> str:
    source = Source(1, "assoc-foil-2026-09", FOIL_DOC[3], "https://a.example/foil",
                    "Foil Association", dt.date(2026, 10, 5), "industry_association")
    return Report(body, [source], [1], False).render()


async def test_a_titles_only_report_fails_and_a_gold_like_one_passes(tmp_path: Path) -> None:
    (tmp_path / "corpus").mkdir()
    write_doc(tmp_path / "corpus", "assoc-foil-2026-09", FOIL_DOC)
    tmp_path.joinpath("tasks.yaml").write_text(GOLD_TASK, "utf-8")
    task = load_suite(tmp_path).tasks[0]
    known = frozenset({"assoc-foil-2026-09"})
    cases = {"See the sources below for details [1].": False,
             "6μm copper foil processing fees were 1.86 (10k yuan/t) in September [1].": True,
             "6μm铜箔9月加工费为1.86万元/吨。": False}  # right words, but it cites nothing
    for body, passes in cases.items():
        publisher = RecordingPublisher(task.requirements, known_ids=known)
        await publisher.answer_part("run", "report", _report(body), ["assoc-foil-2026-09"])
        [r1] = publisher.grade()
        assert r1.passed is passes, (body, r1.failures)


async def test_a_part_cites_what_its_text_cites_not_its_sources_list(tmp_path: Path) -> None:
    publisher = RecordingPublisher(make_suite(tmp_path).tasks[0].requirements,
                                   known_ids=frozenset({"stats-sales-2026-09",
                                                        "zh-export-2026-10"}))
    await publisher.answer_part("run", "N1", "Sales rose, from the sources.",
                                ["stats-sales-2026-09"])
    assert publisher.answer().cited_ids == frozenset()
    await publisher.answer_part("run", "N2", "Exports grew 18% (zh-export-2026-10).",
                                ["stats-sales-2026-09"])
    answer = publisher.answer()
    assert answer.cited_ids == frozenset({"zh-export-2026-10"})
    assert "zh-export" not in answer.text


# ---- the reading budget, the naive baseline, paraphrases --------------------------------------

def _sales_report(body: str) -> str:
    source = Source(1, "stats-sales-2026-09", "Heat pump sales statistics", "https://s.example",
                    "Statistics office", dt.date(2026, 10, 10), "official_statistics")
    return Report(body, [source], [1], False).render()


async def test_text_past_the_reading_budget_does_not_pass_a_group(tmp_path: Path) -> None:
    [r1, _] = make_suite(tmp_path).tasks[0].requirements
    lead = ("Sales moved. " * 30).strip()  # 389 characters that pass nothing
    finding = "Findings from the sources [1]."
    unread_citation = len(lead) + 2 + finding.index("]")  # the words read, "]" not
    for budget, passes in ((None, True), (2400, True), (400, False), (unread_citation, False)):
        publisher = RecordingPublisher([r1], known_ids=frozenset({"stats-sales-2026-09"}),
                                       reading_budget=budget)
        await publisher.answer_part("run", "lead", lead, [])
        await publisher.answer_part("run", "report", _sales_report(finding), [])
        [graded] = publisher.grade()
        assert graded.passed is passes, (budget, graded.failures)
        assert publisher.reading().text == f"{lead}\n\n{finding}"
        assert len(publisher.answer().text) == min(budget or 10_000, len(lead) + 32)
    assert publisher.answer().text.endswith("from the sources [1")
    assert graded.first_reason().startswith("cites_any: cites none of")


async def test_a_run_is_graded_within_the_budget_beside_the_naive_baseline(
        tmp_path: Path, serve: Serve, capsys: pytest.CaptureFixture[str]) -> None:
    """The whole path: whatever length the answer has, what is graded lies within the budget,
    and the naive baseline on the run's kept pages is exactly as long (the installs page has
    figure sentences enough) and graded on the same groups."""
    suite = make_suite(tmp_path, installs=True)
    server = await serve(Script())
    settings = scripted_settings(server.base_url, max_steps=4, reading_budget_chars=400)
    [run] = await run_suite(suite, ["standard"], None, settings, similarity=default_similarity())
    assert 0 < run.graded_chars == len(run.answer) == min(run.answer_chars, 400)
    assert len(run.naive_answer) == run.graded_chars  # length-matched, so within the budget
    assert "Heat pump sales in region 1 were 1037 units" in run.naive_answer
    assert [g.id for g in run.naive_groups] == ["R1", "R2"]
    assert run.naive_groups_passed == 0  # no figure sentence says "from the sources"
    print(render(suite, [run]))
    out = capsys.readouterr().out
    assert "mode              groups  naive   quoter  recall  chars          all passed at" in out
    chars = f"{run.answer_chars:,}" + (f"→{run.graded_chars}" if run.answer_chars > 400 else "")
    [row] = [line for line in out.splitlines() if line.startswith("standard")]
    assert row.startswith(f"standard          {run.groups_passed}/2     0/2     0/2     "
                          f"100%    {chars} ")


PARAPHRASED = "In other words: what did heat pump sales and prices do during 2026?"
ANOTHER = "Heat pump sales and prices in 2026, how did they move?"


def _wording_report(body: dict[str, object]) -> str:
    """The scripted report, but one that passes nothing for the paraphrase 'In other words'."""
    if field_of(body, "Question").startswith("In other words"):
        return "Heat pumps [1]."
    return Script().default_report(body)


async def test_paraphrases_run_as_tasks_and_the_gap_is_printed(
        tmp_path: Path, serve: Serve, capsys: pytest.CaptureFixture[str]) -> None:
    tasks = TASKS_YAML.replace('"unobtainium"', '"finding"').replace(
        "  depth: standard", f'  depth: standard\n  paraphrases: ["{PARAPHRASED}"]')
    make_suite(tmp_path / "suite", tasks)
    extra = tmp_path / "paraphrases.yaml"
    extra.write_text(f'hp-sales: ["{ANOTHER}"]\n', "utf-8")
    server = await serve(Script(rules={"report": _wording_report}))
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    out_json = tmp_path / "results.json"
    args = parser.parse_args(["--suite", str(tmp_path / "suite"), "--modes", "standard",
                              "--paraphrase-file", str(extra), "--json", str(out_json),
                              "--quiet"])
    said: list[str] = []
    assert await evaluate(args, scripted_settings(server.base_url, max_steps=3), said.append) == 0
    out = capsys.readouterr().out
    assert "== hp-sales~p1 (paraphrase of hp-sales, suite depth standard" in out
    assert "== hp-sales~p2 (paraphrase of hp-sales, suite depth standard" in out
    assert "hp-sales: paraphrase gap: originals 2/2, paraphrases 1/2 per run, -50%" in out
    assert "all tasks: paraphrase gap: originals 2/2, paraphrases 1/2 per run, -50%" in out
    assert any(line.startswith("[hp-sales~p2/standard] end: 2/2 groups") for line in said)
    data = json.loads(out_json.read_text("utf-8"))
    assert [(r["task_id"], r["paraphrase_of"], r["groups_passed"]) for r in data["results"]] == [
        ("hp-sales", "", 2), ("hp-sales~p1", "hp-sales", 0), ("hp-sales~p2", "hp-sales", 2)]
    assert data["paraphrase_gaps"] == {
        "hp-sales": {"passed": 2, "total": 2, "paraphrased": 1.0, "change": -0.5}}


async def test_without_paraphrases_only_the_originals_run(
        tmp_path: Path, serve: Serve, capsys: pytest.CaptureFixture[str]) -> None:
    tasks = TASKS_YAML.replace("  depth: standard",
                               f'  depth: standard\n  paraphrases: ["{ANOTHER}"]')
    suite = make_suite(tmp_path, tasks)
    server = await serve(Script())
    results = await run_suite(suite, ["standard"], None,
                              scripted_settings(server.base_url, max_steps=2),
                              similarity=default_similarity())
    assert [r.task_id for r in results] == ["hp-sales"]
    assert "paraphrase gap" not in render(suite, results)
