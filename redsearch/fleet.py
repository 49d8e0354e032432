"""Several `redsearch worker` processes for the chaos and load suites: started with one
environment, each with its own log file, SIGKILLed and started again on demand, and stopped
with SIGTERM (their runs handed over) at the end."""

from __future__ import annotations

import asyncio
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

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def alive(self) -> bool:
        return self.process.returncode is None


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
    kills: list[Kill] = field(default_factory=list)
    exits: list[tuple[int, int]] = field(default_factory=list)  # (index, returncode) unasked

    async def start(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.workers = [await self._spawn(i) for i in range(self.size)]

    async def _spawn(self, index: int) -> WorkerProcess:
        log = self.log_dir / f"worker-{index}.log"
        with log.open("ab") as out:
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "redsearch.cli", "worker", env=dict(self.env),
                stdin=asyncio.subprocess.DEVNULL, stdout=out, stderr=out,
                start_new_session=True)
        return WorkerProcess(index, log, process, time.time())

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
        worker = self.workers[index]
        worker.process.send_signal(signal.SIGKILL)
        await worker.process.wait()
        kill = Kill(index, worker.pid, time.time())
        self.kills.append(kill)
        self.workers[index] = await self._spawn(index)
        return kill

    async def restart_exited(self) -> list[int]:
        """Start again every worker that exited by itself (recorded in `exits`)."""
        again: list[int] = []
        for worker in list(self.workers):
            if worker.process.returncode is not None:
                self.exits.append((worker.index, worker.process.returncode))
                self.workers[worker.index] = await self._spawn(worker.index)
                again.append(worker.index)
        return again

    async def stop(self) -> None:
        for worker in self.workers:
            if worker.alive:
                worker.process.send_signal(signal.SIGTERM)
        for worker in self.workers:
            try:
                await asyncio.wait_for(worker.process.wait(), STOP_GRACE_S)
            except TimeoutError:
                worker.process.kill()
                await worker.process.wait()

    def logs(self) -> str:
        return "\n".join(w.log.read_text("utf-8", errors="replace")
                         for w in {w.log: w for w in self.workers}.values())
