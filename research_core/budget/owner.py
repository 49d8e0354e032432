"""Deep mode on top of the budget: start, upgrade request, application, checkpoint
(docs/design.md §3).

- Explicit `deep` starts with the deep totals when the requester is allowed; otherwise the
  run starts standard (deep state `standard`) and the refusal is logged.
- Explicit `standard` is never upgraded: a request is refused and logged.
- In `auto` (and a refused `deep`), once any axis has reached the reminder fraction, the
  planner may `request_upgrade(reason)`: it is recorded (`recorded-pending`) and decided by
  `apply_pending()` at the start of the next turn. It is refused in finalisation, past the
  deadline (the active-time total), when the requester is not allowed, or when any axis has
  reached `upgrade_refusal_fraction` (0.8) of its ORIGINAL total; otherwise it is applied:
  totals become the deep totals, used/reserved and revision counts are kept.
- Only an applied deep (`deep_applied`) changes behaviour: revision limits 6 / 24 and the
  deep delivery cadence, from the turn it was applied at on.
- `unknown`: the deep state was lost or corrupt (on resume); the run behaves standard, keeps
  the checkpointed totals, and is never upgraded.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from research_core.budget.axes import (
    AXES,
    COUNTED,
    DEEP_STATES,
    TIME,
    Budget,
    Clock,
    Decision,
    Emit,
    Mode,
    deep_totals,
    is_allowed,
    no_log,
    parse_mode,
)
from research_core.budget.caps import CapStatus, deep_refusal
from research_core.settings import BudgetSettings

CHECKPOINT_FORMAT = 1


class BudgetOwner(Budget):
    """The resource owner of one run: the only thing that grants or changes its budget."""

    @classmethod
    def start(cls, settings: BudgetSettings, mode: Mode = "auto",
              requester: str | None = None, clock: Clock = time.monotonic,
              emit: Emit = no_log) -> BudgetOwner:
        owner = cls(settings, mode, requester, clock, emit)
        if mode == "deep":
            owner._start_deep()
        owner._log("start", f"{mode} mode, deep state {owner.deep_state}",
                   totals=dict(owner.totals))
        return owner

    @property
    def upgrade_window_open(self) -> bool:
        """Whether the planner may ask for deep now (auto, standard state, past the reminder)."""
        return self._request_refusal() is None

    def request_upgrade(self, reason: str) -> Decision:
        """Record the planner's request for deep; it is decided by `apply_pending`."""
        if self.deep_state == "recorded-pending":
            return Decision(True, f"an upgrade is already pending ({self.pending_reason})")
        refusal = self._request_refusal()
        if refusal is not None:
            self._log("upgrade-refused", f"upgrade request refused: {refusal}", reason=reason)
            return Decision(False, refusal)
        self.deep_state, self.pending_reason = "recorded-pending", reason
        self._log("upgrade-requested", f"upgrade to deep requested: {reason}; decided at "
                  "the start of the next turn", reason=reason)
        return Decision(True, "upgrade recorded; pending")

    def apply_pending(self, now: float | None = None) -> Decision | None:
        """Decide a pending upgrade at the moment it would apply; None when none is pending."""
        if self.deep_state != "recorded-pending":
            return None
        reason, refusal = self.pending_reason, self._apply_refusal(now)
        self.pending_reason = None
        if refusal is not None:
            self.deep_state = "standard"
            self._log("upgrade-refused", f"upgrade to deep refused: {refusal}", reason=reason)
            self.check_clock(now)
            return Decision(False, refusal)
        self._raise_to_deep()
        self._log("deep-applied", f"deep applied ({reason}): totals raised, used and "
                  "reserved kept", reason=reason, totals=dict(self.totals))
        return Decision(True, "deep applied")

    def note_caps(self, status: CapStatus, run_tokens: int, run_cost: float) -> None:
        """How the spending caps stand after the run's latest charge (docs/teams.md): a
        cap reached moves the run to finalisation; the headroom decides Deep upgrades."""
        self._caps, self._run_spent = status, (run_tokens, run_cost)
        if status.reached is not None and self.final_reason is None:
            self.finalise(f"spending cap reached: {status.reached.message()}")

    def cap_refusal(self) -> str | None:
        """Why Deep would breach a spending cap now (None: it would not, or no caps)."""
        if self._caps is None:
            return None
        extra = deep_totals(self.settings)["steps"] - self.original["steps"]
        return deep_refusal(self._caps, *self._run_spent, self.used_counts["steps"], extra)

    def mark_unknown(self, why: str) -> None:
        """The deep state was lost: behave standard, keep totals, never upgrade."""
        self.deep_state, self.pending_reason = "unknown", None
        self._log("deep-unknown", f"deep state unknown ({why}): standard behaviour, "
                  "no upgrade")

    # ---- checkpoint ---------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe state, restored exactly by `from_dict`."""
        return {
            "format": CHECKPOINT_FORMAT, "mode": self.mode, "requester": self.requester,
            "deep_state": self.deep_state, "pending_reason": self.pending_reason,
            "final_reason": self.final_reason, "reminded": self.reminded,
            "original": dict(self.original), "totals": dict(self.totals),
            "used": dict(self.used_counts), "reserved": dict(self.reserved_counts),
            "revisions": dict(self.revisions), "active_time_used_s": self.elapsed_s(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], settings: BudgetSettings,
                  clock: Clock = time.monotonic, emit: Emit = no_log) -> BudgetOwner:
        """Restore a checkpoint; malformed counts raise ValueError, a bad deep state is
        restored as `unknown` (logged). Active time goes on from the saved seconds."""
        if data.get("format") != CHECKPOINT_FORMAT:
            raise ValueError(f"budget checkpoint format {data.get('format')!r} is unknown")
        owner = cls(settings, parse_mode(str(data.get("mode"))),
                    _optional_str(data, "requester"), clock, emit)
        owner.original = _counts(data, "original", AXES)
        owner.totals = _counts(data, "totals", AXES)
        owner.used_counts = _counts(data, "used", COUNTED)
        owner.reserved_counts = _counts(data, "reserved", COUNTED)
        owner.revisions = _counts(data, "revisions", None)
        owner.pending_reason = _optional_str(data, "pending_reason")
        owner.final_reason = _optional_str(data, "final_reason")
        owner.reminded = bool(data.get("reminded", False))
        owner._time_before_s = _seconds(data.get("active_time_used_s"))
        owner._restore_deep_state(data.get("deep_state"))
        return owner

    # ---- internals ----------------------------------------------------------------------

    def _start_deep(self) -> None:
        if is_allowed(self.settings, self.requester):
            self._raise_to_deep()
            return
        self._log("deep-refused", f"deep refused at the start: requester {self.requester!r} "
                  "is not allowed deep; running standard")

    def _raise_to_deep(self) -> None:
        target = deep_totals(self.settings)
        self.totals = {a: max(self.totals[a], target[a]) for a in AXES}
        self.deep_state = "deep"

    def _request_refusal(self) -> str | None:
        if self.mode == "standard":
            return "the user asked for standard; it is never upgraded"
        if self.deep_state != "standard":
            return f"deep state is {self.deep_state}"
        if self.final_reason is not None:
            return f"the run is finalising ({self.final_reason})"
        fraction = self.settings.reminder_fraction
        if all(self.committed_fraction(a) < fraction for a in AXES):
            return f"too early: the upgrade window opens when an axis reaches {fraction:.0%}"
        return None

    def _apply_refusal(self, now: float | None) -> str | None:
        if self.final_reason is not None:
            return f"the run is finalising ({self.final_reason})"
        elapsed = self.elapsed_s(now)
        if elapsed >= self.totals[TIME]:
            return f"past the deadline ({int(elapsed)} s of {self.totals[TIME]} s active time)"
        if not is_allowed(self.settings, self.requester):
            return f"requester {self.requester!r} is not allowed deep"
        if (cap := self.cap_refusal()) is not None:
            return cap
        limit = self.settings.upgrade_refusal_fraction
        shares = {a: self.committed_fraction(a, of_original=True) for a in COUNTED}
        shares[TIME] = elapsed / self.original[TIME]
        late = [a for a in AXES if shares[a] >= limit]
        if late:
            return (f"{late[0]} is at {shares[late[0]]:.0%} of its original budget "
                    f"(upgrades are refused from {limit:.0%})")
        return None

    def _restore_deep_state(self, raw: object) -> None:
        for state in DEEP_STATES:
            if raw == state:
                self.deep_state = state
                return
        self.mark_unknown(f"checkpoint had deep state {raw!r}")


def _counts(data: Mapping[str, Any], key: str, axes: tuple[str, ...] | None) -> dict[str, int]:
    raw = data.get(key)
    if not isinstance(raw, Mapping) or (axes is not None and set(raw) != set(axes)) or not all(
            isinstance(k, str) and type(v) is int and v >= 0 for k, v in raw.items()):
        raise ValueError(f"budget checkpoint: {key!r} is malformed: {raw!r}")
    return {k: int(raw[k]) for k in (axes or tuple(raw))}


def _optional_str(data: Mapping[str, Any], key: str) -> str | None:
    raw = data.get(key)
    if raw is not None and not isinstance(raw, str):
        raise ValueError(f"budget checkpoint: {key!r} is not text: {raw!r}")
    return raw


def _seconds(raw: object) -> float:
    if isinstance(raw, bool) or not isinstance(raw, int | float) or raw < 0:
        raise ValueError(f"budget checkpoint: active_time_used_s is malformed: {raw!r}")
    return float(raw)
