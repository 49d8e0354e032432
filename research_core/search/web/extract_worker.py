"""The extraction helper process: `python -m research_core.search.web.extract_worker`.

It reads pages from stdin and writes their text to stdout, one at a time, until stdin closes.
Each message is a frame: a 4-byte big-endian length, then that many bytes. Once started (its
parsers imported) it writes one frame `ready`. A request is two
frames (a JSON header with the page's url, content type, charset, truncated and received; then
the body bytes), an answer one JSON frame: {"ok": true, "title", "text", "published",
"truncated"} or {"ok": false, "error"}. The answer is JSON, not pickle, so that nothing the
parent reads from this process (which parses hostile pages) can run code in it.

The parent (`research_core.search.web.extract_process`) kills this process when a page runs past its
time cap. Its address space is capped at start, so a decompression bomb ends here as a
MemoryError. Anything a library prints goes to stderr, never into the answer stream.
"""

from __future__ import annotations

import json
import os
import resource
import struct
import sys
from typing import IO, Any

from research_core.search.web.extract import FetchedPage, PageText, Unreadable, extract

LENGTH = struct.Struct(">I")
READY = b"ready"
MEMORY_HEADROOM_BYTES = 1 << 30  # what a page may allocate beyond the parsers' own memory


def read_frame(stream: IO[bytes]) -> bytes | None:
    """One frame, or None at the end of the stream."""
    head = stream.read(LENGTH.size)
    if len(head) < LENGTH.size:
        return None
    (size,) = LENGTH.unpack(head)
    data = stream.read(size)
    return data if len(data) == size else None


def frame(data: bytes) -> bytes:
    return LENGTH.pack(len(data)) + data


def limit_memory(headroom: int) -> None:
    """Cap the address space at the current size plus `headroom` (Linux; else no cap)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            size_kb = next(int(line.split()[1]) for line in status if line.startswith("VmSize:"))
        limit = size_kb * 1024 + headroom
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (OSError, StopIteration, ValueError, IndexError):
        return


def answer(header: bytes, body: bytes) -> dict[str, Any]:
    meta = json.loads(header)
    page = FetchedPage(str(meta["url"]), str(meta["content_type"]), meta.get("charset"), body,
                       bool(meta["truncated"]), int(meta["received"]))
    try:
        text = extract(page)
    except Unreadable as exc:
        return {"ok": False, "error": str(exc)}
    except Exception as exc:  # a parser failing on hostile content: that page is unreadable
        return {"ok": False, "error": f"{page.url}: its {page.content_type} text could not be "
                                      f"extracted ({type(exc).__name__})"}
    return page_json(text)


def page_json(page: PageText) -> dict[str, Any]:
    return {"ok": True, "title": page.title, "text": page.text, "truncated": page.truncated,
            "published": page.published.isoformat() if page.published else None}


def serve(requests: IO[bytes], answers: IO[bytes]) -> None:
    while (header := read_frame(requests)) is not None:
        body = read_frame(requests)
        if body is None:
            return
        answers.write(frame(json.dumps(answer(header, body)).encode("utf-8")))
        answers.flush()


def main() -> None:
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints cannot corrupt answers
    limit_memory(MEMORY_HEADROOM_BYTES)
    answers.write(frame(READY))  # imports done: from now on only pages take time
    answers.flush()
    serve(sys.stdin.buffer, answers)


if __name__ == "__main__":
    main()
