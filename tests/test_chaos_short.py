"""The chaos suite, short: three `redsearch worker` processes on a PostgreSQL database of their
own and a Redis of their own, two research runs driven through the bot's signed endpoint,
and every kind of fault once or more: SIGKILLs of the workers holding the runs, a Redis
restart, the workers' database connections terminated, and a Slack 429 burst. Nothing may be
lost, posted twice or redone, and every killed run must come back within the bound.
`make chaos` runs the full suite (20 kills, 6 runs in flight, minutes of runs).

The bound comes from the plan's own settings (`ChaosPlan.recovery_bound_s`, `bound_after`):
lease 4 s + reconcile 0.5 s + ARQ's poll 0.5 s + one model call 0.3 s + a 3 s margin = 8.3 s
from the kill; for a kill whose runs could only be handed on after the Redis restart, from
the restart's end: reconnect (the back-off cap, 0.25 s) + reconcile + poll + one call + margin.
It once failed at 10.5 s against 8.3 s when the restart fell inside a recovery (issue 26)."""

from __future__ import annotations

from pathlib import Path

import pytest

from redsearch.harness.chaos import render, run_chaos
from redsearch.harness.chaos_plan import DB_CUT, KILL, REDIS_RESTART, STORM, ChaosPlan, schedule
from tests.test_store_backends import PG_URL, _postgres_answers

PLAN = ChaosPlan(seed=17, runs=2, kills=3, storm_s=6.0, model_delay_s=0.3, warmup_s=3.0,
                 window_s=14.0, finish_timeout_s=90.0, lease_s=4.0, heartbeat_s=0.5,
                 reconcile_s=0.5, keep_runs_in_flight=False, aim_at_runs=True)


def test_the_schedule_holds_every_fault_and_repeats_with_its_seed() -> None:
    faults = schedule(PLAN)
    assert sorted(f.kind for f in faults) == sorted([KILL] * 3 + [REDIS_RESTART, DB_CUT, STORM])
    assert faults == schedule(PLAN)
    assert all(PLAN.warmup_s <= f.at_s <= PLAN.warmup_s + PLAN.window_s for f in faults)


@pytest.mark.skipif(not _postgres_answers(), reason="no PostgreSQL answers on 127.0.0.1:5432")
@pytest.mark.timeout(240)
async def test_short_chaos_loses_duplicates_and_redoes_nothing(tmp_path: Path) -> None:
    report = await run_chaos(PLAN, tmp_path, PG_URL)
    print(render(report, PLAN, 0.0))
    assert len(report.runs) == PLAN.runs
    assert not report.lost, [r.failed or "unfinished" for r in report.lost]
    assert not report.duplicated
    assert not report.redone
    assert len(report.faults) == len(schedule(PLAN))
    assert report.recovery, "no kill hit a worker holding a run"
    assert report.bound_s == pytest.approx(4.0 + 0.5 + 0.5 + 0.3 + 3.0)
    assert report.ok, report.table()
