"""What every bad-input test asserts, whatever the entry point: one clean error (a single
`redsearch: error:` line, or a 4xx), no traceback in any output or log, no secret anywhere,
and an answer within a bound."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ERROR_PREFIX = "redsearch: error:"
# Planted in settings and URLs by the tests; none may show in any output or log.
SECRETS = ("hunter2", "p@ss/w#rd", "sk-bad-input-key", "xoxb-bad-input-token",
           "xapp-bad-input", "tok-in-query", "s3cr3t-signing")


def assert_clean(*outputs: str) -> None:
    """No traceback and no planted secret in any of `outputs`."""
    joined = "\n".join(outputs)
    assert "Traceback" not in joined, joined[-3000:]
    for secret in SECRETS:
        assert secret not in joined, f"{secret!r} leaked: {joined[-3000:]}"


# What `redsearch research` writes to stderr before the run starts (redsearch/research.py).
HEADER_LINE = re.compile(r"corpus: \d+ documents from .+|search: .+|model \w+: .+"
                         r"|models ready in [\d.]+s")


def one_error_line(stderr: str, stdout: str = "", log: str = "") -> str:
    """The single `redsearch: error:` line that ends stderr, after at most the CLI's own
    header lines; no traceback and no secret anywhere."""
    assert_clean(stderr, stdout, log)
    lines = stderr.strip().splitlines()
    assert lines and lines[-1].startswith(ERROR_PREFIX), stderr
    assert all(HEADER_LINE.fullmatch(line) for line in lines[:-1]), stderr
    return lines[-1]


@dataclass(frozen=True)
class Ran:
    code: int
    stdout: str
    stderr: str
    seconds: float
    log: str = ""


def clean_env(data_dir: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The CLI's environment: the caller's RED_*, Slack, Redis and database settings removed,
    data under `data_dir`, every tier on a closed local port (nothing loads a model)."""
    keep = {k: v for k, v in os.environ.items()
            if not k.startswith(("RED_", "SLACK_")) and k not in ("DATABASE_URL", "REDIS_URL")}
    keep["RED_DATA_DIR"] = str(data_dir)
    for tier in ("PLANNER", "EXECUTOR", "REPORTER"):
        keep[f"RED_{tier}_BASE_URL"] = "http://127.0.0.1:9/v1"
        keep[f"RED_{tier}_MODEL"] = f"{tier.lower()}-script"
        keep[f"RED_{tier}_MAX_RETRIES"] = "0"
    return {**keep, **(extra or {})}


def run_cli(args: Sequence[str | bytes], env: Mapping[str, str],
            timeout_s: float = 30.0) -> Ran:
    """`python -m redsearch.cli` as a subprocess (arguments may be raw bytes)."""
    started = time.monotonic()
    done = subprocess.run([sys.executable.encode(), b"-m", b"redsearch.cli",
                           *(a if isinstance(a, bytes) else a.encode() for a in args)],
                          env=dict(env), capture_output=True, timeout=timeout_s, check=False)
    return Ran(done.returncode, done.stdout.decode("utf-8", "replace"),
               done.stderr.decode("utf-8", "replace"), time.monotonic() - started)


@contextlib.contextmanager
def within(seconds: float, what: str) -> Iterator[None]:
    """The block must finish within `seconds` (a hang fails the per-test timeout first)."""
    started = time.monotonic()
    yield
    took = time.monotonic() - started
    assert took < seconds, f"{what} took {took:.1f}s (bound {seconds:g}s)"
