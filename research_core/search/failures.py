"""Sources that did not answer a query: never cached as an empty answer, counted, and told.

A backend whose failure costs only its own hits (an MCP server that cannot start, every web
service of a chain beside the corpus, a member of a combined search) answers with fewer hits
than it would have; that answer looks like "nothing found", so it must not be cached — the
next query asks the source again. The backend says so with `did_not_answer` where the failure
happens; `SearchTool` watches every query it sends (`watching`) and caches an answer only when
no source went silent. Each silence is a run-log line that names the source (`source` in its
data), and the run's progress tells each silent source once (`Announcer`); `count` adds one to
`redsearch_search_failures_total` for the backend and the reason.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from research_core import metrics
from research_core.runlog import LogEvent, note

SILENT_KEY = "silent_source"  # the data key of a run-log event that tells of a silent source


@dataclass(frozen=True)
class Silence:
    """One source that gave no answer to one query, and why (a small fixed set of reasons)."""

    source: str
    reason: str


_WATCHED: ContextVar[list[Silence] | None] = ContextVar("search_silences", default=None)


@contextlib.contextmanager
def watching() -> Iterator[list[Silence]]:
    """The silences of the search run inside (this task and the tasks it starts)."""
    found: list[Silence] = []
    token = _WATCHED.set(found)
    try:
        yield found
    finally:
        _WATCHED.reset(token)


def count(backend: str, reason: str) -> None:
    """One failed query of `backend` in redsearch_search_failures_total."""
    metrics.SEARCH_FAILURES.labels(metrics.backend_label(backend), reason).inc()


def did_not_answer(source: str, reason: str, kind: str, message: str) -> None:
    """`source` gave no answer to the query being searched: the answer is incomplete (not
    cached), and the run log says so in a `kind` line (`message`)."""
    label = metrics.backend_label(source)
    found = _WATCHED.get()
    if found is not None:
        found.append(Silence(label, reason))
    note(kind, message, **{SILENT_KEY: label, "reason": reason})


def silent_source(event: LogEvent) -> tuple[str, str] | None:
    """The source a run-log event tells of as silent, and why; None for any other event."""
    source = event.data.get(SILENT_KEY)
    if not isinstance(source, str) or not source:
        return None
    return source, str(event.data.get("reason") or "failed")
