"""The resource owner: the one component that grants every resource of a run (docs/design.md §3).

Nothing else changes a budget. Every spend is asked for at the point of spending and is
granted or refused (`Decision`); a refusal never raises and nothing is ever overrun.

Axes: `steps` (planner steps of the goal tree), `model_calls` (every model call, all tiers),
`reads` (search queries sent + page bodies read), `discoveries` (goal-tree expansions that add
sub-questions), `publications` (progress messages + answer parts + revisions) and
`active_time_s` (read from an injected clock, never spent).

Finalisation. When an axis is exhausted, the active time is spent, or the loop calls
`finalise`, the run moves to finalisation (`finalising`, `final_reason`): from then on only
`model_calls` and `publications` are granted, so the final report can be written and sent.
To make sure it can, `final_reserve_model_calls` (default 5: the last summary, the report,
claim extraction and claim verdicts) and `final_reserve_publications` (default 1: the
report) are kept back from the totals at the start and granted only in finalisation. So in
standard the research itself may use 52 of the 57 model calls; reaching 52 moves the run to
finalisation.

Usage is "committed" = used + reserved (reservations are what a child run was granted).
The reminder fires once when any axis first reaches `reminder_fraction` (0.5) of its current
total. The modes, deep state, upgrade rules and checkpointing live in `deep_mode.py`, whose
`BudgetOwner` is the class a run uses.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol, get_args

from research_core.budget.caps import CapStatus
from research_core.settings import BudgetSettings

Axis = Literal["steps", "model_calls", "reads", "discoveries", "publications", "active_time_s"]
Mode = Literal["auto", "standard", "deep"]
DeepState = Literal["standard", "recorded-pending", "deep", "unknown"]
AXES: tuple[Axis, ...] = get_args(Axis)
COUNTED: tuple[Axis, ...] = AXES[:-1]
TIME: Axis = "active_time_s"
FINAL_AXES: tuple[Axis, ...] = ("model_calls", "publications")
MODES: tuple[Mode, ...] = get_args(Mode)
DEEP_STATES: tuple[DeepState, ...] = get_args(DeepState)
Clock = Callable[[], float]


class Emit(Protocol):
    """`RunLog.emit` or anything shaped like it."""

    def __call__(self, kind: str, message: str, **data: Any) -> object: ...


def no_log(kind: str, message: str, **data: Any) -> None:
    return None


@dataclass(frozen=True)
class Decision:
    """A grant or a refusal, with the reason in plain words; truthy when granted."""

    granted: bool
    reason: str
    axis: str | None = None
    amount: int = 0

    def __bool__(self) -> bool:
        return self.granted


@dataclass(frozen=True)
class RevisionLimits:
    per_part: int
    per_run: int


STANDARD_REVISIONS = RevisionLimits(per_part=2, per_run=8)
DEEP_REVISIONS = RevisionLimits(per_part=6, per_run=24)


def deep_total(original: int) -> int:
    """Deep = original + floor(original / 2)."""
    return original + original // 2


def standard_totals(settings: BudgetSettings) -> dict[str, int]:
    return {axis: int(getattr(settings, axis)) for axis in AXES}


def deep_totals(settings: BudgetSettings) -> dict[str, int]:
    return {axis: deep_total(n) for axis, n in standard_totals(settings).items()}


def parse_mode(text: str) -> Mode:
    for mode in MODES:
        if text == mode:
            return mode
    raise ValueError(f"mode {text!r} is not one of {', '.join(MODES)}")


def is_allowed(settings: BudgetSettings, requester: str | None) -> bool:
    return "*" in settings.deep_allowed or requester in settings.deep_allowed


class Budget:
    """Counts, totals and finalisation; `BudgetOwner` (deep_mode.py) adds the deep rules."""

    def __init__(self, settings: BudgetSettings, mode: Mode = "auto",
                 requester: str | None = None, clock: Clock = time.monotonic,
                 emit: Emit = no_log) -> None:
        self.settings, self.mode, self.requester = settings, mode, requester
        self.clock, self.emit = clock, emit
        self.deep_state: DeepState = "standard"
        self.original = standard_totals(settings)
        self.totals = dict(self.original)
        self.used_counts: dict[str, int] = dict.fromkeys(COUNTED, 0)
        self.reserved_counts: dict[str, int] = dict.fromkeys(COUNTED, 0)
        self.revisions: dict[str, int] = {}
        self.pending_reason: str | None = None
        self.final_reason: str | None = None
        self.reminded = False
        self._caps: CapStatus | None = None  # how the spending caps stand (`note_caps`)
        self._run_spent: tuple[int, float] = (0, 0.0)
        self._time_before_s = 0.0
        self._since = clock()

    # ---- reading ------------------------------------------------------------------------

    @property
    def deep_applied(self) -> bool:
        """Only an applied deep changes behaviour (limits, delivery cadence)."""
        return self.deep_state == "deep"

    @property
    def finalising(self) -> bool:
        """True once the run only finishes its report; looks at the clock first."""
        self.check_clock()
        return self.final_reason is not None

    @property
    def revision_limits(self) -> RevisionLimits:
        default = DEEP_REVISIONS if self.deep_applied else STANDARD_REVISIONS
        part, run = self.settings.revisions_per_part, self.settings.revisions_per_run
        return RevisionLimits(default.per_part if part is None else part,
                              default.per_run if run is None else run)

    def elapsed_s(self, now: float | None = None) -> float:
        """Active seconds so far (time before a resume + time since it)."""
        return self._time_before_s + ((self.clock() if now is None else now) - self._since)

    def total(self, axis: Axis) -> int:
        return self.totals[_checked(axis)]

    def used(self, axis: Axis) -> int:
        return int(self.elapsed_s()) if _checked(axis) == TIME else self.used_counts[axis]

    def reserved(self, axis: Axis) -> int:
        return 0 if _checked(axis) == TIME else self.reserved_counts[axis]

    def committed_fraction(self, axis: Axis, of_original: bool = False) -> float:
        """(used + reserved) / total; of the original (standard) total when asked."""
        base = self.original[axis] if of_original else self.totals[axis]
        committed = self.elapsed_s() if axis == TIME else self.used(axis) + self.reserved(axis)
        return committed / base

    def available(self, axis: Axis) -> int:
        """How many units `spend(axis, n)` would grant now."""
        if _counted(axis) not in FINAL_AXES and self.final_reason is not None:
            return 0
        keep = 0 if self.final_reason is not None else self._final_reserve(axis)
        return max(0, self.totals[axis] - self.used_counts[axis]
                   - self.reserved_counts[axis] - keep)

    def usage_table(self) -> str:
        """One line per axis: used / total (percent), with what is reserved."""
        lines = []
        for axis in AXES:
            used, total, held = self.used(axis), self.total(axis), self.reserved(axis)
            extra = f", {held} reserved" if held else ""
            lines.append(f"{axis:<14} {used:>5} / {total:<5} ({used / total:.0%}{extra})")
        return "\n".join(lines)

    # ---- granting -----------------------------------------------------------------------

    def spend(self, axis: Axis, n: int = 1) -> Decision:
        """Grant n units of a counted axis now, or refuse (logged); never overruns."""
        _counted(axis)
        _positive(n)
        self.check_clock()
        if n > self.available(axis):
            refused = self._refuse(axis, n, "spend")
            if axis == "steps" and self.available(axis) == 0 and self.final_reason is None:
                self.finalise(f"steps exhausted ({self.used_counts[axis]} of "
                              f"{self.totals[axis]} used)", axis)
            return refused
        self.used_counts[axis] += n
        self._exhaust_check(axis)
        return Decision(True, f"{n} {axis} granted", axis, n)

    def reserve(self, axis: Axis, n: int) -> Decision:
        """Hold n units for a child run (it never raises its root's totals); logged."""
        _counted(axis)
        _positive(n)
        self.check_clock()
        if self.final_reason is not None or n > self.available(axis):
            return self._refuse(axis, n, "reservation")
        self.reserved_counts[axis] += n
        self._log("reserved", f"{n} {axis} reserved for a child run", axis, n)
        return Decision(True, f"{n} {axis} reserved", axis, n)

    def release(self, axis: Axis, n: int, spent: int = 0) -> None:
        """Return a reservation of n units, of which `spent` were used (they count as used)."""
        _counted(axis)
        if not 0 <= spent <= n <= self.reserved_counts[axis]:
            raise ValueError(f"cannot release {n} {axis} ({spent} spent) of "
                             f"{self.reserved_counts[axis]} reserved")
        self.reserved_counts[axis] -= n
        self.used_counts[axis] += spent
        self._log("released", f"{n} {axis} released, {spent} of them used", axis, n)
        self._exhaust_check(axis)

    def finalise(self, reason: str, axis: Axis | None = None) -> None:
        """Move the run to finalisation (once; the first reason is kept)."""
        if self.final_reason is None:
            self.final_reason = reason
            self._log("finalising", f"finalising: {reason}", axis)

    def check_clock(self, now: float | None = None) -> None:
        """Past the active-time total, the run moves to finalisation."""
        if self.final_reason is None and self.elapsed_s(now) >= self.totals[TIME]:
            self.finalise(f"active time is spent ({int(self.elapsed_s(now))} s of "
                          f"{self.totals[TIME]} s)", TIME)

    def reminder_due(self) -> bool:
        """True once: when any axis first reaches the reminder fraction of its total."""
        if self.reminded:
            return False
        self.check_clock()
        crossed = [a for a in AXES if self.committed_fraction(a) >= self.settings.reminder_fraction]
        if not crossed:
            return False
        self.reminded = True
        self._log("reminder", f"usage reminder: {', '.join(crossed)} at or past "
                  f"{self.settings.reminder_fraction:.0%}", crossed[0])
        return True

    # ---- revisions ----------------------------------------------------------------------

    def may_revise(self, part_key: str) -> bool:
        """Whether a revision of this part would be granted now (a refusal is logged)."""
        refusal = self._revision_refusal(part_key)
        if refusal is not None:
            self._log("revision-refused", refusal, "publications", part=part_key)
        return refusal is None

    def record_revision(self, part_key: str) -> Decision:
        """Grant one revision of a part: counts it and spends its one publication."""
        refusal = self._revision_refusal(part_key)
        if refusal is not None:
            self._log("revision-refused", refusal, "publications", part=part_key)
            return Decision(False, refusal, "publications")
        self.spend("publications")
        self.revisions[part_key] = self.revisions.get(part_key, 0) + 1
        return Decision(True, f"revision {self.revisions[part_key]} of {part_key}",
                        "publications", 1)

    def _revision_refusal(self, part_key: str) -> str | None:
        limits, done = self.revision_limits, self.revisions.get(part_key, 0)
        if done >= limits.per_part:
            return (f"revision of {part_key} refused: it has had {done} of the "
                    f"{limits.per_part} revisions allowed per part")
        if (total := sum(self.revisions.values())) >= limits.per_run:
            return (f"revision of {part_key} refused: the run has had {total} of the "
                    f"{limits.per_run} revisions allowed per run")
        if self.available("publications") < 1:
            return f"revision of {part_key} refused: no publication left"
        return None

    # ---- internals ----------------------------------------------------------------------

    def _final_reserve(self, axis: Axis) -> int:
        if axis == "model_calls":
            return self.settings.final_reserve_model_calls
        if axis == "publications":
            return self.settings.final_reserve_publications
        return 0

    def _exhaust_check(self, axis: Axis) -> None:
        """Using up an axis moves the run to finalisation, except steps: the last granted
        step still researches; the run finalises when the next one is asked for."""
        if axis == "steps":
            return
        if self.final_reason is None and self.available(axis) == 0 \
                and self.reserved_counts[axis] == 0:
            self.finalise(f"{axis} exhausted ({self.used_counts[axis]} of "
                          f"{self.totals[axis]} used)", axis)

    def _refuse(self, axis: Axis, n: int, what: str) -> Decision:
        if self.final_reason is not None and (axis not in FINAL_AXES or what != "spend"):
            why = f"finalising ({self.final_reason}): only the report is granted"
        else:
            why = f"only {self.available(axis)} {axis} available"
        reason = f"{what} of {n} {axis} refused: {why}"
        self._log("refused", reason, axis, n)
        return Decision(False, reason, axis, 0)

    def _log(self, event: str, message: str, axis: Axis | None = None, n: int = 0,
             **extra: Any) -> None:
        data: dict[str, Any] = {"event": event, **extra}
        if axis is not None:
            data |= {"axis": axis, "amount": n, "used": self.used(axis),
                     "reserved": self.reserved(axis), "total": self.totals[axis]}
        self.emit("budget", message, **data)


def _checked(axis: str) -> Axis:
    if axis not in AXES:
        raise ValueError(f"{axis!r} is not a budget axis ({', '.join(AXES)})")
    return axis


def _counted(axis: str) -> Axis:
    checked = _checked(axis)
    if checked == TIME:
        raise ValueError("active time is read from the clock; it is not spent")
    return checked


def _positive(n: int) -> None:
    if n < 1:
        raise ValueError(f"amount must be at least 1, not {n}")
