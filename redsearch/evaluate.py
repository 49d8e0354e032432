"""`redsearch eval`: paired evaluation of research modes over a suite (`research_core.suite`).

Every task runs in each mode on a fresh index of the suite's corpus, a fresh temporary SQLite
store and the same model settings. A recording publisher keeps every answer part with its
versions, applies the task's events (documents from corpus_late/ become searchable right after
the first answer part) and grades the answer after every publication and at the end, so that the
first moment all requirement groups passed is known. Progress goes to stderr, tables to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from redsearch.json_output import check_writable, write_json
from redsearch.research import make_similarity
from research_core.corpus import CorpusBackend
from research_core.engine import Engine, validate_question
from research_core.errors import RunError
from research_core.grading import Answer, GroupResult, all_passed, grade
from research_core.ledger import TierTotals
from research_core.protocols import ModelTier, Publisher, Similarity
from research_core.reporter import Report
from research_core.runlog import LogEvent
from research_core.settings import TIERS, Settings
from research_core.state import RunState
from research_core.store import SqlStore
from research_core.suite import DEPTHS, Requirement, Suite, SuiteError, Task, load_suite
from research_core.tier_factory import aclose_tiers, build_tiers

DEFAULT_MODES = ("standard", "deep")
Say = Callable[[str], None]
Hook = Callable[[], Awaitable[None]]


@dataclass(frozen=True)
class PartVersion:
    text: str
    sources: tuple[str, ...]
    at_s: float
    reason: str = ""


@dataclass
class RecordingPublisher:
    """A Publisher that keeps every answer part by key with all its versions, runs `on_first_part`
    right after the first part and grades the answer after every publication.

    A part is revised when `replaces` names a published part (by key or by the message id this
    publisher returned for one of its versions), or when a key is published again; its newest
    version is what the user sees.
    """

    requirements: Sequence[Requirement]
    on_first_part: Hook | None = None
    clock: Callable[[], float] = time.monotonic
    parts: dict[str, list[PartVersion]] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    notes: list[tuple[float, str]] = field(default_factory=list)
    first_all_passed_s: float | None = None
    first_part_hook_s: float | None = None
    started: float = field(init=False)

    def __post_init__(self) -> None:
        self.started = self.clock()

    def elapsed(self) -> float:
        return self.clock() - self.started

    async def progress(self, run_id: str, text: str) -> None:
        self.notes.append((self.elapsed(), text))

    async def answer_part(self, run_id: str, part_key: str, text: str, sources: list[str],
                          replaces: str | None = None, reason: str = "") -> str | None:
        """Record the part; returns its message id (what a later `replaces` may name)."""
        first = not self.parts
        slot = self._slot(part_key, replaces)
        versions = self.parts.setdefault(slot, [])
        versions.append(PartVersion(text, tuple(sources), self.elapsed(), reason))
        message_id = f"{slot}#v{len(versions)}"
        self.aliases[message_id] = slot
        self.grade()
        if first and self.on_first_part is not None:
            await self.on_first_part()
            self.first_part_hook_s = self.elapsed()
        return message_id

    def _slot(self, part_key: str, replaces: str | None) -> str:
        """The key of the part this publication belongs to (its first key)."""
        target = self.aliases.get(replaces, replaces) if replaces else None
        slot = target if target in self.parts else self.aliases.get(part_key, part_key)
        self.aliases[part_key] = slot
        return slot

    @property
    def revisions(self) -> int:
        return sum(len(v) - 1 for v in self.parts.values())

    @property
    def publications(self) -> int:
        return sum(len(v) for v in self.parts.values())

    def answer(self, report: Report | None = None) -> Answer:
        latest = [versions[-1] for versions in self.parts.values()]
        texts = [v.text for v in latest] + ([report.text] if report else [])
        cited = {s for v in latest for s in v.sources}
        cited |= set(report.cited_source_ids()) if report else set()
        return Answer("\n\n".join(texts), frozenset(cited), self.revisions > 0)

    def grade(self, report: Report | None = None) -> list[GroupResult]:
        """Grade the answer now; the first time every group passes is recorded."""
        results = grade(self.answer(report), self.requirements)
        if self.first_all_passed_s is None and all_passed(results):
            self.first_all_passed_s = self.elapsed()
        return results


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

    @property
    def groups_passed(self) -> int:
        return sum(g.passed for g in self.groups)

    @property
    def model_calls(self) -> int:
        return sum(t.calls for t in self.tiers)

    def tokens(self, tier: str) -> int:
        return sum(t.total_tokens for t in self.tiers if t.tier == tier)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(groups_passed=self.groups_passed, groups_total=len(self.groups),
                    model_calls=self.model_calls)
        return data


def make_engine(settings: Settings, depth: str, publisher: Publisher,
                tiers: Mapping[str, ModelTier], backend: CorpusBackend, store: SqlStore,
                similarity: Similarity) -> Engine:
    """The engine for one evaluated run. The mode being evaluated travels on the run's state
    (`RunState.new(..., mode=...)`), where the resource owner reads it; `depth` is kept
    here for the record."""
    return Engine(settings, tiers, backend, store, cache=store, similarity=similarity,
                  publisher=publisher)


def add_late_docs(backend: CorpusBackend, suite: Suite, doc_ids: Sequence[str]) -> int:
    """Make the listed corpus_late/ documents searchable (those not yet in the index; only
    they are copied, since the backend adds whole folders); returns how many were added."""
    present = {d.source_id for d in backend.documents()}
    with tempfile.TemporaryDirectory(prefix="redsearch-late-") as tmp:
        for doc_id in (d for d in doc_ids if d not in present):
            source = suite.late_files[doc_id]
            shutil.copyfile(source, Path(tmp) / source.name)
        return backend.add_folder(Path(tmp))


def late_docs_hook(suite: Suite, task: Task, backend: CorpusBackend, say: Say,
                   label: str = "") -> Hook | None:
    """The hook for the task's after_first_answer_part events, or None when it has none."""
    ids = [d for e in task.events if e.when == "after_first_answer_part" for d in e.add_docs]
    if not ids:
        return None

    async def add() -> None:
        added = add_late_docs(backend, suite, ids)
        say(f"[{label or task.id}] first answer part published: {added} late document(s) "
            "now searchable")

    return add


@dataclass
class SuiteRunner:
    suite: Suite
    settings: Settings
    tiers: Mapping[str, ModelTier]
    similarity: Similarity
    say: Say
    run_log: Say | None = None

    async def run(self, task: Task, mode: str) -> TaskResult:
        label = f"{task.id}/{mode}"
        self.say(f"[{label}] start")
        backend = CorpusBackend.from_folder(self.suite.corpus_dir)
        try:
            with tempfile.TemporaryDirectory(prefix="redsearch-eval-") as tmp:
                store = await SqlStore.open(f"sqlite+aiosqlite:///{Path(tmp) / 'eval.db'}")
                try:
                    result = await self._run_in(task, mode, backend, store)
                finally:
                    await store.close()
        finally:
            backend.close()
        self.say(f"[{label}] end: {_end_line(result, len(task.requirements))}")
        return result

    async def _run_in(self, task: Task, mode: str, backend: CorpusBackend,
                      store: SqlStore) -> TaskResult:
        question = validate_question(task.question, self.settings.engine.max_question_chars)
        state = RunState.new(question, task.as_of, self.settings, mode=mode)
        if self.run_log is not None:
            state.log.listeners.append(_log_listener(f"{task.id}/{mode}", self.run_log))
        hook = late_docs_hook(self.suite, task, backend, self.say, f"{task.id}/{mode}")
        publisher = RecordingPublisher(task.requirements, on_first_part=hook)
        engine = make_engine(self.settings, mode, publisher, self.tiers, backend, store,
                             self.similarity)
        error, report = "", None
        try:
            report = await engine.run(state)
        except RunError as exc:
            error = str(exc)
        groups = publisher.grade(report)
        return TaskResult(
            task.id, mode, state.run_id, groups, _round(publisher.first_all_passed_s),
            round(publisher.elapsed(), 2), state.ledger.totals(), publisher.publications,
            publisher.revisions, _round(publisher.first_part_hook_s), error)


def _round(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 2)


def _log_listener(label: str, say: Say) -> Callable[[LogEvent], None]:
    return lambda event: say(f"[{label}] {event.line()}")


def _end_line(result: TaskResult, total: int) -> str:
    line = (f"{result.groups_passed}/{total} groups, {result.completion_s:.1f}s, "
            f"{result.model_calls} model calls")
    return line + (f", error: {result.error}" if result.error else "")


async def run_suite(suite: Suite, modes: Sequence[str], task_ids: Sequence[str] | None,
                    settings: Settings, *, similarity: Similarity | None = None,
                    say: Say = lambda _: None, run_log: Say | None = None) -> list[TaskResult]:
    """Run every chosen task (default: all) in every mode, in task order; tiers are built once."""
    check_modes(modes)
    tasks = [suite.task(t) for t in task_ids] if task_ids else list(suite.tasks)
    tiers = await asyncio.to_thread(build_tiers, settings)
    try:
        runner = SuiteRunner(suite, settings, tiers, similarity or make_similarity(settings),
                             say, run_log)
        return [await runner.run(task, mode) for task in tasks for mode in modes]
    finally:
        await aclose_tiers(tiers)


def check_modes(modes: Sequence[str]) -> None:
    unknown = [m for m in modes if m not in DEPTHS]
    if unknown or not modes:
        raise SuiteError(f"unknown mode(s) {unknown}; modes are {', '.join(DEPTHS)}"
                         if unknown else "no mode to run")


# ---- the tables ------------------------------------------------------------------------------

_HEAD = ("mode", "groups", "all passed at", "completed", "calls", "parts/rev",
         *(f"{t} tok" for t in TIERS))
_WIDTHS = (10, 8, 15, 11, 7, 11, *(14 for _ in TIERS))


def _cells(cells: Sequence[str]) -> str:
    return "".join(f"{c:<{w}}" for c, w in zip(cells, _WIDTHS, strict=True)).rstrip()


def _seconds(value: float | None) -> str:
    return "not reached" if value is None else f"{value:.1f}s"


def result_row(r: TaskResult) -> str:
    return _cells([
        r.mode, f"{r.groups_passed}/{len(r.groups)}", _seconds(r.first_all_passed_s),
        f"{r.completion_s:.1f}s", str(r.model_calls), f"{r.publications}/{r.revisions}",
        *(f"{r.tokens(t):,}" for t in TIERS),
    ])


def _failures(r: TaskResult) -> list[str]:
    lines = [f"  {r.mode} error: {r.error}"] if r.error else []
    return lines + [f"  {r.mode} failed {g.id}: {g.first_reason()}"
                    for g in r.groups if not g.passed]


def render(suite: Suite, results: Sequence[TaskResult]) -> str:
    """One table per task (a row per mode), each followed by the failed groups."""
    lines: list[str] = []
    for task in suite.tasks:
        mine = [r for r in results if r.task_id == task.id]
        if not mine:
            continue
        question = task.question if len(task.question) <= 70 else task.question[:69] + "…"
        lines += ["", f"== {task.id} (suite depth {task.depth}, as of {task.as_of}): {question}",
                  _cells(list(_HEAD)), *(result_row(r) for r in mine)]
        lines += [line for r in mine for line in _failures(r)]
    return "\n".join(lines)


# ---- command line ----------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `redsearch eval` options, for the CLI's subparser."""
    parser.add_argument("--suite", required=True, help="suite folder (tasks.yaml, corpus/ …)")
    parser.add_argument("--modes", default=",".join(DEFAULT_MODES),
                        help="comma-separated modes (default: standard,deep)")
    parser.add_argument("--tasks", default="", help="comma-separated task ids (default: all)")
    parser.add_argument("--json", dest="json_path", help="also write all results as JSON here")
    parser.add_argument("--quiet", action="store_true", help="no per-run progress lines")


def _split(text: str | None) -> list[str]:
    return [p.strip() for p in (text or "").split(",") if p.strip()]


async def evaluate(args: argparse.Namespace, settings: Settings | None = None,
                   say: Say | None = None) -> int:
    """`redsearch eval`: run the suite, print the tables, write --json; RunError propagates."""
    say = say or _stderr
    settings = settings or Settings.from_env()
    suite = load_suite(Path(args.suite))
    if args.json_path:
        check_writable(args.json_path)
    modes, task_ids = _split(args.modes), _split(args.tasks)
    check_modes(modes)
    for task_id in task_ids:
        suite.task(task_id)
    started = time.monotonic()
    results = await run_suite(suite, modes, task_ids, settings, say=say,
                              run_log=None if args.quiet else say)
    print(render(suite, results))
    print(f"\nsuite wall time: {time.monotonic() - started:.1f}s")
    if args.json_path:
        data = {"suite": str(args.suite), "modes": modes,
                "results": [r.to_json() for r in results]}
        write_json(args.json_path, data)
    return 0


def _stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
