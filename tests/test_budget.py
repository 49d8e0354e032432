"""The resource owner (docs/design.md §3): budgets, finalisation, deep upgrades, revisions,
checkpoints."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from research_core.budget.axes import AXES, deep_total, deep_totals, standard_totals
from research_core.budget.owner import BudgetOwner
from research_core.errors import SettingsError
from research_core.runlog import LogEvent, RunLog
from research_core.settings import BudgetSettings, Settings

STANDARD = {"steps": 36, "model_calls": 57, "reads": 72, "discoveries": 6,
            "publications": 48, "active_time_s": 3600}
DEEP = {"steps": 54, "model_calls": 85, "reads": 108, "discoveries": 9,
        "publications": 72, "active_time_s": 5400}


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def owner(mode: Any = "auto", requester: str | None = None, clock: Clock | None = None,
          log: RunLog | None = None, **settings: Any) -> BudgetOwner:
    return BudgetOwner.start(BudgetSettings(**settings), mode, requester,
                             clock or Clock(), (log or RunLog()).emit)


def budget_events(log: RunLog, event: str) -> list[LogEvent]:
    return [e for e in log.of_kind("budget") if e.data.get("event") == event]


def spend_all(o: BudgetOwner, axis: Any, n: int) -> None:
    for _ in range(n):
        assert o.spend(axis)


# ---- defaults ---------------------------------------------------------------------------

def test_defaults_are_seed_003s_standard_and_deep_is_one_and_a_half() -> None:
    assert standard_totals(BudgetSettings()) == STANDARD
    assert deep_totals(BudgetSettings()) == DEEP
    custom = BudgetSettings(steps=7, model_calls=11, reads=1, discoveries=3, publications=5,
                            active_time_s=61)
    for axis, total in standard_totals(custom).items():
        assert deep_totals(custom)[axis] == total + total // 2 == deep_total(total)
    fresh = owner()
    assert {a: fresh.total(a) for a in AXES} == STANDARD
    assert (fresh.mode, fresh.deep_state, fresh.deep_applied) == ("auto", "standard", False)
    assert (fresh.revision_limits.per_part, fresh.revision_limits.per_run) == (2, 8)


# ---- spending and finalisation ----------------------------------------------------------

def test_exhausted_axis_moves_to_finalisation_and_refuses_more_without_overrun() -> None:
    log = RunLog()
    o = owner(log=log)
    spend_all(o, "steps", 35)
    assert not o.finalising
    assert o.spend("steps")
    assert not o.finalising, "the last granted step still researches"
    assert o.spend("reads")
    refused = o.spend("steps")
    assert not refused and "refused" in refused.reason
    assert o.finalising and o.final_reason is not None and "steps exhausted" in o.final_reason
    assert not o.spend("reads")
    assert o.used("steps") == 36 and o.used("reads") == 1
    [event] = budget_events(log, "finalising")
    assert event.data["axis"] == "steps" and event.data["used"] == 36
    last = budget_events(log, "refused")[-1]
    assert (last.data["axis"], last.data["used"], last.data["total"]) == ("reads", 1, 72)


def test_the_final_reserve_is_granted_only_in_finalisation() -> None:
    o = owner()
    spend_all(o, "model_calls", 52)
    assert o.finalising and "model_calls exhausted (52 of 57" in str(o.final_reason)
    spend_all(o, "model_calls", 5)
    assert not o.spend("model_calls")
    assert o.used("model_calls") == 57
    spend_all(o, "publications", 48)
    assert not o.spend("publications") and o.used("publications") == 48


def test_finalisation_by_the_loop_keeps_the_report_calls_and_stops_research() -> None:
    o = owner()
    o.finalise("every goal is answered")
    assert o.finalising and o.final_reason == "every goal is answered"
    assert o.spend("model_calls") and o.spend("publications")
    assert not o.spend("steps") and not o.spend("discoveries")
    assert not o.reserve("model_calls", 1)


def test_a_spend_larger_than_what_is_left_is_refused_and_logged_not_finalised() -> None:
    log = RunLog()
    o = owner(log=log)
    decision = o.spend("reads", 100)
    assert not decision and decision.amount == 0 and "only 72 reads available" in decision.reason
    assert o.used("reads") == 0 and not o.finalising
    assert budget_events(log, "refused")[0].data["amount"] == 100


def test_active_time_uses_the_injected_clock_and_ends_in_finalisation() -> None:
    clock = Clock(500.0)
    o = owner(clock=clock)
    clock.now += 3599
    assert not o.finalising and o.used("active_time_s") == 3599
    clock.now += 1
    assert o.finalising and "active time is spent" in str(o.final_reason)
    assert not o.spend("steps")
    assert o.spend("model_calls")


def test_reservations_for_a_child_are_held_then_settled() -> None:
    log = RunLog()
    o = owner(log=log)
    assert o.reserve("reads", 10)
    assert o.reserved("reads") == 10 and o.available("reads") == 62
    assert not o.reserve("reads", 63)
    o.release("reads", 10, spent=4)
    assert (o.used("reads"), o.reserved("reads")) == (4, 0)
    with pytest.raises(ValueError):
        o.release("reads", 1)
    assert [e.data["event"] for e in log.of_kind("budget")][1:] == [
        "reserved", "refused", "released"]


def test_programming_errors_raise() -> None:
    o = owner()
    with pytest.raises(ValueError):
        o.spend("active_time_s")
    with pytest.raises(ValueError):
        o.spend("tokens")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        o.spend("steps", 0)


# ---- modes and upgrades -----------------------------------------------------------------

def test_explicit_standard_is_never_upgraded() -> None:
    log = RunLog()
    o = owner("standard", log=log)
    spend_all(o, "steps", 18)
    assert o.reminder_due()
    decision = o.request_upgrade("the question needs more reading")
    assert not decision and "never upgraded" in decision.reason
    assert o.deep_state == "standard" and o.apply_pending() is None
    assert o.total("steps") == 36
    assert "never upgraded" in budget_events(log, "upgrade-refused")[0].message


def test_explicit_deep_starts_deep_when_allowed() -> None:
    o = owner("deep", requester="alice", deep_allowed=("alice",))
    assert o.deep_state == "deep" and o.deep_applied
    assert {a: o.total(a) for a in AXES} == DEEP
    assert (o.revision_limits.per_part, o.revision_limits.per_run) == (6, 24)


def test_explicit_deep_when_not_allowed_starts_standard_with_the_reason_logged() -> None:
    log = RunLog()
    o = owner("deep", requester="bob", log=log, deep_allowed=("alice",))
    assert o.mode == "deep" and o.deep_state == "standard" and not o.deep_applied
    assert {a: o.total(a) for a in AXES} == STANDARD
    [event] = budget_events(log, "deep-refused")
    assert "'bob' is not allowed deep" in event.message


def test_the_usage_reminder_fires_once_when_any_axis_first_reaches_half() -> None:
    log = RunLog()
    clock = Clock()
    o = owner(clock=clock, log=log)
    spend_all(o, "discoveries", 2)
    assert not o.reminder_due()
    assert o.spend("discoveries")
    assert o.reminder_due()
    assert not o.reminder_due()
    spend_all(o, "steps", 30)
    clock.now += 2000
    assert not o.reminder_due()
    [event] = budget_events(log, "reminder")
    assert event.data["axis"] == "discoveries" and "50%" in event.message


def test_the_reminder_also_fires_on_active_time() -> None:
    clock = Clock()
    o = owner(clock=clock)
    clock.now += 1800
    assert o.upgrade_window_open and o.reminder_due()


def test_an_upgrade_request_before_the_reminder_is_too_early() -> None:
    o = owner()
    assert not o.upgrade_window_open
    decision = o.request_upgrade("looks hard")
    assert not decision and "too early" in decision.reason and o.deep_state == "standard"


def test_upgrade_is_recorded_pending_then_applied_keeping_used_reserved_and_revisions() -> None:
    log = RunLog()
    o = owner(log=log)
    spend_all(o, "steps", 18)
    spend_all(o, "model_calls", 20)
    assert o.reserve("model_calls", 6)
    assert o.record_revision("p1") and o.record_revision("p1")
    assert o.reminder_due()
    assert o.request_upgrade("conflicting sources need weighing")
    assert o.deep_state == "recorded-pending" and not o.deep_applied
    assert o.total("steps") == 36 and o.revision_limits.per_part == 2
    assert not o.may_revise("p1")
    applied = o.apply_pending()
    assert applied is not None and applied.granted
    assert o.deep_applied and o.to_dict()["deep_state"] == "deep"
    assert {a: o.total(a) for a in AXES} == DEEP
    assert (o.used("steps"), o.used("model_calls"), o.reserved("model_calls")) == (18, 20, 6)
    assert o.available("model_calls") == 85 - 20 - 6 - 5
    assert o.revisions == {"p1": 2} and o.may_revise("p1")
    assert (o.revision_limits.per_part, o.revision_limits.per_run) == (6, 24)
    assert o.apply_pending() is None
    assert "conflicting sources" in budget_events(log, "deep-applied")[0].message


def _pending(o: BudgetOwner) -> None:
    spend_all(o, "steps", 18)
    assert o.request_upgrade("needs more")
    assert o.deep_state == "recorded-pending"


def _refused(o: BudgetOwner, log: RunLog, words: str, now: float | None = None) -> None:
    decision = o.apply_pending(now)
    assert decision is not None and not decision and words in decision.reason
    assert o.deep_state == "standard" and not o.deep_applied
    assert o.total("steps") == 36
    assert words in budget_events(log, "upgrade-refused")[-1].message


def test_upgrade_refused_at_80_percent_of_the_original_budget() -> None:
    log = RunLog()
    o = owner(log=log)
    _pending(o)
    spend_all(o, "steps", 10)
    assert o.committed_fraction("steps", of_original=True) < 0.8
    assert o.spend("steps")
    _refused(o, log, "steps is at 81% of its original budget")


def test_upgrade_refused_at_80_percent_counts_reservations() -> None:
    log = RunLog()
    o = owner(log=log)
    _pending(o)
    assert o.reserve("reads", 58)
    _refused(o, log, "reads is at 81%")


def test_upgrade_refused_in_finalisation() -> None:
    log = RunLog()
    o = owner(log=log)
    _pending(o)
    o.finalise("every goal is answered")
    _refused(o, log, "finalising (every goal is answered)")


def test_upgrade_refused_past_the_deadline_at_the_moment_it_would_apply() -> None:
    log = RunLog()
    clock = Clock(0.0)
    o = owner(clock=clock, log=log)
    _pending(o)
    _refused(o, log, "past the deadline (3700 s of 3600 s", now=3700.0)
    assert o.finalising and "active time is spent" in str(o.final_reason)


def test_upgrade_refused_when_the_requester_is_not_allowed() -> None:
    log = RunLog()
    o = owner(requester="bob", log=log, deep_allowed=("alice",))
    _pending(o)
    _refused(o, log, "'bob' is not allowed deep")


def test_upgrade_refused_for_everyone_when_deep_is_allowed_to_nobody() -> None:
    log = RunLog()
    o = owner(log=log, deep_allowed=())
    _pending(o)
    _refused(o, log, "None is not allowed deep")


# ---- revisions --------------------------------------------------------------------------

def test_revision_limits_per_part_and_per_run_in_standard() -> None:
    log = RunLog()
    o = owner(log=log)
    assert o.record_revision("a") and o.record_revision("a")
    assert not o.may_revise("a")
    refused = o.record_revision("a")
    assert not refused and "2 of the 2 revisions allowed per part" in refused.reason
    for part in ("b", "b", "c", "c", "d", "d"):
        assert o.record_revision(part)
    assert not o.record_revision("e")
    assert sum(o.revisions.values()) == 8 and o.used("publications") == 8
    assert "8 of the 8 revisions allowed per run" in budget_events(
        log, "revision-refused")[-1].message


def test_configured_zero_means_no_revision_in_either_mode() -> None:
    for mode in ("standard", "deep"):
        o = owner(mode, revisions_per_part=0)
        assert not o.may_revise("a") and not o.record_revision("a")
        assert o.used("publications") == 0
    o = owner("deep", revisions_per_run=0)
    assert not o.record_revision("a")


def test_configured_limits_hold_in_applied_deep() -> None:
    o = owner("deep", revisions_per_part=3, revisions_per_run=4)
    assert (o.revision_limits.per_part, o.revision_limits.per_run) == (3, 4)
    for part in ("a", "a", "a", "b"):
        assert o.record_revision(part)
    assert not o.record_revision("b")


# ---- checkpoint -------------------------------------------------------------------------

def test_round_trip_mid_run_restores_everything_and_time_goes_on() -> None:
    clock = Clock(100.0)
    o = owner(requester="alice", clock=clock)
    spend_all(o, "steps", 18)
    spend_all(o, "reads", 9)
    assert o.reserve("model_calls", 5) and o.record_revision("p1")
    assert o.reminder_due() and o.request_upgrade("needs more")
    clock.now += 600.5
    saved = json.loads(json.dumps(o.to_dict()))
    later = Clock(9_999.0)
    log = RunLog()
    back = BudgetOwner.from_dict(saved, BudgetSettings(), later, log.emit)
    assert back.to_dict() == saved
    assert (back.deep_state, back.pending_reason, back.requester) == (
        "recorded-pending", "needs more", "alice")
    assert back.used("active_time_s") == 600 and not back.reminder_due()
    later.now += 100
    assert back.elapsed_s() == pytest.approx(700.5)
    assert back.apply_pending() and back.total("steps") == 54 and back.revisions == {"p1": 1}


def test_round_trip_keeps_finalisation_and_deep() -> None:
    o = owner("deep")
    o.finalise("every goal is answered")
    back = BudgetOwner.from_dict(o.to_dict(), BudgetSettings(), Clock())
    assert back.finalising and back.final_reason == "every goal is answered"
    assert back.deep_applied and back.total("reads") == 108


def test_a_lost_deep_state_is_restored_as_unknown_and_never_upgraded() -> None:
    o = owner()
    spend_all(o, "steps", 18)
    saved = o.to_dict() | {"deep_state": "depp"}
    log = RunLog()
    back = BudgetOwner.from_dict(saved, BudgetSettings(), Clock(), log.emit)
    assert back.deep_state == "unknown" and not back.deep_applied
    assert back.revision_limits.per_part == 2
    assert "'depp'" in budget_events(log, "deep-unknown")[0].message
    assert not back.request_upgrade("needs more")


@pytest.mark.parametrize("change", [
    {"used": {"steps": 1}}, {"totals": "many"}, {"format": 9}, {"mode": "turbo"},
    {"active_time_used_s": -1}, {"revisions": {"a": -1}}, {"final_reason": 3},
])
def test_corrupt_checkpoint_counts_raise(change: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        BudgetOwner.from_dict(owner().to_dict() | change, BudgetSettings(), Clock())


# ---- table and settings -----------------------------------------------------------------

def test_usage_table_has_one_line_per_axis() -> None:
    clock = Clock()
    o = owner(clock=clock)
    spend_all(o, "steps", 18)
    assert o.reserve("reads", 4)
    clock.now += 900
    lines = o.usage_table().splitlines()
    assert len(lines) == len(AXES)
    assert lines[0].split() == ["steps", "18", "/", "36", "(50%)"]
    assert "4 reserved" in lines[2] and "900 / 3600" in lines[5]


def test_settings_from_env() -> None:
    assert Settings.from_env({}).budget == BudgetSettings()
    env = {"RED_BUDGET_STEPS": "10", "RED_BUDGET_MODEL_CALLS": "20",
           "RED_BUDGET_ACTIVE_TIME_S": "120", "RED_BUDGET_REVISIONS_PER_PART": "0",
           "RED_BUDGET_REMINDER_FRACTION": "0.4", "RED_BUDGET_FINAL_RESERVE_MODEL_CALLS": "2",
           "RED_DEEP_ALLOWED": " alice, U012AB "}
    budget = Settings.from_env(env).budget
    assert budget == replace(BudgetSettings(), steps=10, model_calls=20, active_time_s=120,
                             revisions_per_part=0, reminder_fraction=0.4,
                             final_reserve_model_calls=2, deep_allowed=("alice", "U012AB"))
    assert Settings.from_env({"RED_DEEP_ALLOWED": "*"}).budget.deep_allowed == ("*",)
    assert Settings.from_env({"RED_DEEP_ALLOWED": "none"}).budget.deep_allowed == ()


@pytest.mark.parametrize("env", [
    {"RED_BUDGET_STEPS": "many"}, {"RED_BUDGET_STEPS": "0"}, {"RED_BUDGET_READS": "1.5"},
    {"RED_BUDGET_REVISIONS_PER_RUN": "-1"}, {"RED_BUDGET_UPGRADE_REFUSAL_FRACTION": "1.5"},
    {"RED_BUDGET_FINAL_RESERVE_MODEL_CALLS": "57"}, {"RED_DEEP_ALLOWED": "alice bob"},
    {"RED_DEEP_ALLOWED": "*,alice"}, {"RED_DEEP_ALLOWED": "alice,,bob"},
])
def test_bad_budget_settings_raise_settings_error(env: dict[str, str]) -> None:
    with pytest.raises(SettingsError):
        Settings.from_env(env)
