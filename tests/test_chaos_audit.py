"""The chaos suite's counting, on made-up records: it must see a message posted twice, a
finished step redone, a run that never came back and a slow recovery when they happen."""

from __future__ import annotations

import json
from typing import cast

import pytest

from contract.redis_target import RETRY_CAP_S
from playground.fake_slack import Call
from redsearch.harness.chaos import Chaos, render
from redsearch.harness.chaos_audit import (
    ChaosReport,
    KillRecord,
    Resume,
    TrackedRun,
    duplicates,
    recoveries,
    redone_steps,
    signs_of_life,
)
from redsearch.harness.chaos_memory import MemoryLog, ProcessMemory
from redsearch.harness.chaos_plan import ARQ_POLL_S, MARGIN_S, ChaosPlan, Outage
from redsearch.harness.scripted_tiers import ModelCall
from redsearch.harness.suite_stack import RequestLost, SuiteStack


def post(key: str | None, channel: str = "C1", status: int = 200) -> Call:
    params = {"channel": channel, "thread_ts": "1.0", "text": "x"}
    if key:
        params["metadata"] = json.dumps({"event_type": "red_searcher_publication",
                                         "event_payload": {"key": key}})
    return Call("chat.postMessage", params, 10.0, status=status)


def test_a_key_posted_twice_is_a_duplicate_and_a_refused_post_is_not() -> None:
    calls = [post("s1/N1/v1"), post("s1/N1/v1"), post("s1/N1/v2"), post("s1/final/v1"),
             post("s1/final/v1", status=429), post(None)]
    assert duplicates(calls) == {"s1/N1/v1": 1}


def test_a_resume_below_a_saved_step_redoes_it() -> None:
    saved = [(100.0, {"s1": 3, "s2": 5}), (110.0, {"s1": 4, "s2": 5})]
    resumes = [Resume("s1", 4, 115.0), Resume("s2", 3, 120.0), Resume("s1", 2, 105.0)]
    assert redone_steps(resumes, saved) == {"s2": 2, "s1": 1}


def test_recovery_is_the_first_sign_of_life_after_the_kill() -> None:
    runs = [TrackedRun("c00", "C0", "1.0", "s1", 0.0), TrackedRun("c01", "C1", "2.0", "s2", 0.0)]
    model = [ModelCall(5.0, "HitScores", "c00"), ModelCall(19.0, "HitScores", "c00")]
    slack = [Call("chat.update", {"channel": "C0"}, 17.0),
             Call("chat.update", {"channel": "C9"}, 12.0)]
    signs = signs_of_life(runs, model, slack)
    found = recoveries([KillRecord(8.0, 42, ("s1", "s2"))], signs, lambda at: at < 9.0)
    assert [(r.run_id, r.seconds, r.worker_up) for r in found] == [
        ("s1", 9.0, True), ("s2", None, True)]
    report = ChaosReport(1, runs, 4, {}, {}, found, [], bound_s=10.0)
    assert not report.ok  # s2 never came back (and neither run finished)
    runs[0].finished_at = runs[1].finished_at = 30.0
    slow = ChaosReport(1, runs, 4, {}, {}, [found[0]], [], bound_s=5.0)
    assert slow.beyond_bound and not slow.ok
    assert ChaosReport(1, runs, 4, {}, {}, [found[0]], [], bound_s=10.0).ok


class PickerlessStack:
    """A stack whose bot never posts a depth picker: every mention is a lost request."""

    async def mention(self, channel: str, question: str, bot: int = 0) -> None:
        raise RequestLost(f"no depth picker for the mention in {channel}")


async def test_a_lost_request_is_a_failed_row_with_the_seed_not_a_traceback() -> None:
    """A mention that never got a picker used to end `make chaos` in a RuntimeError."""
    plan = ChaosPlan(seed=328856)
    chaos = Chaos(plan, cast(SuiteStack, PickerlessStack()))
    await chaos.start_run()
    report = ChaosReport(seed=plan.seed, runs=chaos.runs, messages_posted=0, duplicated={},
                         redone={}, recovery=[], limited=[], bound_s=8.0, notes=chaos.notes)
    assert not report.ok
    assert dict(report.rows())["runs started / finished / lost"] == "1 / 0 / 1"
    shown = render(report, plan, 1.0)
    assert shown.startswith("chaos seed 328856:")
    assert "lost: c00 (request c00) request lost: no depth picker for the mention in " \
           "C0CHAOS000" in shown


def test_a_kill_during_a_redis_outage_is_bounded_from_the_outage_end() -> None:
    """Nobody can hand a run on while Redis is away: a kill whose lease ran out during a
    Redis restart is bounded from the restart's end (plus reconnect, reconcile, poll, one
    model call and the margin); a kill the outage does not touch keeps the plan's bound."""
    plan = ChaosPlan(seed=1, lease_s=4.0, reconcile_s=0.5, model_delay_s=0.3)
    outage = [Outage(103.0, 106.5)]
    assert plan.bound_after(50.0, outage) == plan.recovery_bound_s == 8.3
    after_s = RETRY_CAP_S + 0.5 + ARQ_POLL_S + 0.3 + MARGIN_S
    assert plan.bound_after(100.0, outage) == pytest.approx(6.5 + after_s)
    assert plan.bound_after(100.0, outage) > plan.recovery_bound_s
    runs = [TrackedRun("c00", "C0", "1.0", "s1", 0.0, finished_at=130.0)]
    found = recoveries([KillRecord(100.0, 42, ("s1",))], {"s1": [110.0]},
                       bound_for=lambda at: plan.bound_after(at, outage))
    assert ChaosReport(1, runs, 4, {}, {}, found, [], bound_s=plan.recovery_bound_s).ok
    lost = plan.bound_after(100.0, [Outage(103.0, 106.5, lost_writes=True)])
    assert lost == pytest.approx(6.5 + plan.loss_bound_s)  # the sweep brings the run back
    alone = recoveries([KillRecord(100.0, 42, ("s1",))], {"s1": [110.0]})
    assert not ChaosReport(1, runs, 4, {}, {}, alone, [], bound_s=plan.recovery_bound_s).ok


def test_the_soak_flags_a_service_process_that_grows_not_the_harness() -> None:
    """Growth from the warm sample to the last past 25 % and 30 MiB is a leak; a process
    killed early is not judged; the harness keeps every call it served and is only shown."""
    memory = MemoryLog(lambda: {}, warm_at=100.0)
    mib = 1024
    samples = {
        1: ("worker 0 pid 1", [(0.0, 200 * mib), (100.0, 400 * mib), (3600.0, 407 * mib)]),
        2: ("bot pid 2", [(0.0, 140 * mib), (100.0, 143 * mib), (3600.0, 300 * mib)]),
        3: ("harness (fake Slack, models)", [(0.0, 97 * mib), (100.0, 105 * mib),
                                             (3600.0, 185 * mib)]),
        4: ("worker 1 pid 4", [(0.0, 200 * mib), (90.0, 900 * mib)]),
    }
    for pid, (label, points) in samples.items():
        memory.seen[pid] = ProcessMemory(label, pid, points)
    assert [m.label for m in memory.leaks()] == ["bot pid 2"]
    assert "1 shorter-lived processes" in memory.table()
