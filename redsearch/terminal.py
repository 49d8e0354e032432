"""What the commands print beside their results: lines on stderr, and the one-line error."""

from __future__ import annotations

import sys

from research_core.errors import RunError


def say(text: str) -> None:
    """A progress or status line on stderr (stdout carries the results)."""
    print(text, file=sys.stderr, flush=True)


def report_error(program: str, exc: RunError) -> int:
    """A failure the user can act on: one line, no traceback; the exit status 2."""
    say(f"{program}: error: {exc}")
    return 2


def report_interrupt(program: str) -> int:
    say(f"{program}: interrupted")
    return 130
