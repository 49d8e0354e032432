"""`redsearch eval`: paired evaluation of research modes over a suite
(`research_core.evaluation.suite`).

Every task runs in each mode on a fresh index of the suite's corpus, a fresh temporary SQLite
store and the same model settings. A recording publisher (`redsearch.harness.recording`) keeps
every answer part with its versions and grades the answer's own text after every publication,
so that the first moment all requirement groups passed is known. The task's late documents
arrive at one moment (`redsearch.harness.late_docs`): for paired runs one that does not depend
on the mode. The table shows the mode asked for and, where it differs, the mode applied. Progress
goes to stderr, tables to stdout.

Only what a reader reads is graded: the answer's first `reading_budget_chars` characters
(`redsearch.harness.recording`). Beside it the naive baseline (`research_core.evaluation.naive`) is
graded on the same run's retrieval at the same length. With `--paraphrases` every task's
paraphrases run too, and the gap between them and the original is printed
(`research_core.evaluation.gap`).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from redsearch.harness.late_docs import LateDocs, LatePoint, late_point, parse_late_at
from redsearch.harness.recording import RecordingPublisher
from redsearch.json_output import check_writable, write_json
from redsearch.terminal import say as stderr_line
from research_core.errors import RunError, SuiteError
from research_core.evaluation import naive, quoter
from research_core.evaluation.gap import Gap, gap, total
from research_core.evaluation.grading import Answer, GroupResult, grade
from research_core.evaluation.recall import evidence_recall
from research_core.evaluation.suite import DEPTHS, Suite, Task, load_suite, with_paraphrases
from research_core.loop.engine import Engine
from research_core.loop.memory.state import RunState
from research_core.models.embeddings import build_similarity
from research_core.models.ledger import TierTotals
from research_core.models.tier_factory import aclose_tiers, build_tiers
from research_core.protocols import ModelTier, Similarity
from research_core.question import validate_question
from research_core.runlog import LogEvent
from research_core.search.corpus import CorpusBackend
from research_core.settings import TIERS, Settings
from research_core.store.sql import SqlStore

DEFAULT_MODES = ("standard", "deep")
Say = Callable[[str], None]
Hook = Callable[[], Awaitable[None]]


@dataclass
class TaskResult:
    task_id: str
    mode: str
    run_id: str
    groups: list[GroupResult]
    first_all_passed_s: float | None
    completion_s: float
    tiers: list[TierTotals]
    publications: int = 0
    revisions: int = 0
    late_docs_s: float | None = None
    error: str = ""
    mode_applied: str = ""
    late_at: str = ""
    answer: str = ""  # the graded text: the answer within the reading budget
    answer_chars: int = 0  # the whole answer's length
    graded_chars: int = 0  # the graded text's length
    naive_groups: list[GroupResult] = field(default_factory=list)
    naive_answer: str = ""
    paraphrase_of: str = ""  # the original task's id, for a paraphrase's run
    quoter_groups: list[GroupResult] = field(default_factory=list)  # the BM25 quoter's
    quoter_answer: str = ""
    evidence_recall: float | None = None  # needed documents kept (None: the task names none)
    retrieval_recall: float | None = None  # needed documents any search of the run returned
    kept_ids: list[str] = field(default_factory=list)  # the sources the pool kept
    retrieved_ids: list[str] = field(default_factory=list)  # the sources any search returned
    calls: dict[str, tuple[int, int]] = field(default_factory=dict)  # kind: (made, accepted)

    @property
    def mode_shown(self) -> str:
        applied = self.mode_applied or self.mode
        return self.mode if applied == self.mode else f"{self.mode}→{applied}"

    @property
    def groups_passed(self) -> int:
        return sum(g.passed for g in self.groups)

    @property
    def naive_groups_passed(self) -> int:
        return sum(g.passed for g in self.naive_groups)

    @property
    def quoter_groups_passed(self) -> int:
        return sum(g.passed for g in self.quoter_groups)

    @property
    def score(self) -> tuple[int, int]:
        return self.groups_passed, len(self.groups)

    @property
    def model_calls(self) -> int:
        return sum(t.calls for t in self.tiers)

    def tokens(self, tier: str) -> int:
        return sum(t.total_tokens for t in self.tiers if t.tier == tier)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(groups_passed=self.groups_passed, groups_total=len(self.groups),
                    naive_groups_passed=self.naive_groups_passed,
                    quoter_groups_passed=self.quoter_groups_passed,
                    model_calls=self.model_calls)
        return data


@dataclass
class SuiteRunner:
    suite: Suite
    settings: Settings
    tiers: Mapping[str, ModelTier]
    similarity: Similarity
    say: Say
    run_log: Say | None = None
    modes: Sequence[str] = DEFAULT_MODES
    late_at: LatePoint | None = None

    async def run(self, task: Task, mode: str) -> TaskResult:
        label = f"{task.id}/{mode}"
        self.say(f"[{label}] start")
        backend = CorpusBackend.from_folder(self.suite.corpus_dir, self.similarity)
        floor = quoter_baseline(task, backend, self.settings.engine.reading_budget_chars)
        try:
            with tempfile.TemporaryDirectory(prefix="redsearch-eval-") as tmp:
                store = await SqlStore.open(f"sqlite+aiosqlite:///{Path(tmp) / 'eval.db'}")
                try:
                    result = await self._run_in(task, mode, backend, store)
                finally:
                    await store.close()
        finally:
            backend.close()
        result.quoter_answer, result.quoter_groups = floor.text, grade(floor, task.requirements)
        self.say(f"[{label}] end: {_end_line(result, len(task.requirements))}")
        return result

    async def _run_in(self, task: Task, mode: str, backend: CorpusBackend,
                      store: SqlStore) -> TaskResult:
        question = validate_question(task.question, self.settings.engine.max_question_chars)
        state = RunState.new(question, task.as_of, self.settings, mode=mode)
        if self.run_log is not None:
            state.log.listeners.append(_log_listener(f"{task.id}/{mode}", self.run_log))
        publisher, late = self._publisher(task, mode, backend)
        if late is not None:
            state.log.listeners.append(late.on_event)
        engine = Engine.build(self.settings, self.tiers, backend, store,
                              similarity=self.similarity, publisher=publisher)
        error = ""
        try:
            await engine.run(state)
        except RunError as exc:
            error = str(exc)
        result = result_of(task, mode, state, publisher, late, error)
        result.kept_ids = sorted({e.source_id for e in state.kept()})
        result.retrieved_ids = sorted(state.extra.retrieved)
        result.calls = state.ledger.by_purpose()
        result.evidence_recall = evidence_recall(task.requirements, result.kept_ids)
        result.retrieval_recall = evidence_recall(task.requirements, result.retrieved_ids)
        return with_answers(result, publisher, naive_baseline(state, backend, publisher),
                            task)

    def _publisher(self, task: Task, mode: str,
                   backend: CorpusBackend) -> tuple[RecordingPublisher, LateDocs | None]:
        """The recording publisher for one run, and its late documents (None: the task has
        none)."""
        known = frozenset(d.source_id for d in backend.documents())
        budget = self.settings.engine.reading_budget_chars
        point = late_point(task, self.modes, self.late_at, self.settings.budget.steps)
        if point is None:
            return RecordingPublisher(task.requirements, known_ids=known,
                                      reading_budget=budget), None
        late_ids = frozenset(d for e in task.events for d in e.add_docs)
        publisher = RecordingPublisher(task.requirements, known_ids=known, late_ids=late_ids,
                                       reading_budget=budget)
        late = LateDocs(self.suite, task, backend, point, publisher.elapsed,
                        publisher.late_arrived, self.say, f"{task.id}/{mode}")
        publisher.on_first_part = late.after_first_part
        return publisher, late


def result_of(task: Task, mode: str, state: RunState, publisher: RecordingPublisher,
              late: LateDocs | None, error: str) -> TaskResult:
    """A finished run's grades, times and counts."""
    return TaskResult(
        task.id, mode, state.run_id, publisher.grade(), _round(publisher.first_all_passed_s),
        round(publisher.elapsed(), 2), state.ledger.totals(), publisher.publications,
        publisher.revisions, _round(publisher.late_at_s), error, applied_mode(state),
        late.point.describe() if late else "", paraphrase_of=task.paraphrase_of)


def naive_baseline(state: RunState, backend: CorpusBackend,
                   publisher: RecordingPublisher) -> Answer:
    """The naive extractor on the run's kept sources, as long as the graded answer."""
    bodies = {d.source_id: d.body for d in backend.documents()}
    text = naive.naive_answer(naive.pages(state.kept(), bodies), len(publisher.answer().text))
    return Answer(text.text, text.cited_ids())


def quoter_baseline(task: Task, backend: CorpusBackend, budget: int) -> Answer:
    """The BM25 quoter's answer to the task on the whole corpus (no late documents), graded
    as the reader reads it: the quotes' text, their ids as citations."""
    quotes = quoter.quote(task.question, backend.documents(), budget)
    return Answer("\n\n".join(q.text for q in quotes), frozenset(q.source_id for q in quotes))


def with_answers(result: TaskResult, publisher: RecordingPublisher, baseline: Answer,
                 task: Task) -> TaskResult:
    """The result with the graded text, its lengths and the naive baseline's grades."""
    graded = publisher.answer().text
    result.answer, result.answer_chars = graded, len(publisher.reading().text)
    result.graded_chars = len(graded)
    result.naive_groups = grade(baseline, task.requirements)
    result.naive_answer = baseline.text
    return result


def applied_mode(state: RunState) -> str:
    """The mode the run ended in: deep only where deep was applied."""
    return "deep" if state.extra.budget.get("deep_state") == "deep" else "standard"


def _round(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 2)


def _log_listener(label: str, say: Say) -> Callable[[LogEvent], None]:
    return lambda event: say(f"[{label}] {event.line()}")


def _end_line(result: TaskResult, groups: int) -> str:
    line = (f"{result.groups_passed}/{groups} groups (naive {result.naive_groups_passed}/"
            f"{groups}, quoter {result.quoter_groups_passed}/{groups}, evidence recall "
            f"{_recall(result.evidence_recall)}, retrieved {_recall(result.retrieval_recall)}), "
            f"{_chars(result)} chars, {result.completion_s:.1f}s, "
            f"{result.model_calls} model calls")
    return line + (f", error: {result.error}" if result.error else "")


async def run_suite(suite: Suite, modes: Sequence[str], task_ids: Sequence[str] | None,
                    settings: Settings, *, similarity: Similarity | None = None,
                    say: Say = lambda _: None, run_log: Say | None = None,
                    late_at: LatePoint | None = None, paraphrases: bool = False,
                    tiers: Mapping[str, ModelTier] | None = None) -> list[TaskResult]:
    """Run every chosen task (default: all) in every mode, in task order, each followed by
    its paraphrases where `paraphrases`; tiers are built once (or given: `tiers`, which the
    caller closes). `late_at` overrides when late documents arrive (default: see
    `redsearch.harness.late_docs`)."""
    check_modes(modes)
    chosen = [suite.task(t) for t in task_ids] if task_ids else list(suite.tasks)
    tasks = with_variants(chosen) if paraphrases else chosen
    owned = tiers is None  # built here, so closed here
    active = await asyncio.to_thread(build_tiers, settings) if tiers is None else tiers
    try:
        similarity = similarity or build_similarity(settings.embedding)
        runner = SuiteRunner(suite, settings, active, similarity, say, run_log, modes, late_at)
        return [await runner.run(task, mode) for task in tasks for mode in modes]
    finally:
        if owned:
            await aclose_tiers(active)


def with_variants(tasks: Sequence[Task]) -> list[Task]:
    """Every task followed by its paraphrases' tasks."""
    return [v for task in tasks for v in (task, *task.variants())]


def check_modes(modes: Sequence[str]) -> None:
    unknown = [m for m in modes if m not in DEPTHS]
    if unknown or not modes:
        raise SuiteError(f"unknown mode(s) {unknown}; modes are {', '.join(DEPTHS)}"
                         if unknown else "no mode to run")


# ---- the tables ------------------------------------------------------------------------------

_HEAD = ("mode", "groups", "naive", "quoter", "recall", "chars", "all passed at", "completed",
         "calls", "parts/rev", *(f"{t} tok" for t in TIERS))
_WIDTHS = (18, 8, 8, 8, 8, 15, 15, 11, 7, 11, *(14 for _ in TIERS))


def _cells(cells: Sequence[str]) -> str:
    return "".join(f"{c:<{w}}" for c, w in zip(cells, _WIDTHS, strict=True)).rstrip()


def _mean(values: Sequence[float | None]) -> str:
    known = [v for v in values if v is not None]
    return _recall(sum(known) / len(known) if known else None)


def _recall(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def _seconds(value: float | None) -> str:
    return "not reached" if value is None else f"{value:.1f}s"


def _chars(r: TaskResult) -> str:
    """The answer's length, and where the budget cut it the length graded."""
    cut = f"→{r.graded_chars:,}" if r.graded_chars < r.answer_chars else ""
    return f"{r.answer_chars:,}{cut}"


def result_row(r: TaskResult) -> str:
    return _cells([
        r.mode_shown, f"{r.groups_passed}/{len(r.groups)}",
        f"{r.naive_groups_passed}/{len(r.naive_groups)}",
        f"{r.quoter_groups_passed}/{len(r.quoter_groups)}", _recall(r.evidence_recall), _chars(r),
        _seconds(r.first_all_passed_s),
        f"{r.completion_s:.1f}s", str(r.model_calls), f"{r.publications}/{r.revisions}",
        *(f"{r.tokens(t):,}" for t in TIERS),
    ])


def _failures(r: TaskResult) -> list[str]:
    lines = [f"  {r.mode} error: {r.error}"] if r.error else []
    return lines + [f"  {r.mode} failed {g.id}: {g.first_reason()}"
                    for g in r.groups if not g.passed]


def _late_lines(results: Sequence[TaskResult]) -> list[str]:
    points = sorted({r.late_at for r in results if r.late_at})
    if not points:
        return []
    arrived = ", ".join(f"{r.mode} {_seconds(r.late_docs_s)}" for r in results)
    return [f"late documents: {' / '.join(points)} (arrived: {arrived})"]


def render(suite: Suite, results: Sequence[TaskResult]) -> str:
    """One table per task and paraphrase (a row per mode), each followed by the failed
    groups; then the paraphrase gaps, where paraphrases ran."""
    lines: list[str] = []
    for task in with_variants(suite.tasks):
        mine = [r for r in results if r.task_id == task.id]
        if mine:
            lines += _table(task, mine)
    return "\n".join(lines + gap_lines(suite, results) + summary_lines(results))


def summary_lines(results: Sequence[TaskResult]) -> list[str]:
    """Every mode's groups over all the runs beside the BM25 quoter's on the same tasks, and
    the mean evidence recall: the floor each suite is read against (issue 42)."""
    lines = []
    for mode in dict.fromkeys(r.mode for r in results):
        mine = [r for r in results if r.mode == mode]
        total = sum(len(r.groups) for r in mine)
        have, floor = sum(r.groups_passed for r in mine), sum(r.quoter_groups_passed for r in mine)
        ratio = f"×{have / floor:.2f}" if floor else "n/a"
        lines.append(f"all tasks, {mode}: {have}/{total} groups, BM25 quoter {floor}/{total} "
                     f"({ratio}), evidence recall {_mean([r.evidence_recall for r in mine])} "
                     f"(retrieved {_mean([r.retrieval_recall for r in mine])})")
    return ["", *lines] if lines else []


def _table(task: Task, mine: Sequence[TaskResult]) -> list[str]:
    question = task.question if len(task.question) <= 70 else task.question[:69] + "…"
    what = f"paraphrase of {task.paraphrase_of}, " if task.paraphrase_of else ""
    lines = ["", f"== {task.id} ({what}suite depth {task.depth}, as of {task.as_of}): "
             f"{question}", *_late_lines(mine)]
    lines += [_cells(list(_HEAD)), *(result_row(r) for r in mine)]
    return lines + [line for r in mine for line in _failures(r)]


def task_gaps(suite: Suite, results: Sequence[TaskResult]) -> dict[str, Gap]:
    """Each task's paraphrase gap, where both it and its paraphrases ran."""
    gaps = {t.id: gap([r.score for r in results if r.task_id == t.id],
                      [r.score for r in results if r.paraphrase_of == t.id])
            for t in suite.tasks}
    return {task_id: g for task_id, g in gaps.items() if g is not None}


def gap_lines(suite: Suite, results: Sequence[TaskResult]) -> list[str]:
    gaps = task_gaps(suite, results)
    summed = total(list(gaps.values()))
    if summed is None:
        return []
    return ["", *(f"{task_id}: {g.line()}" for task_id, g in gaps.items()),
            f"all tasks: {summed.line()}"]


# ---- command line ----------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `redsearch eval` options, for the CLI's subparser."""
    parser.add_argument("--suite", required=True, help="suite folder (tasks.yaml, corpus/ …)")
    parser.add_argument("--modes", default=",".join(DEFAULT_MODES),
                        help="comma-separated modes (default: standard,deep)")
    parser.add_argument("--tasks", default="", help="comma-separated task ids (default: all)")
    parser.add_argument("--late-at", default="",
                        help="when late documents arrive: first-part, step:K or time:S (default:"
                             " the task's own moment; for paired runs after a sixth of the "
                             "step budget)")
    parser.add_argument("--paraphrases", action="store_true",
                        help="also run every task's paraphrases and print the paraphrase gap")
    parser.add_argument("--paraphrase-file", default="",
                        help="YAML mapping task id → list of paraphrases, added to the suite's "
                             "(implies --paraphrases)")
    parser.add_argument("--json", dest="json_path", help="also write all results as JSON here")
    parser.add_argument("--quiet", action="store_true", help="no per-run progress lines")


def split_list(text: str | None) -> list[str]:
    return [p.strip() for p in (text or "").split(",") if p.strip()]


async def evaluate(args: argparse.Namespace, settings: Settings | None = None,
                   say: Say | None = None) -> int:
    """`redsearch eval`: run the suite, print the tables, write --json; RunError propagates."""
    say = say or stderr_line
    settings = settings or Settings.from_env()
    suite = load_suite(Path(args.suite))
    if args.paraphrase_file:
        suite = with_paraphrases(suite, Path(args.paraphrase_file))
    if args.json_path:
        check_writable(args.json_path)
    modes, task_ids = split_list(args.modes), split_list(args.tasks)
    check_modes(modes)
    late_at = parse_late_at(args.late_at) if args.late_at else None
    for task_id in task_ids:
        suite.task(task_id)
    started = time.monotonic()
    results = await run_suite(suite, modes, task_ids, settings, say=say,
                              run_log=None if args.quiet else say, late_at=late_at,
                              paraphrases=args.paraphrases or bool(args.paraphrase_file))
    print(render(suite, results))
    print(f"\nsuite wall time: {time.monotonic() - started:.1f}s")
    if args.json_path:
        write_json(args.json_path, json_data(args.suite, modes, suite, results))
    return 0


def json_data(suite_path: str, modes: Sequence[str], suite: Suite,
              results: Sequence[TaskResult]) -> dict[str, Any]:
    gaps = {task_id: {**asdict(g), "change": g.change()}
            for task_id, g in task_gaps(suite, results).items()}
    return {"suite": str(suite_path), "modes": list(modes),
            "results": [r.to_json() for r in results], "paraphrase_gaps": gaps}


