"""The test MCP server (tests/mcp_wiki_server.py) as the settings name it: over stdio, or
started over streamable HTTP on a free port."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from contract.redis_server import free_port
from research_core.settings.mcp import McpServer, McpSettings

WIKI = Path(__file__).with_name("mcp_wiki_server.py")
QUESTION = "How often is the deck oven descaled?"


def wiki(mode: str = "normal", name: str = "wiki", **keys: object) -> McpServer:
    command = (sys.executable, str(WIKI), "--mode", mode)
    return McpServer(name=name, command=command, **keys)  # type: ignore[arg-type]


def limits(timeout_s: float = 10.0, **caps: object) -> McpSettings:
    return McpSettings(timeout_s=timeout_s, **caps)  # type: ignore[arg-type]


@contextlib.asynccontextmanager
async def http_wiki(mode: str = "normal") -> AsyncIterator[str]:
    """The wiki served over streamable HTTP; yields its URL."""
    port = free_port()
    process = subprocess.Popen([sys.executable, str(WIKI), "--http", str(port), "--mode", mode],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        await _listening(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def _listening(port: int, process: subprocess.Popen[bytes], timeout_s: float = 30) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while asyncio.get_running_loop().time() < deadline and process.poll() is None:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.1)
            continue
        writer.close()
        await writer.wait_closed()
        return
    raise AssertionError(f"the HTTP wiki did not listen on {port} (exit {process.poll()})")
