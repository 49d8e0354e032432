"""The run log: every mechanism's decision as one line, kept and streamed to listeners."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
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


@dataclass
class RunLog:
    events: list[LogEvent] = field(default_factory=list)
    listeners: list[Listener] = field(default_factory=list)
    step: int = 0

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
