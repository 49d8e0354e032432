"""Page text extraction in helper processes that are killed when a page runs past its time.

A thread cannot be stopped, and a parser stuck in a hostile page holds the GIL, starving the
worker's heartbeats; a process can be killed. Pages are handed to a few long-lived helper
processes (`research_core.search.web.extract_worker`, a fresh interpreter started with exec: never a
fork of a worker that holds a loaded model; about half a second to start, paid once per helper
and again only after a kill). A helper that does not answer within the time cap is killed and
replaced by the next page that needs one. Whatever goes wrong (a parser's exception, a crash,
the cap) comes back as `Unreadable`: a hostile page costs that page, never the run.

The helpers belong to the process, not to a reader or an event loop: threads drive them, so
readers in any loop share them, and they are stopped when the process exits.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import datetime as dt
import json
import os
import select
import subprocess
import sys
import threading
import time
from typing import Any

from research_core.search.web.extract import FetchedPage, PageText, Unreadable
from research_core.search.web.extract_worker import LENGTH, READY, frame

HELPERS = 2  # pages extracted at once per process
START_S = 30.0  # a helper's start-up (imports), not counted in any page's time cap
POLL_S = 0.05
STOP_WAIT_S = 5.0
READ_CHUNK = 1 << 16


class _Stopped(Exception):
    """The helper did not answer (time cap, cancellation, death); it must be killed."""


class Helper:
    """One helper process and the framed pipe to it."""

    def __init__(self) -> None:
        # The parent's import path, so that the helper imports the same research_core.
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self.process = subprocess.Popen(  # stdin/stdout are the protocol; stderr is dropped
            [sys.executable, "-m", "research_core.search.web.extract_worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=env, start_new_session=True)

    def ask(self, page: FetchedPage, deadline: float, cancelled: threading.Event) -> Any:
        """Send the page, wait for the answer until `deadline` (monotonic) or cancellation."""
        assert self.process.stdin is not None
        header = {"url": page.url, "content_type": page.content_type, "charset": page.charset,
                  "truncated": page.truncated, "received": page.received}
        try:
            self.process.stdin.write(frame(json.dumps(header).encode()) + frame(page.body))
            self.process.stdin.flush()
        except OSError as exc:  # it died between pages
            raise _Stopped("the extraction process is gone") from exc
        return json.loads(self.read_frame(deadline, cancelled))

    def wait_ready(self, cancelled: threading.Event) -> None:
        if self.read_frame(time.monotonic() + START_S, cancelled) != READY:
            raise _Stopped("the extraction process did not start")

    def read_frame(self, deadline: float, cancelled: threading.Event) -> bytes:
        size = LENGTH.unpack(self._read(LENGTH.size, deadline, cancelled))[0]
        return self._read(size, deadline, cancelled)

    def _read(self, size: int, deadline: float, cancelled: threading.Event) -> bytes:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        data = b""
        while len(data) < size:
            if cancelled.is_set():
                raise _Stopped("cancelled")
            left = deadline - time.monotonic()
            if left <= 0:
                raise _Stopped("time cap")
            ready, _, _ = select.select([fd], [], [], min(left, POLL_S))
            if ready:
                chunk = os.read(fd, min(READ_CHUNK, size - len(data)))
                if not chunk:
                    raise _Stopped(f"the extraction process died (exit code "
                                   f"{self.process.poll()})")
                data += chunk
        return data

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(STOP_WAIT_S)
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


class HelperPool:
    """At most `size` helpers; idle ones are reused, failed ones stopped."""

    def __init__(self, size: int = HELPERS) -> None:
        self._slots = threading.BoundedSemaphore(size)
        self._idle: list[Helper] = []
        self._lock = threading.Lock()

    def extract(self, page: FetchedPage, timeout_s: float,
                cancelled: threading.Event) -> Any:
        """The helper's JSON answer for `page` (blocking: run it in a thread)."""
        while not self._slots.acquire(timeout=POLL_S):
            if cancelled.is_set():
                return {"ok": False, "error": f"{page.url}: cancelled"}
        try:
            return self._with_helper(page, timeout_s, cancelled)
        finally:
            self._slots.release()

    def _with_helper(self, page: FetchedPage, timeout_s: float,
                     cancelled: threading.Event) -> Any:
        with self._lock:
            helper = self._idle.pop() if self._idle else None
        try:
            fresh = None if helper else Helper()
        except OSError as exc:  # out of processes or memory: this page, not the run
            return {"ok": False, "error": f"{page.url}: no extraction process "
                                          f"({exc.strerror or exc})"}
        helper = helper or fresh
        assert helper is not None
        try:
            if fresh is not None:
                fresh.wait_ready(cancelled)
            found = helper.ask(page, time.monotonic() + timeout_s, cancelled)
        except (_Stopped, ValueError) as exc:  # ValueError: not JSON (a broken helper)
            helper.stop()
            why = (f"text extraction took longer than {timeout_s:.1f}s and was stopped"
                   if str(exc) == "time cap" else str(exc))
            return {"ok": False, "error": f"{page.url}: {why}"}
        with self._lock:
            self._idle.append(helper)
        return found

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for helper in idle:
            helper.stop()


POOL = HelperPool()
atexit.register(POOL.close)


def _page_text(page: FetchedPage, found: Any) -> PageText:
    if not isinstance(found, dict) or found.get("ok") is not True:
        error = found.get("error") if isinstance(found, dict) else None
        raise Unreadable(str(error or f"{page.url}: no answer from the extraction process"))
    published = found.get("published")
    try:
        date = dt.date.fromisoformat(published) if isinstance(published, str) else None
    except ValueError:
        date = None
    return PageText(page.url, str(found.get("title") or ""), str(found.get("text") or ""),
                    date, bool(found.get("truncated")))


async def extract_in_process(page: FetchedPage, timeout_s: float,
                             pool: HelperPool = POOL) -> PageText:
    """The page's text from a helper within `timeout_s` (a helper's start-up aside);
    `Unreadable` for anything else. Cancelling the caller stops the helper within POLL_S."""
    if timeout_s <= 0:
        raise Unreadable(f"{page.url}: no time left to extract its text")
    cancelled = threading.Event()
    try:
        found = await asyncio.to_thread(pool.extract, page, timeout_s, cancelled)
    except BaseException:
        cancelled.set()
        raise
    return _page_text(page, found)
