"""Several `redsearch worker` processes for the chaos and load suites: started with one
environment, each with its own log file, SIGKILLed and started again on demand, and stopped
with SIGTERM (their runs handed over) at the end."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import signal
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

STOP_GRACE_S = 20.0
READY_LINE = "worker ready in"


@dataclass
class WorkerProcess:
    index: int
    log: Path
    process: asyncio.subprocess.Process
    started_at: float  # time.time()
    ended_at: float | None = None  # when it was killed or found exited

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def alive(self) -> bool:
        return self.process.returncode is None

    @property
    def ready_at(self) -> float | None:
        """When it logged that it was ready (its log's own clock), None if it never did."""
        for line in self.log.read_text("utf-8", errors="replace").splitlines():
            if READY_LINE in line:
                stamp = dt.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")
                return stamp.timestamp()
        return None

    def up_throughout(self, start: float, end: float) -> bool:
        """Ready by `start` and not killed or exited before `end`."""
        ready = self.ready_at
        return ready is not None and ready <= start and (self.ended_at or end) >= end


@dataclass
class Kill:
    index: int
    pid: int
    at: float  # time.time() right after the SIGKILL


@dataclass
class WorkerFleet:
    """`size` worker processes sharing `env`; logs go to `log_dir/worker-<i>.log`."""

    size: int
    env: Mapping[str, str]
    log_dir: Path
    workers: list[WorkerProcess] = field(default_factory=list)
    history: list[WorkerProcess] = field(default_factory=list)  # every process started
    kills: list[Kill] = field(default_factory=list)
    exits: list[tuple[int, int]] = field(default_factory=list)  # (index, returncode) unasked
    # kill() and restart_exited() run in different tasks: one at a time, or a killed worker
    # looks "exited" to the other, and two processes replace it (one of them untracked)
    _changing: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def start(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.workers = [await self._spawn(i) for i in range(self.size)]

    async def _spawn(self, index: int) -> WorkerProcess:
        log = self.log_dir / f"worker-{index}-{len(self.history)}.log"
        with log.open("ab") as out:
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "redsearch.cli", "worker", env=dict(self.env),
                stdin=asyncio.subprocess.DEVNULL, stdout=out, stderr=out,
                start_new_session=True)
        worker = WorkerProcess(index, log, process, time.time())
        self.history.append(worker)
        return worker

    async def wait_ready(self, timeout_s: float = 120.0) -> float:
        """Until every worker logged that it is ready; returns the seconds that took."""
        started = time.monotonic()
        while not all(READY_LINE in w.log.read_text("utf-8", errors="replace")
                      for w in self.workers):
            dead = [w for w in self.workers if not w.alive]
            if dead:
                raise RuntimeError(f"worker {dead[0].index} exited at start "
                                   f"(code {dead[0].process.returncode}); see {dead[0].log}")
            if time.monotonic() - started > timeout_s:
                raise RuntimeError(f"workers not ready after {timeout_s:g} s")
            await asyncio.sleep(0.2)
        return time.monotonic() - started

    async def kill(self, index: int) -> Kill:
        """SIGKILL worker `index` and start a new process in its place at once."""
        async with self._changing:
            worker = self.workers[index]
            worker.process.send_signal(signal.SIGKILL)
            await worker.process.wait()
            kill = Kill(index, worker.pid, time.time())
            worker.ended_at = kill.at
            self.kills.append(kill)
            self.workers[index] = await self._spawn(index)
            return kill

    async def restart_exited(self) -> list[tuple[int, int]]:
        """Start again every worker that exited by itself: (index, exit status) of each."""
        again: list[tuple[int, int]] = []
        async with self._changing:
            for worker in list(self.workers):
                if worker.process.returncode is not None:
                    worker.ended_at = time.time()
                    again.append((worker.index, worker.process.returncode))
                    self.workers[worker.index] = await self._spawn(worker.index)
        self.exits += again
        return again

    async def stop(self) -> None:
        """SIGTERM every process this fleet started that still runs; SIGKILL after a grace."""
        running = [w for w in self.history if w.alive]
        for worker in running:
            worker.process.send_signal(signal.SIGTERM)
        for worker in running:
            try:
                await asyncio.wait_for(worker.process.wait(), STOP_GRACE_S)
            except TimeoutError:
                worker.process.kill()
                await worker.process.wait()

    def logs(self) -> str:
        return "\n".join(w.log.read_text("utf-8", errors="replace") for w in self.history)


@dataclass
class BotProcess:
    """`redsearch bot` in a process of its own, serving `/slack/events` on `port`."""

    port: int
    process: asyncio.subprocess.Process

    @property
    def events_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/slack/events"

    @classmethod
    async def start(cls, env: Mapping[str, str], port: int, log: Path,
                    timeout_s: float = 60.0) -> BotProcess:
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as out:
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "redsearch.cli", "bot", "--port", str(port),
                env=dict(env), stdin=asyncio.subprocess.DEVNULL, stdout=out, stderr=out,
                start_new_session=True)
        bot = cls(port, process)
        deadline = time.monotonic() + timeout_s
        while f"bot on port {port}" not in log.read_text("utf-8", errors="replace"):
            if process.returncode is not None or time.monotonic() > deadline:
                await bot.stop()
                raise RuntimeError(f"the bot on port {port} did not start; see {log}")
            await asyncio.sleep(0.1)
        return bot

    async def stop(self) -> None:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.process.wait(), STOP_GRACE_S)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a live process has used (Linux /proc), 0 when unreadable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return ticks / os.sysconf("SC_CLK_TCK")
