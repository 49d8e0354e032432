"""`redsearch up` as a child process, driven over the playground's HTTP API the way the page
drives it: say something, click a button, read the channel back. Its workers are the
processes `up` supervises."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from playground.fake_slack import BOT_USER_ID
from playground.server import DEFAULT_USERS

JSON = dict[str, Any]
ALICE = next(iter(DEFAULT_USERS))


@dataclass
class UpProcess:
    process: asyncio.subprocess.Process
    url: str
    session: aiohttp.ClientSession
    output: list[str] = field(default_factory=list)

    def worker_pids(self) -> list[int]:
        """The `redsearch worker` children of `up` that are alive now."""
        pid = self.process.pid
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return [int(c) for c in children if _is_worker(int(c))]

    async def say(self, text: str, thread_ts: str | None = None, user: str = ALICE) -> str:
        """`text` as the page sends it: "@RED" becomes the bot's mention."""
        text = text.replace("@RED", f"<@{BOT_USER_ID}>")
        body = {"user": user, "text": text, **({"thread_ts": thread_ts} if thread_ts else {})}
        data = await self._post("/ui/message", body)
        return str(data["ts"])

    async def click(self, message_ts: str, action_id: str, user: str = ALICE) -> None:
        await self._post("/ui/action", {"user": user, "message_ts": message_ts,
                                        "action_id": action_id})

    async def state(self) -> JSON:
        async with self.session.get(f"{self.url}/ui/state", params={"user": ALICE}) as resp:
            data: JSON = await resp.json()
            return data

    async def thread(self, ts: str) -> list[JSON]:
        """The bot's replies in the thread of `ts`, oldest first."""
        messages = (await self.state())["messages"]
        found = [m for m in messages if m.get("thread_ts") == ts and m["ts"] != ts
                 and m.get("bot_id")]
        return sorted(found, key=lambda m: float(m["ts"]))

    async def wait_for(self, ts: str, predicate: Callable[[list[JSON]], bool],
                       timeout_s: float, what: str) -> list[JSON]:
        deadline = asyncio.get_running_loop().time() + timeout_s
        while True:
            replies = await self.thread(ts)
            if predicate(replies):
                return replies
            if asyncio.get_running_loop().time() > deadline:
                tail = "\n".join(self.output[-40:])
                raise AssertionError(f"timed out after {timeout_s:g}s waiting for {what}; "
                                     f"thread: {[text_of(m)[:80] for m in replies]}\n{tail}")
            await asyncio.sleep(0.2)

    async def _post(self, path: str, body: JSON) -> JSON:
        async with self.session.post(f"{self.url}{path}", json=body) as resp:
            data: JSON = await resp.json()
        assert data.get("ok"), data
        return data


def _is_worker(pid: int) -> bool:
    with contextlib.suppress(OSError):
        return b"worker" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    return False


def text_of(message: JSON) -> str:
    """Everything a person reads in a message: its text and its blocks' texts."""
    parts = [str(message.get("text") or "")]
    for block in message.get("blocks") or []:
        text = block.get("text")
        if isinstance(text, dict):
            parts.append(str(text.get("text", "")))
        for element in block.get("elements") or []:
            if isinstance(element, dict) and isinstance(element.get("text"), str):
                parts.append(element["text"])
    return "\n".join(parts)


@asynccontextmanager
async def up_process(env: Mapping[str, str], port: int,
                     ready_timeout_s: float = 60.0) -> AsyncIterator[UpProcess]:
    """`redsearch up --port PORT` with `env`, until its workers are ready; SIGINT at the end
    (Ctrl-C), then the output is printed for the test report."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "redsearch.cli", "up", "--port", str(port), env=dict(env),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    up = UpProcess(process, f"http://127.0.0.1:{port}", aiohttp.ClientSession())
    reader = asyncio.create_task(_collect(process, up.output))
    try:
        await _until(lambda: any("worker ready" in line for line in up.output),
                     ready_timeout_s, "the worker to be ready", up)
        yield up
    finally:
        await up.session.close()
        if process.returncode is None:
            process.send_signal(signal.SIGINT)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), 30)
        if process.returncode is None:
            process.kill()
        await reader
        print("\n".join(up.output[-200:]))


async def _collect(process: asyncio.subprocess.Process, lines: list[str]) -> None:
    assert process.stderr is not None
    async for raw in process.stderr:
        lines.append(raw.decode("utf-8", "replace").rstrip())


async def _until(predicate: Callable[[], bool], timeout_s: float, what: str,
                 up: UpProcess) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not predicate():
        if up.process.returncode is not None or asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"no {what}: " + "\n".join(up.output[-40:]))
        await asyncio.sleep(0.1)
