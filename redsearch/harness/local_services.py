"""Private services for the chaos and load suites, on this machine only.

`DurableRedis` is a `redis-server` child process on a fixed local port with an append-only
file, so that it can be restarted (the same port, the same data) while workers and bots are
connected: the restart a production Redis with persistence goes through. It can also lose
its last writes: `snapshot()` keeps the data as it is, and `lose_writes()` kills the server
and starts it again from that snapshot, as an asynchronous replica that had not copied the
writes since takes over from a primary that died. `PrivateDatabase` is
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

import redis.asyncio as aioredis
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from contract.redis_server import free_port, log_tail, redis_server_binary, server_pid

START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0
SNAPSHOT = "snapshot.rdb"  # what `lose_writes` comes back with


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

    async def start(self, appendonly: bool = True) -> str:
        """Start on the port; `appendonly=False` loads `dump.rdb` instead of the AOF."""
        args = [str(self.binary), "--port", str(self.port), "--bind", "127.0.0.1",
                "--daemonize", "no", "--save", "", "--appendonly",
                "yes" if appendonly else "no", "--appendfsync", "everysec",
                "--dir", str(self.workdir)]
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

    async def snapshot(self) -> None:
        """Keep the data as it is now for `lose_writes` (SAVE: a point in time; the suites'
        data is small, so the server blocks for milliseconds)."""
        client = aioredis.Redis.from_url(self.url)
        try:
            await client.save()
        finally:
            await client.aclose()
        shutil.copyfile(self.workdir / "dump.rdb", self.workdir / SNAPSHOT)

    async def lose_writes(self, down_s: float) -> float:
        """SIGKILL, then start again, after `down_s`, with the data of the last `snapshot()`
        only: every write since is lost (the queued jobs, renewed leases, requests). The AOF
        is rebuilt from that data, so later restarts keep it. Returns the seconds away."""
        started = time.monotonic()
        process, self.process = self.process, None
        if process is not None:
            process.kill()
            await asyncio.to_thread(process.wait)
        shutil.rmtree(self.workdir / "appendonlydir", ignore_errors=True)  # Redis 7
        (self.workdir / "appendonly.aof").unlink(missing_ok=True)  # older servers
        shutil.copyfile(self.workdir / SNAPSHOT, self.workdir / "dump.rdb")
        await asyncio.sleep(down_s)
        await self.start(appendonly=False)
        client = aioredis.Redis.from_url(self.url)
        try:
            await client.config_set("appendonly", "yes")  # persistence on again, from here
            await self._rewritten(client)
        finally:
            await client.aclose()
        self.restarts += 1
        return time.monotonic() - started

    async def _rewritten(self, client: aioredis.Redis) -> None:
        """Until the AOF that `appendonly yes` builds from memory is written: a restart
        before that would come back empty."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            info = await client.info("persistence")
            if info["aof_enabled"] and not (info["aof_rewrite_in_progress"]
                                            or info["aof_rewrite_scheduled"]) \
                    and info.get("aof_last_bgrewrite_status") == "ok" and self._has_aof():
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"redis-server on port {self.port}: no AOF after "
                                   f"{START_TIMEOUT_S:g} s")
            await asyncio.sleep(0.05)

    def _has_aof(self) -> bool:
        return (self.workdir / "appendonly.aof").exists() \
            or any((self.workdir / "appendonlydir").glob("*.manifest"))

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
