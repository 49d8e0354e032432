"""One benchmark run and what it measured: tokens per tier, the largest prompt of every step,
why it stopped, the mode applied, the sources it cited or read by each turn."""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redsearch.harness.bench_corpus import Fact
from redsearch.harness.bench_facets import report_facets
from redsearch.terminal import say
from research_core.loop.memory.state import RunState
from research_core.loop.report.reporter import Report
from research_core.models.ledger import Ledger, LedgerEntry, TierTotals
from research_core.runlog import LogEvent

FINAL_PURPOSES = frozenset({"report", "mono_answer", "mono_draft"})
DRAFT = "mono_draft"  # the baseline's answer at every turn: measured, not part of its run
FINAL_ANSWER = "mono_answer"
HEARTBEAT_S = 30.0


@dataclass
class RunMetrics:
    strategy: str
    n: int
    run_id: str
    wall_s: float
    steps: int
    stop: str
    mode: str
    tiers: list[TierTotals]
    largest: dict[int, int]
    largest_research: dict[int, int]
    tokens_by_step: dict[int, int]
    cited: list[str]
    reads_by_step: dict[int, list[str]]
    fallback: bool
    label: str = ""
    facets: int = 0  # corpus facts the final answer states correctly, cited
    by_purpose: dict[str, int] = field(default_factory=dict)
    # per turn of the baseline: (tokens to have answered then, facts that answer states)
    answer_curve: dict[int, tuple[int, int]] = field(default_factory=dict)

    @property
    def total_tokens(self) -> int:
        return sum(t.total_tokens for t in self.tiers)

    def tokens_through(self, step: int) -> int:
        return sum(v for s, v in self.tokens_by_step.items() if s <= step)

    def first_answering(self, facets: int) -> tuple[int, int] | None:
        """The first turn whose answer states at least `facets` facts, and its tokens."""
        for turn in sorted(self.answer_curve):
            cost, found = self.answer_curve[turn]
            if found >= facets:
                return turn, cost
        return None

    def first_covering_turn(self, sources: list[str]) -> int | None:
        """The first turn by which this run had read every one of `sources`."""
        seen: set[str] = set()
        for step in sorted(self.reads_by_step):
            seen |= set(self.reads_by_step[step])
            if set(sources) <= seen:
                return step
        return None

    def to_json(self) -> dict[str, Any]:
        data = {k: v for k, v in self.__dict__.items() if k != "tiers"}
        data["tiers"] = [t.__dict__ for t in self.tiers]
        data["total_tokens"] = self.total_tokens
        return data


@dataclass(frozen=True)
class Answers:
    """A run's answers as the benchmark scores them: the final one, and the baseline's
    answer at every turn (`drafts`), against the corpus's `facts`."""

    report: Report
    facts: Sequence[Fact] = ()
    drafts: Mapping[int, Report] = field(default_factory=dict)  # by turn


def metrics(state: RunState, answers: Answers, strategy: str, n: int, wall_s: float,
            label: str = "") -> RunMetrics:
    """What one run measured; the baseline's per-turn answers are measurement, so their
    calls count only in its answer curve."""
    run, drafts = _split_ledger(state)
    report = answers.report
    return RunMetrics(
        strategy=strategy, n=n, run_id=state.run_id, wall_s=round(wall_s, 1),
        steps=state.step, stop=stop_reason(state), mode=mode_applied(state, strategy),
        tiers=run.totals(), largest=largest_prompts(run.entries),
        largest_research=largest_prompts(run.entries, FINAL_PURPOSES),
        tokens_by_step=tokens_by_step(run.entries), cited=report.cited_source_ids(),
        reads_by_step=reads_by_step(state), fallback=report.fallback, label=label,
        facets=len(report_facets(report, answers.facts)), by_purpose=by_purpose(run.entries),
        answer_curve=answer_curve(run.entries, drafts, answers))


def _split_ledger(state: RunState) -> tuple[Ledger, list[LedgerEntry]]:
    entries = state.ledger.entries
    run = Ledger(state.ledger.prices, [e for e in entries if e.purpose != DRAFT])
    return run, [e for e in entries if e.purpose == DRAFT]


def answer_curve(run: Sequence[LedgerEntry], drafts: Sequence[LedgerEntry],
                 answers: Answers) -> dict[int, tuple[int, int]]:
    """Per turn with a draft: the run's tokens through that turn (its final answer left out)
    plus that turn's answer, and the facts that answer states."""
    through = tokens_by_step([e for e in run if e.purpose != FINAL_ANSWER])
    drafted = tokens_by_step(drafts)  # a turn's answer may take a retry
    curve: dict[int, tuple[int, int]] = {}
    for turn, draft in sorted(answers.drafts.items()):
        spent = sum(v for s, v in through.items() if s <= turn) + drafted.get(turn, 0)
        curve[turn] = (spent, len(report_facets(draft, answers.facts)))
    return curve


def by_purpose(entries: Sequence[LedgerEntry]) -> dict[str, int]:
    """Tokens per purpose (the phases of a run), largest first."""
    found: dict[str, int] = {}
    for e in entries:
        found[e.purpose] = found.get(e.purpose, 0) + e.prompt_tokens + e.completion_tokens
    return dict(sorted(found.items(), key=lambda kv: -kv[1]))


def largest_prompts(entries: Sequence[LedgerEntry],
                    leave_out: frozenset[str] = frozenset()) -> dict[int, int]:
    """The largest prompt (tokens) of any call, per step; `leave_out`: purposes not counted."""
    largest: dict[int, int] = {}
    for e in entries:
        if e.purpose not in leave_out:
            largest[e.step] = max(largest.get(e.step, 0), e.prompt_tokens)
    return largest


def tokens_by_step(entries: Sequence[LedgerEntry]) -> dict[int, int]:
    found: dict[int, int] = {}
    for e in entries:
        found[e.step] = found.get(e.step, 0) + e.prompt_tokens + e.completion_tokens
    return found


def reads_by_step(state: RunState) -> dict[int, list[str]]:
    """The sources each step's queries returned (the monolithic agent reads them all)."""
    found: dict[int, list[str]] = {}
    for q in state.queries:
        found.setdefault(q.step, []).extend(q.result_ids)
    return found


def stop_reason(state: RunState) -> str:
    """Why the run ended, from its own log: the context, the model, an exhausted tree, the
    step limit, or the resource owner's reason for finalising."""
    kinds = {e.kind: e for e in state.log.events}
    named = {"context": "context full", "answer": "model answered",
             "exhausted": "tree exhausted", "limit": "step limit"}
    for kind, reason in named.items():
        if kind in kinds:
            return reason
    final = kinds.get("finalise")
    if final is None:
        return "unknown"
    return "step limit" if "steps" in final.message else final.message


def mode_applied(state: RunState, strategy: str) -> str:
    if strategy != "hierarchical":
        return "—"
    return "deep" if state.extra.budget.get("deep_state") == "deep" else "standard"


@dataclass
class Progress:
    """One stderr line whenever a run enters a new step, and a heartbeat during long calls."""

    label: str
    state: RunState
    started: float = field(default_factory=time.monotonic)
    shown: int = 0
    last_said: float = field(default_factory=time.monotonic)

    def __call__(self, event: LogEvent) -> None:
        if event.kind in ("limit", "context", "answer", "exhausted"):
            self._say(event.message)
        if event.step > self.shown:
            self.shown = event.step
            self._say(f"step {event.step:>2} · {self._so_far()}")

    async def heartbeat(self, every_s: float = HEARTBEAT_S) -> None:
        while True:
            await asyncio.sleep(every_s / 3)
            if time.monotonic() - self.last_said >= every_s:
                self._say(f"… still at step {self.shown} · {self._so_far()}")

    def _so_far(self) -> str:
        calls = len(self.state.ledger.entries)
        used = sum(t.total_tokens for t in self.state.ledger.totals())
        return f"{time.monotonic() - self.started:6.1f}s · {calls} calls · {used:,} tokens"

    def _say(self, text: str) -> None:
        self.last_said = time.monotonic()
        say(f"[{self.label}] {text}")


def scratch_db() -> tempfile.TemporaryDirectory[str]:
    """A fresh folder for one run's SQLite database (the cache helps only within a run)."""
    return tempfile.TemporaryDirectory(prefix="redsearch-bench-")


def db_url(folder: str) -> str:
    return f"sqlite+aiosqlite:///{Path(folder) / 'bench.db'}"
