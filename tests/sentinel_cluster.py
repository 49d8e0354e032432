"""Redis high availability on this machine: a primary, a replica and three sentinels, each a
`redis-server` process on a free local port (in a temporary folder removed at the end)."""

from __future__ import annotations

import asyncio
import shutil
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import TracebackType
from typing import Self

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from contract.redis_server import free_port, redis_server_binary

SERVICE = "mymaster"
DOWN_AFTER_MS = 1000
FAILOVER_TIMEOUT_MS = 4000
START_TIMEOUT_S = 20.0


def sentinel_conf(port: int, primary_port: int) -> str:
    return (f"port {port}\nbind 127.0.0.1\ndaemonize no\n"
            f"sentinel monitor {SERVICE} 127.0.0.1 {primary_port} 2\n"
            f"sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}\n"
            f"sentinel failover-timeout {SERVICE} {FAILOVER_TIMEOUT_MS}\n"
            f"sentinel parallel-syncs {SERVICE} 1\n")


class SentinelCluster:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.binary = redis_server_binary()
        self.primary_port, self.replica_port = free_port(), free_port()
        self.sentinel_ports = [free_port() for _ in range(3)]
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    @property
    def url(self) -> str:
        hosts = ",".join(f"127.0.0.1:{p}" for p in self.sentinel_ports)
        return f"redis+sentinel://{hosts}/{SERVICE}/0"

    def _spawn(self, name: str, args: list[str]) -> None:
        work = self.folder / name
        work.mkdir(parents=True, exist_ok=True)
        with (work / "log").open("ab") as log:
            self.processes[name] = subprocess.Popen(
                [str(self.binary), *args], cwd=work, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True)

    async def start(self) -> None:
        common = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self._spawn("primary", ["--port", str(self.primary_port), *common])
        self._spawn("replica", ["--port", str(self.replica_port), *common,
                                "--replicaof", "127.0.0.1", str(self.primary_port)])
        for i, port in enumerate(self.sentinel_ports):
            conf = self.folder / f"sentinel-{i}.conf"
            conf.write_text(sentinel_conf(port, self.primary_port))
            self._spawn(f"sentinel-{i}", [str(conf), "--sentinel"])
        await self._until(self._ready, "the replica and the sentinels")

    async def _ready(self) -> bool:
        replica = aioredis.Redis(port=self.replica_port)
        try:
            info = await replica.info("replication")
            if info.get("master_link_status") != "up":
                return False
        finally:
            await replica.aclose()
        for port in self.sentinel_ports:
            sentinel = aioredis.Redis(port=port)
            try:
                master = await sentinel.execute_command(  # type: ignore[no-untyped-call]
                    "SENTINEL", "MASTER", SERVICE)
                fields = dict(zip(master[::2], master[1::2], strict=True))
                if int(fields[b"num-slaves"]) < 1 or int(fields[b"num-other-sentinels"]) < 2:
                    return False
            finally:
                await sentinel.aclose()
        return True

    async def primary_port_now(self) -> int | None:
        """The primary's port as the first sentinel that answers names it."""
        for port in self.sentinel_ports:
            sentinel = aioredis.Redis(port=port)
            try:
                _, found = await sentinel.execute_command(  # type: ignore[no-untyped-call]
                    "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)
                return int(found)
            except (RedisError, OSError, TypeError, ValueError):
                continue
            finally:
                await sentinel.aclose()
        return None

    def kill_primary(self) -> None:
        self.processes["primary"].send_signal(signal.SIGKILL)
        self.processes["primary"].wait()

    async def wait_failover(self) -> None:
        """Until every sentinel names the replica and the replica says it is the primary: one
        sentinel naming it is not enough, a client may ask another that has not heard yet."""
        async def promoted() -> bool:
            named = [await self._named_by(port) for port in self.sentinel_ports]
            return named == [self.replica_port] * len(named) and await self._replica_leads()
        await self._until(promoted, "the replica's promotion")

    async def _named_by(self, port: int) -> int | None:
        sentinel = aioredis.Redis(port=port)
        try:
            _, found = await sentinel.execute_command(  # type: ignore[no-untyped-call]
                "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)
            return int(found)
        finally:
            await sentinel.aclose()

    async def _replica_leads(self) -> bool:
        replica = aioredis.Redis(port=self.replica_port)
        try:
            role: str = (await replica.info("replication")).get("role", "")
            return role == "master"
        finally:
            await replica.aclose()

    @staticmethod
    async def _until(check: Callable[[], Awaitable[bool]], what: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                if await check():
                    return
            except (RedisError, OSError):
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            await asyncio.sleep(0.1)

    async def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.kill()
            process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)

    async def __aenter__(self) -> Self:
        try:
            await self.start()
        except BaseException:
            await self.stop()
            raise
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.stop()
