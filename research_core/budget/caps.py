"""Spending caps as the resource owner sees them (docs/teams.md).

The usage itself lives in the store (research_core/store/usage.py: one row per user or
channel and period, increased atomically); the owner only hears, after each checkpoint, how
the run's caps stand (`CapStatus`): a cap reached moves the run to finalisation, and a Deep
upgrade is refused when the deep budget would take the run past a cap's headroom.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Protocol

from research_core.policy import Measure, Period, Scope
from research_core.wording import ENGLISH_WORDS, N_, Words

MEASURE_WORDS: dict[str, str] = {"tokens": "token", "cost_usd": "cost", "runs": "run"}
PERIOD_WORDS: dict[str, str] = {"day": "daily", "month": "monthly"}
CAP_NAMES: dict[tuple[str, str, str], str] = {  # (scope, period, measure): the cap's name
    ("user", "day", "tokens"): N_("your daily token cap"),
    ("user", "day", "cost_usd"): N_("your daily cost cap"),
    ("user", "day", "runs"): N_("your daily run cap"),
    ("user", "month", "tokens"): N_("your monthly token cap"),
    ("user", "month", "cost_usd"): N_("your monthly cost cap"),
    ("user", "month", "runs"): N_("your monthly run cap"),
    ("channel", "day", "tokens"): N_("this channel's daily token cap"),
    ("channel", "day", "cost_usd"): N_("this channel's daily cost cap"),
    ("channel", "day", "runs"): N_("this channel's daily run cap"),
    ("channel", "month", "tokens"): N_("this channel's monthly token cap"),
    ("channel", "month", "cost_usd"): N_("this channel's monthly cost cap"),
    ("channel", "month", "runs"): N_("this channel's monthly run cap")}


def amount(measure: Measure | str, value: float, w: Words = ENGLISH_WORDS) -> str:
    """A measure's value as people read it: $1.2345, 12,345 tokens, 3 runs (in the language
    of `w`)."""
    if measure == "cost_usd":
        return f"${value:,.4f}"
    n = int(value)
    if measure == "tokens":
        return w.count(n, "{count} token", "{count} tokens", count=f"{n:,}")
    return w.count(n, "{count} run", "{count} runs", count=f"{n:,}")


def period_keys(now: dt.datetime) -> dict[Period, str]:
    """The day and the month `now` falls in (UTC), as usage rows name them."""
    utc = now.astimezone(dt.UTC)
    return {"day": f"day:{utc:%Y-%m-%d}", "month": f"month:{utc:%Y-%m}"}


def resets_at(period: Period, now: dt.datetime) -> dt.datetime:
    """When the period `now` falls in ends (UTC midnight)."""
    utc = now.astimezone(dt.UTC)
    start = dt.datetime(utc.year, utc.month, utc.day, tzinfo=dt.UTC)
    if period == "day":
        return start + dt.timedelta(days=1)
    year, month = (utc.year + 1, 1) if utc.month == 12 else (utc.year, utc.month + 1)
    return dt.datetime(year, month, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class CapBreach:
    """A cap at or past its limit: which, what is used, and when it resets."""

    scope: Scope
    key: str
    period: Period
    measure: Measure
    used: float
    cap: float
    resets: dt.datetime

    @property
    def name(self) -> str:
        whose = "your" if self.scope == "user" else "this channel's"
        return f"{whose} {PERIOD_WORDS[self.period]} {MEASURE_WORDS[self.measure]} cap"

    def message(self, w: Words = ENGLISH_WORDS) -> str:
        """Which cap is reached, what is used and when it resets (in the language of `w`)."""
        name = w(CAP_NAMES[(self.scope, self.period, self.measure)]) \
            if (self.scope, self.period, self.measure) in CAP_NAMES else self.name
        return w("{name} ({cap}) is reached: {used} used; it resets at {time} UTC", name=name,
                 cap=amount(self.measure, self.cap, w), used=amount(self.measure, self.used, w),
                 time=self.resets.strftime("%Y-%m-%d %H:%M"))


@dataclass(frozen=True)
class Headroom:
    """How much is left under the tightest token and cost caps of a run (None: no cap)."""

    tokens: float | None = None
    cost_usd: float | None = None
    tokens_breach: CapBreach | None = None  # the cap each headroom comes from
    cost_breach: CapBreach | None = None


@dataclass(frozen=True)
class CapStatus:
    """How a run's caps stand after a charge: a cap reached, or the headroom left."""

    reached: CapBreach | None = None
    headroom: Headroom = Headroom()


class CapGuard(Protocol):
    """Charges a run's spending to its user and channel and says how the caps stand (the
    store's usage, bound to one run)."""

    async def charge(self, tokens: int, cost_usd: float) -> CapStatus: ...


def deep_refusal(status: CapStatus, run_tokens: int, run_cost: float, used_steps: int,
                 extra_steps: int) -> str | None:
    """Why a Deep upgrade would breach a cap, or None: the extra steps Deep grants, at the
    run's rate per step so far, against the headroom under the token and cost caps."""
    if status.reached is not None:
        return status.reached.message()
    per_step = max(used_steps, 1)
    checks = ((run_tokens, status.headroom.tokens, status.headroom.tokens_breach),
              (run_cost, status.headroom.cost_usd, status.headroom.cost_breach))
    for spent, room, cap in checks:
        if room is None or cap is None:
            continue
        expected = spent / per_step * extra_steps
        if expected > room:
            return (f"Deep would use about {amount(cap.measure, expected)} more, past "
                    f"{cap.name} ({amount(cap.measure, cap.used)} of "
                    f"{amount(cap.measure, cap.cap)} used; it resets at "
                    f"{cap.resets:%Y-%m-%d %H:%M} UTC)")
    return None
