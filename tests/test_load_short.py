"""The load suite, short: signed mentions through one `redsearch bot` process and through two
replicas (every one acked, every picker posted), click → first progress with a warm worker,
and three runs in flight on one worker with the scripted API tiers, every one finished.
`make load` measures the full figures (50/200/500 events/s, 1 to 32 runs per worker)."""

from __future__ import annotations

from pathlib import Path

import pytest

from redsearch.harness.load import LoadPlan, render, run_load
from tests.test_store_backends import PG_URL, _postgres_answers

PLAN = LoadPlan(rates=(40,), ack_seconds=1.0, clicks=2, levels=(3,), model_delay_s=0.2,
                steps=3, db_server_url=PG_URL)


@pytest.mark.skipif(not _postgres_answers(), reason="no PostgreSQL answers on 127.0.0.1:5432")
@pytest.mark.timeout(240)
async def test_short_load_acks_every_mention_and_finishes_every_run(tmp_path: Path) -> None:
    report = await run_load(PLAN, tmp_path)
    print(render(report, PLAN, 0.0))
    assert [(r.bots, r.rate) for r in report.acks] == [(1, 40), (2, 40)]
    for row in report.acks:
        assert row.failed == 0 and row.pickers == row.sent == 40
        assert row.p99_ms < 1000
    assert len(report.first_progress_s) == PLAN.clicks
    assert max(report.first_progress_s) < 10
    assert [(r.runs, r.finished) for r in report.inflight] == [(3, 3)]
    assert report.inflight[-1].peak_model_calls >= 2  # the runs did overlap
    assert all(r.queue_max_s < 10 for r in report.inflight)
