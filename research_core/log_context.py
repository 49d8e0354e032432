"""What a log line is about: the run, the workspace (team) and the channel, where known.

The bot binds the team and channel of the Slack request it handles, a worker the run id, team
and channel of its job; every log line written inside (in that task and the tasks it starts)
carries them, and the JSON log format writes them as fields (RED_LOG_FORMAT=json,
docs/operations.md). Context variables: concurrent jobs of one worker never see each
other's.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

FIELDS = ("run_id", "team", "channel")
_CURRENT: ContextVar[dict[str, str] | None] = ContextVar("log_context", default=None)


@contextmanager
def bound(**fields: str | None) -> Iterator[None]:
    """The code run inside logs with these fields (empty values are left out; names outside
    FIELDS are refused: a bug)."""
    unknown = set(fields) - set(FIELDS)
    if unknown:
        raise ValueError(f"unknown log context fields {sorted(unknown)}")
    merged = {**current(), **{k: v for k, v in fields.items() if v}}
    token = _CURRENT.set(merged)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current() -> dict[str, str]:
    """The fields bound where this runs (a copy)."""
    return dict(_CURRENT.get() or {})
