"""When a task's late documents (corpus_late/) become searchable during an evaluated run.

The moment is one of: after the first answer part (`first-part`), after planner step k
(`step:K`), or k seconds into the run (`time:S`). Only the last two are the same for every
mode: in deep mode the first answer part can be the final report, so a mode that holds its
parts back would see the documents later, or never in time to revise anything. They are
therefore the default for paired runs (two modes or more): the task's own `after_step` /
`at_seconds` moment, else after a sixth of the standard step budget (step 6 of 36; at least
step 2), which both modes reach whatever they publish. A task with several events adds all
their documents at the first event's moment.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from research_core.errors import SuiteError
from research_core.evaluation.suite import AFTER_STEP, AT_SECONDS, FIRST_PART, Suite, Task
from research_core.runlog import LogEvent
from research_core.search.corpus import CorpusBackend

STEP_SHARE = 6  # late documents after 1/STEP_SHARE of the standard step budget
MIN_STEP = 2
KINDS = {"first-part": FIRST_PART, "step": AFTER_STEP, "time": AT_SECONDS}
Say = Callable[[str], None]


@dataclass(frozen=True)
class LatePoint:
    when: str  # FIRST_PART, AFTER_STEP or AT_SECONDS
    at: float = 0.0

    def describe(self) -> str:
        if self.when == AFTER_STEP:
            return f"after step {int(self.at)}"
        if self.when == AT_SECONDS:
            return f"at {self.at:g} s"
        return "after the first answer part"


def parse_late_at(text: str) -> LatePoint:
    """`first-part`, `step:K` or `time:S` (the --late-at option)."""
    kind, _, value = text.strip().partition(":")
    if kind not in KINDS or (kind == "first-part") != (value == ""):
        raise SuiteError(f"--late-at {text!r}: use first-part, step:K or time:S")
    try:
        at = float(value) if value else 0.0
    except ValueError as exc:
        raise SuiteError(f"--late-at {text!r}: {value!r} is not a number") from exc
    if at < 0 or (kind == "step" and not at.is_integer()):
        raise SuiteError(f"--late-at {text!r}: give a whole step or seconds >= 0")
    return LatePoint(KINDS[kind], at)


def default_step(budget_steps: int) -> int:
    """The step after which late documents arrive in paired runs by default."""
    return max(MIN_STEP, budget_steps // STEP_SHARE)


def late_point(task: Task, modes: Sequence[str], chosen: LatePoint | None,
               budget_steps: int = 36) -> LatePoint | None:
    """When the task's late documents arrive in this evaluation (None: it has none);
    `budget_steps` is the standard step budget."""
    if not task.events:
        return None
    if chosen is not None:
        return chosen
    first = task.events[0]
    if first.when != FIRST_PART:
        return LatePoint(first.when, first.at)
    if len(modes) > 1:
        return LatePoint(AFTER_STEP, default_step(budget_steps))
    return LatePoint(FIRST_PART)


def add_late_docs(backend: CorpusBackend, suite: Suite, doc_ids: Sequence[str]) -> int:
    """Make the listed corpus_late/ documents searchable (those not yet in the index; only
    they are copied, since the backend adds whole folders); returns how many were added."""
    present = {d.source_id for d in backend.documents()}
    with tempfile.TemporaryDirectory(prefix="redsearch-late-") as tmp:
        for doc_id in (d for d in doc_ids if d not in present):
            source = suite.late_files[doc_id]
            shutil.copyfile(source, Path(tmp) / source.name)
        return backend.add_folder(Path(tmp))


@dataclass
class LateDocs:
    """Adds one task's late documents once, at its point; `on_arrival` marks the moment."""

    suite: Suite
    task: Task
    backend: CorpusBackend
    point: LatePoint
    elapsed: Callable[[], float]
    on_arrival: Callable[[], None]
    say: Say
    label: str = ""
    arrived: bool = False

    @property
    def ids(self) -> list[str]:
        return [d for e in self.task.events for d in e.add_docs]

    def arrive(self, why: str) -> None:
        if self.arrived:
            return
        self.arrived = True
        added = add_late_docs(self.backend, self.suite, self.ids)
        self.on_arrival()
        self.say(f"[{self.label or self.task.id}] {why}: {added} late document(s) now "
                 "searchable")

    async def after_first_part(self) -> None:
        if self.point.when == FIRST_PART:
            self.arrive("first answer part published")

    def on_event(self, event: LogEvent) -> None:
        """A run-log listener: steps and time are seen as the run logs its decisions."""
        if self.point.when == AFTER_STEP and event.step > self.point.at:
            self.arrive(f"step {int(self.point.at)} done")
        elif self.point.when == AT_SECONDS and self.elapsed() >= self.point.at:
            self.arrive(f"{self.point.at:g} s into the run")
