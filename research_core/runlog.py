"""The run log: every mechanism's decision as one line, kept and streamed to listeners."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class LogEvent:
    seq: int
    step: int
    kind: str
    message: str
    data: dict[str, Any]
    at: dt.datetime

    def line(self) -> str:
        return f"[step {self.step:>2}] {self.kind:<10} {self.message}"


Listener = Callable[[LogEvent], None]
DoingListener = Callable[[str], Awaitable[None]]


@dataclass
class RunLog:
    """The events of a run, and what the run is doing right now (`doing`: not an event, not
    saved; a worker records it so that a crash can be reported with the step it hit)."""

    events: list[LogEvent] = field(default_factory=list)
    listeners: list[Listener] = field(default_factory=list)
    step: int = 0
    doing_listeners: list[DoingListener] = field(default_factory=list)

    async def doing(self, what: str) -> None:
        """The run starts `what` (e.g. "executor/followup"); tells the doing listeners and
        waits for them, so that what they record is there before a crash in `what` can be."""
        for listener in self.doing_listeners:
            await listener(f"step {self.step}: {what}")

    def emit(self, kind: str, message: str, **data: Any) -> LogEvent:
        event = LogEvent(
            seq=len(self.events) + 1, step=self.step, kind=kind, message=message,
            data=data, at=dt.datetime.now(dt.UTC),
        )
        self.events.append(event)
        for listener in self.listeners:
            listener(event)
        return event

    def of_kind(self, kind: str) -> list[LogEvent]:
        return [e for e in self.events if e.kind == kind]


_CURRENT: ContextVar[RunLog | None] = ContextVar("current_run_log", default=None)
_logger = logging.getLogger("research_core")


@contextmanager
def bound(log: RunLog) -> Iterator[None]:
    """Makes `log` the run log that `note` writes to, for the code run inside (this task and
    the tasks it starts): components built before the run, such as search backends, reach the
    run log without holding it."""
    token = _CURRENT.set(log)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def note(kind: str, message: str, **data: Any) -> None:
    """An event for the current run's log (see `bound`), also sent to `logging`."""
    _logger.info("%s: %s", kind, message)
    log = _CURRENT.get()
    if log is not None:
        log.emit(kind, message, **data)
