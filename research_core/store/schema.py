"""Whether a database holds the schema this version writes (`redsearch doctor`).

The store creates the tables it misses when it opens (`SqlStore.open`), but never adds a
column to a table an older version made: a missing column breaks every run that writes the
table. This reads what the database holds, without changing anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from research_core.store.models import Base


@dataclass(frozen=True)
class SchemaState:
    """The server ("SQLite 3.40.1"), and what the database lacks of the current schema."""

    server: str
    tables: int  # the tables of the current schema
    missing_tables: list[str] = field(default_factory=list)
    missing_columns: dict[str, list[str]] = field(default_factory=dict)

    @property
    def current(self) -> bool:
        """Every table the database has holds every column of this version (tables missing
        altogether are created when a worker or the bot opens the store)."""
        return not self.missing_columns


def sqlite_file(url: str) -> Path | None:
    """The file of a SQLite URL (`sqlite+aiosqlite:///path/file.db`); None for any other."""
    if url.startswith("sqlite") and ":///" in url:
        path = url.split(":///", 1)[1].split("?", 1)[0]
        return Path(path) if path and path != ":memory:" else None
    return None


async def read_schema(conn: AsyncConnection) -> SchemaState:
    server = await _server(conn)
    found: dict[str, set[str]] = await conn.run_sync(_columns)
    missing_tables = [t for t in Base.metadata.tables if t not in found]
    missing_columns = {
        name: sorted(c.name for c in table.columns if c.name not in found[name])
        for name, table in Base.metadata.tables.items() if name in found}
    return SchemaState(server, len(Base.metadata.tables), sorted(missing_tables),
                       {k: v for k, v in missing_columns.items() if v})


def _columns(conn: Connection) -> dict[str, set[str]]:
    inspector = inspect(conn)
    return {name: {c["name"] for c in inspector.get_columns(name)}
            for name in inspector.get_table_names() if name in Base.metadata.tables}


async def _server(conn: AsyncConnection) -> str:
    if conn.dialect.name == "sqlite":
        version = (await conn.execute(text("select sqlite_version()"))).scalar()
        return f"SQLite {version}"
    if conn.dialect.name == "postgresql":
        version = (await conn.execute(text("show server_version"))).scalar()
        return f"PostgreSQL {str(version).split()[0]}"
    return conn.dialect.name
