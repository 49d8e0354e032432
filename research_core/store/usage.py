"""Usage per user and per channel, per day and per month, kept in the store (docs/teams.md).

Every change is an atomic increment in one statement (`INSERT … ON CONFLICT DO UPDATE SET
tokens = usage.tokens + excluded.tokens`), so workers charging at once never lose an
increment. A run is admitted once (its charge row is created with the run counted, in the
same transaction as the increment, and a run past a cap rolls back); each later charge adds
only the difference between what the run has spent and what it charged before, again in
one transaction, so a resumed run never counts twice.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from research_core.budget.caps import CapBreach, CapStatus, Headroom, period_keys, resets_at
from research_core.policy import MEASURES, PERIODS, SCOPES, Caps, Measure, Period, Scope
from research_core.store.models import ChargeRow, UsageRow
from research_core.store.sql import SqlStore, reconnecting, upsert

Clock = Callable[[], dt.datetime]


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@dataclass(frozen=True)
class Usage:
    tokens: int = 0
    cost_usd: float = 0.0
    runs: int = 0

    def of(self, measure: Measure) -> float:
        value: float = getattr(self, measure)
        return value


@dataclass(frozen=True)
class UsageLine:
    scope: Scope
    key: str
    period: str
    usage: Usage


class UsageStore:
    def __init__(self, store: SqlStore, clock: Clock = utc_now) -> None:
        self.store = store
        self.clock = clock

    @reconnecting
    async def admit_run(self, charge_id: str, user: str, channel: str,
                        caps: Caps) -> CapBreach | None:
        """Count a new run for its user and channel, or refuse it (None: admitted). A run
        already admitted (a resume) is admitted again without counting."""
        now = self.clock()
        periods = period_keys(now)
        async with self.store.sessions.begin() as session:
            if await session.get(ChargeRow, charge_id) is not None:
                return None
            found: dict[tuple[Scope, Period], Usage] = {}
            for scope, key in _whom(user, channel):
                for period in PERIODS:
                    found[(scope, period)] = await self._add(
                        session, scope, key, periods[period], Usage(runs=1))
            breach = _first_breach(found, {"user": user, "channel": channel}, caps, now,
                                   starting=True)
            if breach is not None:
                await session.rollback()
                return breach
            session.add(ChargeRow(charge_id=charge_id, user=user, channel=channel,
                                  day=periods["day"], month=periods["month"], tokens=0,
                                  cost_usd=0.0))
        return None

    async def check(self, user: str, channel: str, caps: Caps) -> CapBreach | None:
        """The cap a new run (or a plan preview) would start past, without counting it."""
        now = self.clock()
        found: dict[tuple[Scope, Period], Usage] = {}
        for scope, key in _whom(user, channel):
            for period, used in (await self.current(scope, key)).items():
                found[(scope, period)] = Usage(used.tokens, used.cost_usd, used.runs + 1)
        return _first_breach(found, {"user": user, "channel": channel}, caps, now,
                             starting=True)

    @reconnecting
    async def charge(self, charge_id: str, user: str, channel: str, tokens: int,
                     cost_usd: float, caps: Caps) -> CapStatus:
        """Bring the usage up to what the run has spent in all (`tokens`, `cost_usd`), and
        say how its caps stand."""
        now = self.clock()
        async with self.store.sessions.begin() as session:
            row = await session.get(ChargeRow, charge_id, with_for_update=True)
            if row is None:
                periods = period_keys(now)
                row = ChargeRow(charge_id=charge_id, user=user, channel=channel,
                                day=periods["day"], month=periods["month"], tokens=0,
                                cost_usd=0.0)
                session.add(row)
            delta = Usage(tokens=max(0, tokens - row.tokens),
                          cost_usd=max(0.0, cost_usd - row.cost_usd))
            found: dict[tuple[Scope, Period], Usage] = {}
            names: tuple[tuple[Period, str], ...] = (("day", row.day), ("month", row.month))
            for scope, key in _whom(row.user, row.channel):
                for period, name in names:
                    found[(scope, period)] = await self._add(session, scope, key, name, delta)
            row.tokens, row.cost_usd = max(row.tokens, tokens), max(row.cost_usd, cost_usd)
            whom: dict[Scope, str] = {"user": row.user, "channel": row.channel}
        return CapStatus(_first_breach(found, whom, caps, now, starting=False),
                         _headroom(found, whom, caps, now))

    async def _add(self, session: AsyncSession, scope: Scope, key: str, period: str,
                   delta: Usage) -> Usage:
        """used = used + delta, in one statement; the row as it is after."""
        row = {"scope": scope, "key": key, "period": period, "tokens": delta.tokens,
               "cost_usd": delta.cost_usd, "runs": delta.runs}
        statement = upsert(self.store.engine.dialect.name, UsageRow, row, _sums)
        assert statement is not None, "the store runs on SQLite or PostgreSQL"
        returning = statement.returning(UsageRow.tokens, UsageRow.cost_usd, UsageRow.runs)
        tokens, cost, runs = (await session.execute(returning)).one()
        return Usage(int(tokens), float(cost), int(runs))

    @reconnecting
    async def current(self, scope: Scope, key: str) -> dict[Period, Usage]:
        """What `key` has used this day and this month."""
        periods = period_keys(self.clock())
        async with self.store.sessions() as session:
            out: dict[Period, Usage] = {}
            for period in PERIODS:
                row = await session.get(UsageRow, (scope, key, periods[period]))
                out[period] = Usage() if row is None else Usage(row.tokens, row.cost_usd,
                                                                row.runs)
        return out

    @reconnecting
    async def lines(self, user: str | None = None, channel: str | None = None,
                    current_only: bool = True) -> list[UsageLine]:
        """Usage rows (this day and month unless `current_only` is False), filtered."""
        query = select(UsageRow)
        if current_only:
            query = query.where(UsageRow.period.in_(list(period_keys(self.clock()).values())))
        wanted = [(s, k) for s, k in (("user", user), ("channel", channel)) if k]
        if wanted:
            query = query.where(or_(*(and_(UsageRow.scope == s, UsageRow.key == k)
                                      for s, k in wanted)))
        async with self.store.sessions() as session:
            rows = (await session.execute(query.order_by(
                UsageRow.scope, UsageRow.key, UsageRow.period))).scalars().all()
        return [UsageLine(_scope(r.scope), r.key, r.period,
                          Usage(r.tokens, r.cost_usd, r.runs)) for r in rows]


def _whom(user: str, channel: str) -> tuple[tuple[Scope, str], ...]:
    return (("user", user), ("channel", channel))


def _sums(excluded: Any) -> dict[str, Any]:
    return {"tokens": UsageRow.tokens + excluded.tokens,
            "cost_usd": UsageRow.cost_usd + excluded.cost_usd,
            "runs": UsageRow.runs + excluded.runs}


def _scope(text: str) -> Scope:
    return "user" if text == "user" else "channel"


def _set_caps(found: dict[tuple[Scope, Period], Usage], caps: Caps,
              measures: tuple[Measure, ...]) -> Iterator[tuple[Scope, Period, Measure, float,
                                                             float]]:
    """Every cap the policy sets on these measures, with what is used against it:
    (scope, period, measure, cap, used), scope by scope, period by period."""
    for scope in SCOPES:
        for period in PERIODS:
            limits, used = caps.limits(scope, period), found[(scope, period)]
            for measure in measures:
                cap = limits.cap(measure)
                if cap is not None:
                    yield scope, period, measure, cap, used.of(measure)


def _first_breach(found: dict[tuple[Scope, Period], Usage], whom: dict[Scope, str], caps: Caps,
                  now: dt.datetime, starting: bool) -> CapBreach | None:
    """The first cap at or past its limit. Starting, the run itself is counted: runs may
    reach the cap, tokens and cost must still be under it."""
    for scope, period, measure, cap, value in _set_caps(found, caps, MEASURES):
        if measure == "runs" and not starting:
            continue  # a run already admitted is not stopped by the run count
        if value > cap if measure == "runs" else value >= cap:
            shown = value - 1 if measure == "runs" else value  # before this run
            return CapBreach(scope, whom[scope], period, measure, shown, cap,
                             resets_at(period, now))
    return None


def _headroom(found: dict[tuple[Scope, Period], Usage], whom: dict[Scope, str], caps: Caps,
              now: dt.datetime) -> Headroom:
    """The least room left under any token cap and any cost cap."""
    best: dict[str, tuple[float, CapBreach]] = {}
    for scope, period, measure, cap, value in _set_caps(found, caps, ("tokens", "cost_usd")):
        room = cap - value
        if measure not in best or room < best[measure][0]:
            best[measure] = (room, CapBreach(scope, whom[scope], period, measure, value, cap,
                                             resets_at(period, now)))
    tokens, cost = best.get("tokens"), best.get("cost_usd")
    return Headroom(tokens[0] if tokens else None, cost[0] if cost else None,
                    tokens[1] if tokens else None, cost[1] if cost else None)


@dataclass(frozen=True)
class RunCaps:
    """The usage bound to one run: what the engine's resource owner charges after each
    checkpoint (research_core.budget.caps.CapGuard)."""

    usage: UsageStore
    charge_id: str
    user: str
    channel: str
    caps: Caps
    spent_before: tuple[int, float] = (0, 0.0)  # what the run had spent before this charge
    # id began (a watch cycle charges only its own spending, to the day it runs)

    async def charge(self, tokens: int, cost_usd: float) -> CapStatus:
        base_tokens, base_cost = self.spent_before
        return await self.usage.charge(self.charge_id, self.user, self.channel,
                                       max(0, tokens - base_tokens),
                                       max(0.0, cost_usd - base_cost), self.caps)


class LazyUsage:
    """Everyone's usage this day and month, from a store opened on first use (the bot reads
    it only when an admin opens their Home tab); `close()` it when done."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.store: SqlStore | None = None
        self._opening = asyncio.Lock()  # two Home tabs opened at once open one store

    async def __call__(self) -> list[UsageLine]:
        async with self._opening:
            if self.store is None:
                self.store = await SqlStore.open(self.url)
        return await UsageStore(self.store).lines()

    async def close(self) -> None:
        if self.store is not None:
            await self.store.close()
            self.store = None
