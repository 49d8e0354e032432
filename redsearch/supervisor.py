"""Worker processes under supervision, for `redsearch up`.

Model code runs in the workers, and a native crash there (a segfault in llama.cpp) ends the
process it happens in. So `redsearch up` keeps the bot and the playground in its own process
and runs each worker as a child: `redsearch worker`, restarted with back-off when it dies
(one line per restart, also shown on the playground page). The interrupted run resumes on the
restarted worker through its lease and the reconciler, editing the messages it had posted.

A worker that cannot start at all (exit status 2 on its first start: a bad setting, a model
that does not load) is not restarted: `redsearch up` stops and shows its error.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from prometheus_client import Counter

from research_core.errors import WorkerFailed

FIRST_DELAY_S = 1.0
MAX_DELAY_S = 30.0
STABLE_AFTER_S = 60.0  # a worker up this long starts the back-off afresh when it dies
STOP_GRACE_S = 20.0
SETTINGS_ERROR = 2

WORKER_RESTARTS = Counter(
    "redsearch_worker_restarts_total",
    "Worker processes `redsearch up` restarted after they died, by how they ended (a signal "
    "such as SIGSEGV or SIGKILL, or exit_<status>); served on the bot's /metrics.", ["exit"])


def describe_exit(returncode: int) -> str:
    """"signal SIGSEGV" or "exit status 1"."""
    if returncode < 0:
        with contextlib.suppress(ValueError):
            return f"signal {signal.Signals(-returncode).name}"
        return f"signal {-returncode}"
    return f"exit status {returncode}"


def exit_label(returncode: int) -> str:
    """"SIGSEGV" or "exit_1": how a process ended, for a metric's label."""
    if returncode < 0:
        with contextlib.suppress(ValueError):
            return signal.Signals(-returncode).name
        return f"signal_{-returncode}"
    return f"exit_{returncode}"


def worker_command() -> list[str]:
    return [sys.executable, "-m", "redsearch.cli", "worker"]


@dataclass
class Supervisor:
    """Runs one worker process (`command`, `env`) until `stop()`, restarting it when it dies.

    `notify` gets one line per restart. `failed` is set when the worker could not start."""

    name: str
    command: list[str]
    env: Mapping[str, str]
    notify: Callable[[str], None]
    restarts: int = 0
    process: asyncio.subprocess.Process | None = None
    failed: asyncio.Future[None] | None = None
    _task: asyncio.Task[None] | None = None
    _stopping: bool = False

    def start(self) -> None:
        self.failed = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._supervise())

    async def _supervise(self) -> None:
        delay = FIRST_DELAY_S
        while not self._stopping:
            returncode, up_s = await self._run_once()
            if self._stopping:
                return
            if returncode == SETTINGS_ERROR and self.restarts == 0 and up_s < STABLE_AFTER_S:
                self._fail(f"{self.name} could not start ({describe_exit(returncode)}); "
                           "its error is above")
                return
            delay = FIRST_DELAY_S if up_s >= STABLE_AFTER_S else delay
            self.restarts += 1
            WORKER_RESTARTS.labels(exit_label(returncode)).inc()
            self.notify(f"{self.name} exited ({describe_exit(returncode)}) after {up_s:.0f} s; "
                        f"restarting in {delay:g} s (restart {self.restarts}); its runs resume")
            await asyncio.sleep(delay)
            delay = min(delay * 2, MAX_DELAY_S)

    async def _run_once(self) -> tuple[int, float]:
        started = time.monotonic()
        # A session of its own: Ctrl-C reaches `up`, which stops the workers in order.
        self.process = await asyncio.create_subprocess_exec(
            *self.command, env=dict(self.env), stdin=asyncio.subprocess.DEVNULL,
            start_new_session=True)
        returncode = await self.process.wait()
        return returncode, time.monotonic() - started

    def _fail(self, why: str) -> None:
        if self.failed is not None and not self.failed.done():
            self.failed.set_exception(WorkerFailed(why))

    @property
    def pid(self) -> int | None:
        running = self.process is not None and self.process.returncode is None
        return self.process.pid if running and self.process is not None else None

    async def stop(self) -> None:
        """SIGTERM (the worker hands its runs over), SIGKILL after a grace period."""
        self._stopping = True
        process = self.process
        if process is not None and process.returncode is None:
            process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), STOP_GRACE_S)
            except TimeoutError:
                process.kill()
                await process.wait()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self.failed is not None and not self.failed.done():
            self.failed.cancel()
