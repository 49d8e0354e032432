"""Private services for the chaos and load suites, on this machine only.

`DurableRedis` is a `redis-server` child process on a fixed local port with an append-only
file, so that it can be restarted (the same port, the same data) while workers and bots are
connected: the restart a production Redis with persistence goes through. `PrivateDatabase` is
a PostgreSQL database of its own on a local server, created for a suite and dropped after it;
`cut_connections` terminates the backends connected to that database only (what a database
restart or a network cut does to its clients), never anyone else's.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from contract.redis_server import free_port, log_tail, redis_server_binary, server_pid

START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0


class DurableRedis:
    """A restartable `redis-server` with persistence (AOF, fsync every second)."""

    def __init__(self, binary: Path | None = None) -> None:
        self.binary = binary or redis_server_binary()
        self.port = free_port()
        self.workdir = Path(tempfile.mkdtemp(prefix="redsearch-durable-redis-"))
        self.process: subprocess.Popen[bytes] | None = None
        self.restarts = 0

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    async def start(self) -> str:
        args = [str(self.binary), "--port", str(self.port), "--bind", "127.0.0.1",
                "--daemonize", "no", "--save", "", "--appendonly", "yes",
                "--appendfsync", "everysec", "--dir", str(self.workdir)]
        with (self.workdir / "redis.log").open("ab") as log:
            self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=subprocess.STDOUT, cwd=self.workdir,
                                            start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT_S
        while await server_pid(self.url, timeout_s=0.5) != self.process.pid:
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server on port {self.port} did not start: "
                                   f"{log_tail(self.workdir / 'redis.log')}")
            await asyncio.sleep(0.05)
        return self.url

    async def shutdown(self) -> None:
        """SIGTERM: Redis writes its append-only file and exits, as on a service restart."""
        process, self.process = self.process, None
        if process is None:
            return
        process.terminate()
        try:
            await asyncio.wait_for(asyncio.to_thread(process.wait), STOP_TIMEOUT_S)
        except TimeoutError:
            process.kill()
            await asyncio.to_thread(process.wait)

    async def restart(self, down_s: float) -> float:
        """Shut down, stay down `down_s`, start again; returns the seconds it was away."""
        started = time.monotonic()
        await self.shutdown()
        await asyncio.sleep(down_s)
        await self.start()
        self.restarts += 1
        return time.monotonic() - started

    async def stop(self) -> None:
        await self.shutdown()
        shutil.rmtree(self.workdir, ignore_errors=True)


class PrivateDatabase:
    """A PostgreSQL database of its own: `create()`, hand `url` to the workers, `drop()`.

    `server_url` is any database on the server that the role may connect to, as a
    SQLAlchemy URL (`postgresql+asyncpg://user@host:port/db`)."""

    def __init__(self, server_url: str, prefix: str = "redsearch_suite") -> None:
        self.server_url = server_url
        self.name = f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:6]}"

    @property
    def url(self) -> str:
        base = self.server_url.rsplit("/", 1)[0]
        return f"{base}/{self.name}"

    async def _admin(self, sql: str, **params: str) -> list[Any]:
        """One statement outside a transaction (CREATE/DROP DATABASE need that)."""
        engine = create_async_engine(self.server_url, poolclass=NullPool,
                                     isolation_level="AUTOCOMMIT")
        try:
            async with engine.connect() as conn:
                result = await conn.execute(text(sql), params)
                return list(result.all()) if result.returns_rows else []
        finally:
            await engine.dispose()

    async def create(self) -> str:
        await self._admin(f'CREATE DATABASE "{self.name}"')
        return self.url

    async def cut_connections(self) -> int:
        """Terminate every backend connected to this database; returns how many."""
        rows = await self._admin(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = :name AND pid <> pg_backend_pid()", name=self.name)
        return sum(1 for row in rows if row[0])

    async def fetch(self, sql: str) -> list[Any]:
        """Rows of a query on this database, over a connection of its own (none is kept)."""
        engine = create_async_engine(self.url, poolclass=NullPool)
        try:
            async with engine.connect() as conn:
                return list((await conn.execute(text(sql))).all())
        finally:
            await engine.dispose()

    async def drop(self) -> None:
        await self._admin(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
