"""The SQL store (SQLAlchemy async; SQLite by default, PostgreSQL at scale).

`save_checkpoint` writes a run's whole state in one transaction after every step, so a
crash loses at most the step in flight.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import functools
import logging
import sqlite3
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, ParamSpec, TypeVar
from urllib.parse import urlsplit

from sqlalchemy import delete, inspect, select, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import (
    ArgumentError,
    DBAPIError,
    InvalidRequestError,
    NoSuchModuleError,
    OperationalError,
    SQLAlchemyError,
)
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.sql import Insert

from research_core.delivery.publications import Publication
from research_core.errors import StoreUnavailable
from research_core.loop.memory.state import RunState
from research_core.loop.report.reporter import ClaimCheck, Report, Source
from research_core.protocols import SearchHit
from research_core.redaction import redact_url
from research_core.store.models import (
    Base,
    CacheRow,
    ClaimRow,
    EventRow,
    EvidenceRow,
    FeedbackRow,
    LedgerRow,
    NodeRow,
    PublicationIntentRow,
    PublicationRow,
    QueryRow,
    ReportRow,
    RunRow,
    SummaryRow,
)

# PostgreSQL advisory lock held while the tables are created: several workers opening a fresh
# database at once would otherwise race in CREATE TABLE and all but one fail.
SCHEMA_LOCK_ID = 0x7265647365617263  # "redsearc"
RECONNECT_TRIES = 4
RECONNECT_PAUSE_S = 0.5
P = ParamSpec("P")
R = TypeVar("R")
log = logging.getLogger(__name__)
_PER_RUN = (NodeRow, QueryRow, EvidenceRow, SummaryRow, LedgerRow, EventRow)


def reconnecting(method: Callable[P, Coroutine[Any, Any, R]]
                 ) -> Callable[P, Coroutine[Any, Any, R]]:
    """Runs a store call again when the database dropped its connection under it (a restart,
    a failover, an administrator terminating backends). Each call is one transaction that
    writes the same rows however often it runs, so running it again is safe; the pool's
    pre-ping replaces the dead connections."""

    @functools.wraps(method)
    async def call(*args: P.args, **kwargs: P.kwargs) -> R:
        for attempt in range(1, RECONNECT_TRIES + 1):
            try:
                return await method(*args, **kwargs)
            except DBAPIError as exc:
                if not exc.connection_invalidated or attempt == RECONNECT_TRIES:
                    raise
                log.warning("database connection lost in %s (%s); trying again",
                            method.__name__, type(exc.orig).__name__)
                await asyncio.sleep(RECONNECT_PAUSE_S * attempt)
        raise AssertionError("unreachable")

    return call


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


DATA_DIR = "RED_DATA_DIR"  # `origin` of a database the settings placed in the data folder
_DATA_DIR_HINT = f"; set {DATA_DIR} to a folder the database can be written in"


class _FolderProblem(Exception):
    """A SQLite file's folder that is not one, or cannot be made (`text` names it)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def _sqlite_folder(url: str) -> Path | None:
    """The folder of a SQLite database file (`sqlite+aiosqlite:///path/to/file.db`)."""
    if url.startswith("sqlite") and ":///" in url:
        path = url.split(":///", 1)[1].split("?", 1)[0]
        if path and path != ":memory:":
            return Path(path).parent
    return None


def _make_folder(url: str) -> None:
    """The folder of a SQLite database file, created when missing, and the file opened once
    (aiosqlite's thread outlives a connection that failed to open, and then raises into a
    closed event loop); _FolderProblem saying what is in the way."""
    folder = _sqlite_folder(url)
    if folder is None:
        return
    if folder.exists() and not folder.is_dir():
        raise _FolderProblem(f"{folder} is not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        blocker = next((p for p in folder.parents if p.exists() and not p.is_dir()), None)
        why = f"{blocker} is a file" if blocker else (exc.strerror or type(exc).__name__)
        raise _FolderProblem(f"{folder} cannot be created ({why.lower()})") from exc
    path = url.split(":///", 1)[1].split("?", 1)[0]
    try:
        sqlite3.connect(path).close()
    except sqlite3.Error as exc:
        raise _FolderProblem(f"{folder}: the database cannot be created or opened there "
                             f"({exc})") from exc


async def _create_tables(engine: AsyncEngine) -> None:
    """The tables, once: on PostgreSQL under an advisory lock (workers starting together, one
    at a time); on SQLite, where a bot and a worker opening one new file at once both found
    no table and the second CREATE failed ("table runs already exists"), by looking again:
    once a table, since each look may meet another opener creating the next one."""
    tries = len(Base.metadata.tables) + 1
    for attempt in range(tries):
        try:
            async with engine.begin() as conn:
                if conn.dialect.name == "postgresql":
                    await conn.execute(text("SELECT pg_advisory_xact_lock(:id)"),
                                       {"id": SCHEMA_LOCK_ID})
                await conn.run_sync(Base.metadata.create_all)
            return
        except OperationalError as exc:
            if attempt == tries - 1 or "already exists" not in str(exc.orig):
                raise


def _why(exc: BaseException) -> str:
    """What went wrong, without echoing the URL (SQLAlchemy's messages quote it whole)."""
    if isinstance(exc, NoSuchModuleError):
        return "unknown database dialect or driver (use sqlite+aiosqlite:// or postgresql+asyncpg://)"
    if isinstance(exc, ImportError):
        return f"its driver is not installed ({exc.name or type(exc).__name__})"
    if isinstance(exc, InvalidRequestError) and "async" in str(exc):
        return "not an asyncio driver (use sqlite+aiosqlite:// or postgresql+asyncpg://)"
    if isinstance(exc, ArgumentError):
        return "not a database URL (e.g. sqlite+aiosqlite:///path/to/file.db)"
    if isinstance(exc, OSError):
        return f"{type(exc).__name__}: {exc.strerror or exc}"
    if isinstance(exc, DBAPIError):
        return f"the database refused it ({_driver_said(exc)})"
    if isinstance(exc, ValueError | OverflowError):
        return "the URL is malformed (check its host, port and path)"
    return f"unexpected {type(exc).__name__}"


def _driver_said(exc: DBAPIError) -> str:
    """The driver's own words, on one line (not SQLAlchemy's: it quotes the SQL)."""
    return " ".join(str(exc.orig).split())[:200] or type(exc.orig).__name__


def _password(url: str) -> str | None:
    try:
        return urlsplit(url).password
    except ValueError:
        return None


def store_failure(url: str, origin: str, exc: BaseException) -> StoreUnavailable:
    """One line saying what is wrong with the database and what to do: named by the setting
    it came from (`origin`: DATABASE_URL, RED_DATA_DIR, or "" when built in code)."""
    folder = _sqlite_folder(url)
    if isinstance(exc, _FolderProblem):
        problem = exc.text
    elif folder is not None and isinstance(exc, DBAPIError):
        problem = f"{folder}: the database cannot be created or opened there " \
                  f"({_driver_said(exc)})"
    else:
        problem = _why(exc)
    password = _password(url)
    if password:  # a driver may quote what it was given
        problem = problem.replace(password, "***")
    if origin == DATA_DIR and folder is not None:
        subject = problem if problem.startswith(str(folder)) else f"{folder}: {problem}"
        return StoreUnavailable(f"{DATA_DIR} {subject}{_DATA_DIR_HINT}")
    if origin:
        return StoreUnavailable(f"{origin}={redact_url(url)}: {problem}")
    return StoreUnavailable(f"cannot open the database {redact_url(url)}: {problem}")


class SqlStore:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self.sessions = async_sessionmaker(engine, expire_on_commit=False)

    @classmethod
    async def open(cls, url: str, origin: str = "") -> SqlStore:
        """Connect and create the tables; a SQLite file's folder is created first. Any URL,
        folder or connection problem is a StoreUnavailable naming the URL without secrets,
        and the setting it came from (`origin`: "DATABASE_URL" or "RED_DATA_DIR")."""
        try:
            _make_folder(url)
            engine = create_async_engine(url, pool_pre_ping=True)
        except (_FolderProblem, SQLAlchemyError, OSError, ImportError, ValueError,
                OverflowError) as exc:
            raise store_failure(url, origin, exc) from exc
        try:
            await _create_tables(engine)
        except (SQLAlchemyError, OSError, ValueError, OverflowError) as exc:
            await engine.dispose()
            raise store_failure(url, origin, exc) from exc
        return cls(engine)

    async def close(self) -> None:
        await self.engine.dispose()

    @reconnecting
    async def save_checkpoint(self, state: RunState) -> None:
        async with self.sessions.begin() as session:
            await session.merge(_run_row(state, await self._created(session, state.run_id)))
            for table in _PER_RUN:
                await session.execute(delete(table).where(table.run_id == state.run_id))
            session.add_all(_state_rows(state))

    async def _created(self, session: AsyncSession, run_id: str) -> dt.datetime:
        row = await session.get(RunRow, run_id)
        return row.created_at if row else _now()

    @reconnecting
    async def save_report(self, run_id: str, report: Report) -> None:
        async with self.sessions.begin() as session:
            await session.merge(ReportRow(
                run_id=run_id, text=report.text, cited=report.cited, fallback=report.fallback,
                sources=[_jsonable(dataclasses.asdict(s)) for s in report.sources],
                created_at=_now(),
            ))
            await session.execute(delete(ClaimRow).where(ClaimRow.run_id == run_id))
            session.add_all(ClaimRow(run_id=run_id, idx=i, **dataclasses.asdict(c))
                            for i, c in enumerate(report.claims))

    @reconnecting
    async def load_report(self, run_id: str) -> Report | None:
        """The report saved for the run, with its checked claims; None when none was saved."""
        async with self.sessions() as session:
            row = await session.get(ReportRow, run_id)
        if row is None:
            return None
        claims = sorted(await self.rows(ClaimRow, run_id), key=lambda c: c.idx)
        return Report(text=row.text, sources=[_source(s) for s in row.sources],
                      cited=list(row.cited), fallback=row.fallback,
                      claims=[_claim(c) for c in claims])

    @reconnecting
    async def rows(self, table: type[Any], run_id: str) -> list[Any]:
        """All rows of one per-run table, in key order (for inspection and tests)."""
        async with self.sessions() as session:
            result = await session.execute(select(table).where(table.run_id == run_id))
            return list(result.scalars().all())

    @reconnecting
    async def sent_publication(self, key: str) -> Publication | None:
        async with self.sessions() as session:
            row = await session.get(PublicationRow, key)
        return publication_of(row) if row else None

    @reconnecting
    async def record_intent(self, publication: Publication) -> None:
        """Written before the channel is called (see `pending_publication`)."""
        async with self.sessions.begin() as session:
            await session.merge(PublicationIntentRow(
                key=publication.key, run_id=publication.run_id, created_at=_now(),
                publication=dataclasses.asdict(publication)))

    @reconnecting
    async def pending_publication(self, key: str) -> Publication | None:
        """An intent never confirmed: the send may or may not have reached the channel."""
        async with self.sessions() as session:
            row = await session.get(PublicationIntentRow, key)
        return Publication(**row.publication) if row else None

    @reconnecting
    async def record_publication(self, publication: Publication) -> None:
        """The channel accepted it: into the outbox, and its intent is settled."""
        fields = dataclasses.asdict(publication)
        async with self.sessions.begin() as session:
            await session.merge(PublicationRow(key=publication.key, sent_at=_now(), **fields))
            await session.execute(delete(PublicationIntentRow).where(
                PublicationIntentRow.key == publication.key))

    @reconnecting
    async def publications(self, run_id: str) -> list[Publication]:
        async with self.sessions() as session:
            result = await session.execute(select(PublicationRow).where(
                PublicationRow.run_id == run_id).order_by(PublicationRow.sent_at))
            return [publication_of(r) for r in result.scalars().all()]

    @reconnecting
    async def interrupted_runs(self, question: str) -> list[str]:
        """Goal-tree runs of this question that stopped before finishing, newest first."""
        async with self.sessions() as session:
            result = await session.execute(
                select(RunRow).where(RunRow.question == question, RunRow.status == "running")
                .order_by(RunRow.updated_at.desc()))
            rows = list(result.scalars().all())
        return [r.run_id for r in rows
                if r.working.get("extra", {}).get("strategy", "hierarchical") == "hierarchical"]

    @reconnecting
    async def record_feedback(self, run_id: str, message_ts: str, user: str, part_key: str,
                              verdict: str, clicked_at: dt.datetime | None = None) -> None:
        """A person's verdict on an answer message; their later click replaces it, whichever
        job stores it first (two quick clicks are two jobs that may run in either order)."""
        row = {"run_id": run_id, "message_ts": message_ts, "user": user,
               "part_key": part_key, "verdict": verdict, "at": clicked_at or _now()}
        async with self.sessions.begin() as session:
            statement = upsert(self.engine.dialect.name, FeedbackRow, row,
                               where=lambda excluded: FeedbackRow.at <= excluded.at)
            if statement is None:
                await session.merge(FeedbackRow(**row))
            else:
                await session.execute(statement)

    @reconnecting
    async def run_row(self, run_id: str) -> RunRow | None:
        async with self.sessions() as session:
            return await session.get(RunRow, run_id)

    @reconnecting
    async def cache_get(self, key: str, ttl_s: int) -> list[SearchHit] | None:
        async with self.sessions() as session:
            row = await session.get(CacheRow, key)
        if row is None or _age_s(row.stored_at) > ttl_s:
            return None
        return [_hit(h) for h in row.hits]

    @reconnecting
    async def cache_put(self, key: str, hits: list[SearchHit]) -> None:
        """Insert or replace in one statement: runs on several workers caching the same
        query at once must not collide (a read-then-insert merge did, on PostgreSQL)."""
        row = {"key": key, "hits": [_jsonable(dataclasses.asdict(h)) for h in hits],
               "stored_at": _now()}
        async with self.sessions.begin() as session:
            statement = upsert(self.engine.dialect.name, CacheRow, row)
            if statement is None:
                await session.merge(CacheRow(**row))
            else:
                await session.execute(statement)


def upsert(dialect: str, table: type[Base], row: dict[str, Any],
           updates: Callable[[Any], dict[str, Any]] | None = None,
           where: Callable[[Any], Any] | None = None) -> Insert | None:
    """INSERT … ON CONFLICT (primary key) DO UPDATE of one row, where the dialect has it: two
    writers of the same key at once (two clicks, two workers caching a query, two runs
    charging one user) must not collide, and a read-then-insert merge does. `updates` builds
    the new values from the row that was refused (`excluded`); by default it replaces them.
    `where` (of `excluded`) says when the stored row is replaced at all."""
    keys = [column.name for column in inspect(table).primary_key]
    insert = {"postgresql": postgresql.insert, "sqlite": sqlite.insert}.get(dialect)
    if insert is None:
        return None
    statement: Any = insert(table).values(**row)  # the dialect's Insert, with ON CONFLICT
    excluded = statement.excluded
    new = updates(excluded) if updates else {k: excluded[k] for k in row if k not in keys}
    result: Insert = statement.on_conflict_do_update(
        index_elements=keys, set_=new, where=where(excluded) if where else None)
    return result


def publication_of(row: PublicationRow) -> Publication:
    return Publication(
        run_id=row.run_id, part_key=row.part_key, version=row.version, kind=row.kind,
        text=row.text, sources=list(row.sources), reason=row.reason, replaces=row.replaces,
        channel_id=row.channel_id,
    )


def _age_s(stored_at: dt.datetime) -> float:
    if stored_at.tzinfo is None:
        stored_at = stored_at.replace(tzinfo=dt.UTC)
    return (_now() - stored_at).total_seconds()


def _jsonable(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v.isoformat() if isinstance(v, dt.date) else v for k, v in data.items()}


def _source(data: dict[str, Any]) -> Source:
    published = data.get("published")
    return Source(**{**data, "published": dt.date.fromisoformat(published)
                     if published else None})


def _claim(row: ClaimRow) -> ClaimCheck:
    return ClaimCheck(text=row.text, citations=list(row.citations), supported=row.supported,
                      reason=row.reason, checked_by=row.checked_by)


def _hit(data: dict[str, Any]) -> SearchHit:
    published = data.get("published")
    return SearchHit(**{**data, "published": dt.date.fromisoformat(published)
                        if published else None})


def _run_row(state: RunState, created: dt.datetime) -> RunRow:
    working = {"node_id": state.working.node_id, "items": [e.id for e in state.working.items],
               "deep_reads": [dataclasses.asdict(r) for r in state.deep_reads],
               "extra": state.extra.to_dict()}
    return RunRow(
        run_id=state.run_id, question=state.question, as_of=state.as_of, status=state.status,
        step=state.step, working=working, created_at=created, updated_at=_now(),
    )


def _state_rows(state: RunState) -> list[Base]:
    rid = state.run_id
    rows: list[Base] = [
        NodeRow(run_id=rid, node_id=n.id, parent_id=n.parent_id, question=n.question,
                value=n.value, depth=n.depth, status=n.status, rounds=n.rounds,
                children=list(n.children))
        for n in state.tree.nodes.values()
    ]
    rows += [
        QueryRow(run_id=rid, query_id=q.id, node_id=q.node_id, step=q.step, text=q.text,
                 since=q.time_range.since, until=q.time_range.until, from_cache=q.from_cache,
                 result_ids=list(q.result_ids))
        for q in state.queries
    ]
    rows += [EvidenceRow(run_id=rid, evidence_id=e.id, **_evidence_fields(e))
             for e in state.evidence]
    rows += [
        SummaryRow(run_id=rid, **dataclasses.asdict(s))
        for s in state.summaries.values()
    ]
    rows += [LedgerRow(run_id=rid, **dataclasses.asdict(e)) for e in state.ledger.entries]
    rows += [EventRow(run_id=rid, seq=e.seq, step=e.step, kind=e.kind, message=e.message,
                      data=e.data, at=e.at) for e in state.log.events]
    return rows


def _evidence_fields(e: Any) -> dict[str, Any]:
    fields = dataclasses.asdict(e)
    fields.pop("id")
    return fields
