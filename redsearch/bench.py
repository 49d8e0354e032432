"""`python -m redsearch.bench`: the goal-tree engine against the naive monolithic agent.

Both strategies research the same tasks on the shipped sample corpus with the same model
settings (default: the bundled GGUF for every tier; RED_* settings say otherwise). Every run
gets a fresh temporary SQLite database, so the search cache helps only within a run. Progress
goes to stderr (one line per step); the side-by-side comparison goes to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from redsearch.cli import SAMPLE_AS_OF, SAMPLE_QUESTION
from redsearch.research import STRATEGIES, make_runner
from redsearch.terminal import report_error, report_interrupt, say
from research_core.errors import RunError
from research_core.loop.state import RunState
from research_core.models.ledger import TierTotals
from research_core.models.tier_factory import aclose_tiers, build_tiers, describe_tier
from research_core.protocols import ModelTier
from research_core.runlog import LogEvent
from research_core.search.corpus import CorpusBackend, sample_corpus_dir
from research_core.settings import TIERS, Settings
from research_core.store.sql import SqlStore

TASKS = {
    "sample": SAMPLE_QUESTION,
    "zh": "2026年中国热泵对欧洲出口和压缩机价格怎么变化？",
}
DEFAULT_STEPS = 12
# Gemma 3 270M supports 32k; 16k holds the monolithic agent's growing history for a dozen
# turns on the sample corpus while keeping its prompts fast enough on two cores.
BENCH_CONTEXT = 16384
PROBE_STEP = 10
COL = 32
HEARTBEAT_S = 30.0
FINAL_PURPOSES = frozenset({"report", "mono_answer"})


@dataclass
class RunMetrics:
    task: str
    strategy: str
    run_id: str
    wall_s: float
    steps: int
    stop: str
    tiers: list[TierTotals]
    largest: dict[int, int]
    largest_research: dict[int, int]
    final_prompt: int
    deep_reads: list[tuple[int, int]]
    pages_in_full: int
    cited: int
    sources: int
    fallback: bool

    @property
    def total_tokens(self) -> int:
        return sum(t.total_tokens for t in self.tiers)

    def largest_at(self, step: int) -> int | None:
        return self.largest.get(step)

    def to_json(self) -> dict[str, Any]:
        data = {k: v for k, v in self.__dict__.items() if k != "tiers"}
        data["tiers"] = [t.__dict__ for t in self.tiers]
        data["total_tokens"] = self.total_tokens
        return data


@dataclass
class Bench:
    settings: Settings
    tiers: Mapping[str, ModelTier]
    backend: CorpusBackend
    results: list[RunMetrics] = field(default_factory=list)

    async def run(self, task: str, strategy: str) -> RunMetrics:
        with tempfile.TemporaryDirectory(prefix="redsearch-bench-") as tmp:
            store = await SqlStore.open(f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}")
            try:
                metrics = await self._run_in(store, task, strategy)
            finally:
                await store.close()
        self.results.append(metrics)
        return metrics

    async def _run_in(self, store: SqlStore, task: str, strategy: str) -> RunMetrics:
        state = RunState.new(TASKS[task], SAMPLE_AS_OF, self.settings)
        started = time.monotonic()
        progress = Progress(f"{task}/{strategy}", state, started)
        state.log.listeners.append(progress)
        runner = make_runner(strategy, self.settings, self.tiers, self.backend, store)
        beat = asyncio.create_task(progress.heartbeat())
        try:
            report = await runner.run(state)
        finally:
            beat.cancel()
        wall = time.monotonic() - started
        say(f"[{task}/{strategy}] done in {wall:.0f}s: {state.step} steps, "
            f"{sum(t.total_tokens for t in state.ledger.totals()):,} tokens")
        return RunMetrics(
            task=task, strategy=strategy, run_id=state.run_id, wall_s=round(wall, 1),
            steps=state.step, stop=stop_reason(state), tiers=state.ledger.totals(),
            largest=largest_prompts(state), largest_research=largest_prompts(state, FINAL_PURPOSES),
            final_prompt=max((e.prompt_tokens for e in state.ledger.entries
                              if e.purpose in FINAL_PURPOSES), default=0),
            deep_reads=deep_reads(state.log.events),
            pages_in_full=len(state.evidence) if strategy == "monolithic" else 0,
            cited=len(report.cited), sources=len(report.sources), fallback=report.fallback,
        )


@dataclass
class Progress:
    """One stderr line whenever a run enters a new step, its stop reason, and a heartbeat
    while one long model call (a report at 900 tokens takes a minute on 2 cores) runs."""

    label: str
    state: RunState
    started: float
    shown: int = 0
    last_said: float = field(default_factory=time.monotonic)

    def __call__(self, event: LogEvent) -> None:
        if event.kind in ("limit", "context", "answer", "report"):
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
        tokens = sum(t.total_tokens for t in self.state.ledger.totals())
        return f"{time.monotonic() - self.started:6.1f}s · {calls} calls · {tokens:,} tokens"

    def _say(self, text: str) -> None:
        self.last_said = time.monotonic()
        say(f"[{self.label}] {text}")


def largest_prompts(state: RunState, leave_out: frozenset[str] = frozenset()) -> dict[int, int]:
    """The largest prompt (tokens) of any call, per step; `leave_out`: purposes not counted."""
    largest: dict[int, int] = {}
    for e in state.ledger.entries:
        if e.purpose in leave_out:
            continue
        largest[e.step] = max(largest.get(e.step, 0), e.prompt_tokens)
    return largest


def deep_reads(events: list[LogEvent]) -> list[tuple[int, int]]:
    """(tokens read, tokens of the full page) of every deep read in the run log."""
    return [(int(e.data["tokens_read"]), int(e.data["tokens_full"]))
            for e in events if e.kind == "deep-read"
            and "tokens_read" in e.data and "tokens_full" in e.data]


def stop_reason(state: RunState) -> str:
    kinds = {e.kind for e in state.log.events}
    if "context" in kinds:
        return "context full"
    if "answer" in kinds:
        return "model answered"
    return "step limit" if "limit" in kinds else "tree finished"


def bench_settings(steps: int, env: Mapping[str, str] | None = None) -> Settings:
    """The environment's settings, with the bench's step limit (the budget's steps, which
    both strategies obey) and, unless RED_GGUF_CONTEXT is set, the bench's context."""
    env = os.environ if env is None else env
    base = Settings.from_env(env)
    context = base.gguf_context if env.get("RED_GGUF_CONTEXT") else BENCH_CONTEXT
    return replace(base, gguf_context=context, budget=replace(base.budget, steps=steps))


# ---- the side-by-side table ----------------------------------------------------------------

def _n(value: int | None) -> str:
    return "n/a" if value is None else f"{value:,}"


def _row(label: str, cells: Sequence[str]) -> str:
    return f"{label:<34}" + "".join(f"{c:>{COL}}" for c in cells)


def _tier_cell(tiers: list[TierTotals], name: str) -> str:
    t = next((t for t in tiers if t.tier == name), None)
    return "—" if t is None else f"{t.calls} / {t.prompt_tokens:,} / {t.completion_tokens:,}"


def ratio_line(hier: int, mono: int) -> str:
    if not mono or not hier:
        return "token ratio hierarchical/monolithic: n/a (a run used no tokens)"
    ratio = hier / mono
    return f"token ratio hierarchical/monolithic: {ratio:.2f} (1/{mono / hier:.1f})"


def _deep_cell(m: RunMetrics) -> str:
    if m.deep_reads:
        read = sum(r for r, _ in m.deep_reads) / len(m.deep_reads)
        full = sum(f for _, f in m.deep_reads) / len(m.deep_reads)
        share = read / full if full else 0.0
        return f"{len(m.deep_reads)} pages: {read:,.0f} of {full:,.0f} ({share:.0%})"
    if m.pages_in_full:
        return f"no deep reads ({m.pages_in_full} in full)"
    return "no deep reads"


def tier_rows(runs: Sequence[Sequence[TierTotals]]) -> list[str]:
    names = [n for n in TIERS if any(t.tier == n for r in runs for t in r)]
    lines = [_row(f"{n} (calls / prompt / compl.)", [_tier_cell(list(r), n) for r in runs])
             for n in names]
    totals = [sum(t.total_tokens for t in r) for r in runs]
    return [*lines, _row("total tokens", [f"{t:,}" for t in totals])]


def task_table(runs: list[RunMetrics]) -> list[str]:
    h, m = runs
    last = [f"{_n(r.largest_at(r.steps))} (step {r.steps})" for r in runs]
    research = [_n(r.largest_research.get(r.steps)) for r in runs]
    return [
        _row("", [r.strategy for r in runs]),
        _row("wall time", [f"{r.wall_s:.0f}s" for r in runs]),
        _row("steps (why it stopped)", [f"{r.steps} ({r.stop})" for r in runs]),
        *tier_rows([r.tiers for r in runs]),
        ratio_line(h.total_tokens, m.total_tokens),
        _row("largest prompt, step 1", [_n(r.largest_at(1)) for r in runs]),
        _row(f"largest prompt, step {PROBE_STEP}", [_n(r.largest_at(PROBE_STEP)) for r in runs]),
        _row("largest prompt, last step", last),
        _row("  same, research calls only", research),
        _row("  final report/answer prompt", [_n(r.final_prompt) for r in runs]),
        _row("deep-read tokens/page vs full", [_deep_cell(r) for r in runs]),
        _row("report: cited / sources", [f"{r.cited} / {r.sources}"
                                         + (" (fallback)" if r.fallback else "") for r in runs]),
        *[f"largest prompt per step, {r.strategy}: {growth(r)}" for r in runs],
    ]


def growth(m: RunMetrics) -> str:
    """The largest prompt of every step, in order: flat or growing at a glance."""
    return " ".join(f"{m.largest[s]:,}" for s in sorted(m.largest))


def summed(runs: list[RunMetrics], strategy: str) -> list[TierTotals]:
    mine = [t for r in runs if r.strategy == strategy for t in r.tiers]
    names = [n for n in TIERS if any(t.tier == n for t in mine)]
    return [TierTotals(n, *(sum(getattr(t, f) for t in mine if t.tier == n)
                            for f in ("calls", "prompt_tokens", "completion_tokens", "cost_usd")))
            for n in names]


def total_table(runs: list[RunMetrics]) -> list[str]:
    per = [summed(runs, s) for s in STRATEGIES]
    walls = [sum(r.wall_s for r in runs if r.strategy == s) for s in STRATEGIES]
    totals = [sum(t.total_tokens for t in p) for p in per]
    return [_row("", list(STRATEGIES)), _row("wall time", [f"{w:.0f}s" for w in walls]),
            *tier_rows(per), ratio_line(*totals)]


def render(results: list[RunMetrics], tasks: list[str]) -> str:
    lines: list[str] = []
    for task in tasks:
        runs = [r for s in STRATEGIES for r in results if r.task == task and r.strategy == s]
        lines += ["", f"== task {task}: {TASKS[task]} (as of {SAMPLE_AS_OF})", *task_table(runs)]
    if len(tasks) > 1:
        lines += ["", f"== total over {len(tasks)} tasks", *total_table(results)]
    return "\n".join(lines)


# ---- command line ----------------------------------------------------------------------------

def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m redsearch.bench", description=__doc__)
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS,
                        help=f"max steps (turns) of both strategies (default {DEFAULT_STEPS})")
    parser.add_argument("--tasks", default=",".join(TASKS),
                        help=f"comma-separated, of: {', '.join(TASKS)} (default: all)")
    parser.add_argument("--json", dest="json_path", help="also write the results as JSON here")
    args = parser.parse_args(argv)
    args.tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    unknown = [t for t in args.tasks if t not in TASKS]
    if unknown or not args.tasks or args.steps < 1:
        parser.error(f"unknown task(s) {unknown}" if unknown else "need tasks and --steps >= 1")
    return args


async def run_bench(args: argparse.Namespace) -> int:
    settings = bench_settings(args.steps)
    models = [describe_tier(n, settings.tiers[n]) for n in TIERS]
    say(f"bench: tasks {args.tasks}, steps {args.steps}, gguf context {settings.gguf_context}")
    for line in models:
        say("model " + line)
    started = time.monotonic()
    tiers = await asyncio.to_thread(build_tiers, settings)
    try:
        bench = Bench(settings, tiers, CorpusBackend.from_folder(sample_corpus_dir()))
        for task in args.tasks:
            for strategy in STRATEGIES:
                await bench.run(task, strategy)
    finally:
        await aclose_tiers(tiers)
    wall = time.monotonic() - started
    print(f"models: {'; '.join(models)}\nsteps: {args.steps}, gguf context: "
          f"{settings.gguf_context}\n" + render(bench.results, args.tasks))
    print(f"\nbench wall time: {wall:.0f}s")
    if args.json_path:
        write_json(args.json_path, bench.results, models, wall)
    return 0


def write_json(path: str, results: list[RunMetrics], models: list[str], wall: float) -> None:
    data = {"models": models, "wall_s": round(wall, 1),
            "runs": [r.to_json() for r in results]}
    Path(path).write_text(json.dumps(data, indent=2, ensure_ascii=False), "utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        return asyncio.run(run_bench(args))
    except RunError as exc:
        return report_error("bench", exc)
    except KeyboardInterrupt:
        return report_interrupt("bench")


if __name__ == "__main__":
    sys.exit(main())
