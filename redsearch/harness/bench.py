"""`python -m redsearch.harness.bench` (`make bench`): the goal tree against the naive monolithic
agent, doing equal work, as the task grows.

For every N of the sweep (default 4, 8, 16, 32) both strategies run exactly N steps on the
same generated corpus (`bench_corpus`, at least 5·N documents on one topic) with the same
deterministic tier (`bench_tier`): the goal tree in standard mode, with the step limit as the
only budget that binds and no early stop (an exhausted tree is expanded again), the baseline
with no context limit and no final answer before turn N. Both final answers are scored on the
corpus's facts (`bench_facets`: a country's measure in a quarter, stated right and cited to
its document); the baseline also answers at every turn (measurement: those calls count only
in its answer curve), so the equal-answer ratio is the goal tree's tokens over the baseline's
to its first answer stating as many facts. Then one smoke row runs the environment's models
(default: the embedded one) for every tier at one N, and the README question runs on the
embedded default and on the code path (`bench_readme`: the ratio of their times). Every run
gets a fresh SQLite database. Progress goes to stderr; the
tables go to stdout, ending with `token ratio at N=32: X (hierarchical/monolithic)` and
`equal-answer ratio at N=32: Y`.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime as dt
import os
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from redsearch.harness import bench_readme
from redsearch.harness.bench_corpus import QUESTION, Fact, corpus_facts, write_corpus
from redsearch.harness.bench_report import HIER, MONO, final_lines, n_table, sweep_table
from redsearch.harness.bench_run import Answers, Progress, RunMetrics, db_url, metrics, scratch_db
from redsearch.harness.bench_tier import BenchPolicy, PolicyServer
from redsearch.json_output import check_writable
from redsearch.json_output import write_json as write_json_file
from redsearch.terminal import report_error, report_interrupt, say
from research_core.errors import RunError
from research_core.evaluation.monolithic import MonolithicAgent
from research_core.loop.engine import Engine
from research_core.loop.memory.state import RunState
from research_core.loop.report.reporter import Report
from research_core.models.embeddings import build_similarity
from research_core.models.tier_factory import (
    aclose_tiers,
    build_tiers,
    describe_tier,
    embedded_calls,
)
from research_core.protocols import ModelTier, Similarity
from research_core.search.corpus import CorpusBackend
from research_core.settings import TIERS, BudgetSettings, Settings, TierSettings
from research_core.store.sql import SqlStore

AS_OF = dt.date(2026, 10, 31)
DEFAULT_SWEEP = (4, 8, 16, 32)
QUICK_SWEEP = (2, 4)
SMOKE_STEPS = 4
DOCS_PER_STEP = 5
NO_CONTEXT_LIMIT = 10**9
BUNDLED_CONTEXT = 16384  # the baseline's growing history on the bundled model


def equal_work_settings(base: Settings, n: int) -> Settings:
    """`base` with N steps and every other budget axis too large to bind."""
    budget = dataclasses.replace(
        BudgetSettings(deep_allowed=base.budget.deep_allowed), steps=n,
        model_calls=40 * n + 40, reads=40 * n + 40, discoveries=2 * n + 10,
        publications=10 * n + 10, active_time_s=7 * 86_400)
    return dataclasses.replace(base, budget=budget)


def policy_settings(base_url: str, n: int) -> Settings:
    tier = TierSettings(model="bench-policy", base_url=base_url, max_retries=0)
    return equal_work_settings(Settings(tiers={t: tier for t in TIERS}), n)


@dataclasses.dataclass
class Sweep:
    """Both strategies at one N, with the tiers, corpus and similarity they share."""

    tiers: Mapping[str, ModelTier]
    backend: CorpusBackend
    similarity: Similarity
    facts: Sequence[Fact]
    policy: BenchPolicy | None = None

    async def pair(self, settings: Settings, n: int, label: str) -> tuple[RunMetrics,
                                                                           RunMetrics]:
        hier = await self.run(HIER, settings, n, label)
        mono = await self.run(MONO, settings, n, label)
        return hier, mono

    async def run(self, strategy: str, settings: Settings, n: int, label: str) -> RunMetrics:
        if self.policy is not None:
            self.policy.reset()
        state = RunState.new(QUESTION, AS_OF, settings, mode="standard")
        progress = Progress(f"{label}N={n}/{strategy}", state)
        state.log.listeners.append(progress)
        beat = asyncio.create_task(progress.heartbeat())
        started = time.monotonic()
        try:
            with scratch_db() as folder:
                answers = await self._run(strategy, settings, n, state, folder)
        finally:
            beat.cancel()
        found = metrics(state, answers, strategy, n, time.monotonic() - started, label)
        say(f"[{label}N={n}/{strategy}] {found.steps} steps ({found.stop}), "
            f"{found.total_tokens:,} tokens, {found.facets} facts answered")
        return found

    async def _run(self, strategy: str, settings: Settings, n: int, state: RunState,
                   folder: str) -> Answers:
        store = await SqlStore.open(db_url(folder))
        try:
            if strategy == HIER:
                engine = Engine.build(settings, self.tiers, self.backend, store,
                                      similarity=self.similarity, exhaustive=True)
                return Answers(await engine.run(state), self.facts)
            context = NO_CONTEXT_LIMIT if self.policy is not None else None
            drafts: dict[int, Report] = {}
            agent = MonolithicAgent(settings, self.tiers, self.backend, store,
                                    context_chars=context, min_turns=n, drafts=drafts)
            return Answers(await agent.run(state), self.facts, drafts)
        finally:
            await store.close()


async def run_sweep(ns: Sequence[int], backend: CorpusBackend, similarity: Similarity,
                    facts: Sequence[Fact]) -> list[tuple[RunMetrics, RunMetrics]]:
    """Every N on the deterministic tier."""
    policy = BenchPolicy()
    server = PolicyServer(policy)
    base_url = await server.start()
    tiers = build_tiers(policy_settings(base_url, 1))
    try:
        sweep = Sweep(tiers, backend, similarity, facts, policy)
        return [await sweep.pair(policy_settings(base_url, n), n, "") for n in ns]
    finally:
        await aclose_tiers(tiers)
        await server.stop()


async def run_smoke(n: int, backend: CorpusBackend, similarity: Similarity,
                    facts: Sequence[Fact],
                    env: Mapping[str, str]) -> tuple[RunMetrics, RunMetrics]:
    """The same pair on the models the environment names (default: the bundled GGUF)."""
    base = Settings.from_env(env)
    if not env.get("RED_GGUF_CONTEXT"):
        base = dataclasses.replace(base, gguf_context=BUNDLED_CONTEXT)
    settings = equal_work_settings(base, n)
    for line in (describe_tier(t, settings.tiers[t], embedded_calls(settings)) for t in TIERS):
        say("smoke model " + line)
    tiers = await asyncio.to_thread(build_tiers, settings)
    try:
        return await Sweep(tiers, backend, similarity, facts).pair(settings, n, "smoke ")
    finally:
        await aclose_tiers(tiers)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m redsearch.harness.bench", description=__doc__)
    parser.add_argument("--sweep", default=",".join(map(str, DEFAULT_SWEEP)),
                        help="comma-separated step counts N (default 4,8,16,32)")
    parser.add_argument("--quick", action="store_true",
                        help="N = 2, 4 and no bundled-model row (for CI)")
    parser.add_argument("--smoke-steps", type=int, default=SMOKE_STEPS,
                        help="N of the bundled-model row (0: none; default 4)")
    parser.add_argument("--no-readme", dest="readme", action="store_false",
                        help="leave out the README question on the embedded default")
    parser.add_argument("--json", dest="json_path", help="also write the results as JSON here")
    args = parser.parse_args(argv)
    try:
        args.ns = sorted({int(p) for p in args.sweep.split(",") if p.strip()})
    except ValueError:
        parser.error(f"--sweep {args.sweep!r}: expected comma-separated whole numbers")
    if args.quick:
        args.ns, args.smoke_steps, args.readme = list(QUICK_SWEEP), 0, False
    if not args.ns or min(args.ns) < 1 or max(args.ns) > 64 or not 0 <= args.smoke_steps <= 64:
        parser.error("the step counts must be between 1 and 64")
    return args


async def run_bench(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    if args.json_path:
        check_writable(args.json_path)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="redsearch-bench-corpus-") as folder:
        count = write_corpus(Path(folder), DOCS_PER_STEP * max([*args.ns, args.smoke_steps]))
        say(f"bench: sweep N = {args.ns}, generated corpus of {count} documents")
        facts = corpus_facts(count)
        backend = await asyncio.to_thread(CorpusBackend.from_folder, Path(folder))
        similarity = build_similarity(Settings().embedding)
        pairs = await run_sweep(args.ns, backend, similarity, facts)
        smoke = (await run_smoke(args.smoke_steps, backend, similarity, facts, env)
                 if args.smoke_steps else None)
    lines = [f"question: {QUESTION}", f"corpus: {count} generated documents"]
    for hier, mono in pairs:
        lines += ["", *n_table(hier, mono)]
    if smoke is not None:
        lines += ["", "== smoke row: the models of the environment (default: the bundled "
                  "GGUF for every tier)", *n_table(*smoke)[1:]]
    if args.readme:
        say("bench: the README question, embedded default then code path")
        lines += ["", *bench_readme.lines(await asyncio.to_thread(bench_readme.run_pair, env))]
    lines += ["", *sweep_table(pairs), f"bench wall time: {time.monotonic() - started:.0f}s",
              *final_lines(pairs)]
    print("\n".join(lines))
    if args.json_path:
        write_results(args.json_path, pairs, smoke)
    return 0


def write_results(path: str, pairs: list[tuple[RunMetrics, RunMetrics]],
               smoke: tuple[RunMetrics, RunMetrics] | None) -> None:
    runs = [m.to_json() for pair in [*pairs, *([smoke] if smoke else [])] for m in pair]
    write_json_file(path, {"question": QUESTION, "runs": runs})


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        return asyncio.run(run_bench(args, os.environ))
    except RunError as exc:
        return report_error("bench", exc)
    except KeyboardInterrupt:
        return report_interrupt("bench")


if __name__ == "__main__":
    sys.exit(main())
