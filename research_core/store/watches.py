"""Watched threads in the store: which runs are researched again, on what cadence, and
which are due. A due watch is claimed by moving its next date with a compare-and-set on the
old one, so that of several workers claiming at once exactly one gets it (docs/watch.md)."""

from __future__ import annotations

import calendar
import datetime as dt
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, update

from research_core.store.models import WatchRow
from research_core.store.sql import SqlStore, reconnecting

CADENCES = ("daily", "weekly", "monthly")


def next_date(day: dt.date, cadence: str) -> dt.date:
    """The next cycle's date after `day` for a cadence (a month on keeps the day, or the
    month's last day)."""
    if cadence == "daily":
        return day + dt.timedelta(days=1)
    if cadence == "weekly":
        return day + dt.timedelta(days=7)
    if cadence == "monthly":
        year, month = (day.year + 1, 1) if day.month == 12 else (day.year, day.month + 1)
        return day.replace(year=year, month=month,
                           day=min(day.day, calendar.monthrange(year, month)[1]))
    raise ValueError(f"watch cadence {cadence!r} is not one of {', '.join(CADENCES)}")


@dataclass(frozen=True)
class Watch:
    request_key: str
    team: str
    run_id: str
    channel: str
    thread_ts: str
    request: dict[str, Any]
    cadence: str
    next_due: dt.date
    last_as_of: dt.date
    active: bool
    note: str

    @classmethod
    def of(cls, row: WatchRow) -> Watch:
        return cls(row.request_key, row.team, row.run_id, row.channel, row.thread_ts,
                   dict(row.request), row.cadence, row.next_due, row.last_as_of, row.active,
                   row.note)


class WatchStore:
    """The `watches` table, beside the runs of the same store."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store

    @reconnecting
    async def watch(self, *, request_key: str, team: str, run_id: str, channel: str,
                    thread_ts: str, request: dict[str, Any], cadence: str,
                    last_as_of: dt.date) -> Watch:
        """Start watching (or change the cadence): the first cycle is one cadence after
        `last_as_of`, the date the thread was last researched as of."""
        row = WatchRow(request_key=request_key, team=team, run_id=run_id, channel=channel,
                       thread_ts=thread_ts, request=request, cadence=cadence,
                       next_due=next_date(last_as_of, cadence), last_as_of=last_as_of,
                       active=True, note=f"watching {cadence}", updated_at=_now())
        async with self.store.sessions.begin() as session:
            old = await session.get(WatchRow, request_key)
            if old is not None:  # a cadence change keeps what the last cycle saw
                row.last_as_of = old.last_as_of
                row.next_due = next_date(old.last_as_of, cadence)
            merged = await session.merge(row)
            return Watch.of(merged)

    @reconnecting
    async def stop(self, request_key: str, why: str) -> bool:
        """Stop watching; True when the watch was active."""
        async with self.store.sessions.begin() as session:
            result = await session.execute(
                update(WatchRow).where(WatchRow.request_key == request_key,
                                       WatchRow.active.is_(True))
                .values(active=False, note=why[:500], updated_at=_now()))
            return bool(getattr(result, "rowcount", 0))

    @reconnecting
    async def get(self, request_key: str) -> Watch | None:
        async with self.store.sessions() as session:
            row = await session.get(WatchRow, request_key)
            return None if row is None else Watch.of(row)

    @reconnecting
    async def due(self, today: dt.date) -> list[Watch]:
        async with self.store.sessions() as session:
            rows = await session.scalars(
                select(WatchRow).where(WatchRow.active.is_(True), WatchRow.next_due <= today)
                .order_by(WatchRow.next_due, WatchRow.request_key))
            return [Watch.of(r) for r in rows]

    @reconnecting
    async def claim(self, watch: Watch, today: dt.date) -> bool:
        """Move a due watch's next date past `today`: True for the one caller that moved it
        (a compare-and-set on the date it was due)."""
        following = next_date(today, watch.cadence)
        async with self.store.sessions.begin() as session:
            result = await session.execute(
                update(WatchRow).where(WatchRow.request_key == watch.request_key,
                                       WatchRow.next_due == watch.next_due,
                                       WatchRow.active.is_(True))
                .values(next_due=following, updated_at=_now()))
            return bool(getattr(result, "rowcount", 0))

    @reconnecting
    async def cycle_done(self, request_key: str, as_of: dt.date, note: str) -> None:
        """A cycle researched the thread as of `as_of`: the next one searches from there."""
        async with self.store.sessions.begin() as session:
            await session.execute(
                update(WatchRow).where(WatchRow.request_key == request_key)
                .values(last_as_of=as_of, note=note[:500], updated_at=_now()))


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)
