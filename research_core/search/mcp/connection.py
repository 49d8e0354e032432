"""One MCP server's session, owned by this worker process.

The SDK's client is an async context manager whose transport runs in a task group: it must be
entered and left in one task. So each session lives in a task of its own (`_Holder`) that
enters the client and holds it until it is told to stop; calls from the runs go through it.
The session is started on first use and started again after it died (a crashed process: the
call fails with "Connection closed") or did not answer within the time cap (a hung server);
the old one is closed in the background, so a server that takes seconds to die never holds
a run up. Every failure is `McpFailed`, whose one line says why: it costs the call's hits,
never the run.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import httpx2
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import CallToolResult, ListToolsResult, ReadResourceResult, Tool
from pydantic import ValidationError

from research_core.settings.mcp import McpServer, McpSettings

T = TypeVar("T")
CLOSE_WAIT_S = 10.0  # closing a session: the SDK stops a hung process within ~6 s
# What a call to a server can fail with: the protocol's errors, a closed or broken
# transport, an answer that is not MCP, an HTTP failure, the time cap.
CALL_FAILURES = (MCPError, TimeoutError, ValidationError, OSError, httpx2.HTTPError,
                 anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream)


# Why a call failed, the `reason` of redsearch_search_failures_total: the server did not
# start (start), gave no answer in time (timeout), answered an error (error) or more than the
# size cap (too_large), the transport or the protocol failed (failed), or the server's tools
# do not fit its settings (config).
REASONS = ("start", "timeout", "error", "too_large", "failed", "config")


class McpFailed(Exception):
    """A call that costs its hits: the server did not start, answer in time, or answered an
    error. The message is the one line the run log and the worker log show; `gone`: the
    session's transport closed under the call (the server died); `reason`: one of REASONS."""

    def __init__(self, message: str, gone: bool = False, reason: str = "config") -> None:
        super().__init__(message)
        self.gone = gone
        self.reason = reason


class _Holder:
    """A task that enters the client, keeps it until `stop` is set, then leaves it."""

    def __init__(self, make: Callable[[], Client]) -> None:
        self.client: Client | None = None
        self.error: str = ""
        self.served = False  # the session answered a call
        self.ready = asyncio.Event()
        self.stop = asyncio.Event()
        self.task = asyncio.create_task(self._hold(make))

    async def _hold(self, make: Callable[[], Client]) -> None:
        try:
            async with make() as client:
                self.client = client
                self.ready.set()
                await self.stop.wait()
        except Exception as exc:  # a server that cannot start: said in one line, not raised
            self.error = one_line(exc)
        finally:
            self.client = None
            self.ready.set()


class McpConnection:
    """The session with `server`, started on first use and again after a failure."""

    def __init__(self, server: McpServer, limits: McpSettings) -> None:
        self.server = server
        self.limits = limits
        self.tools: dict[str, Tool] = {}
        self._holder: _Holder | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock: asyncio.Lock | None = None
        self._closing: set[asyncio.Task[None]] = set()
        self.starts = 0

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        return await self._call(lambda c: c.call_tool(name, arguments), f"tool {name!r}")

    async def read_resource(self, uri: str) -> ReadResourceResult:
        return await self._call(lambda c: c.read_resource(uri), "resources/read")

    async def _call(self, send: Callable[[Client], Awaitable[T]], what: str) -> T:
        """`send` on the session; a session found dead (the server exited since its last
        call) is started again and the call sent once more on the new one."""
        client = await self._client()
        served = self._holder is not None and self._holder.served
        try:
            return await self._within(client, send(client), what)
        except McpFailed as exc:
            if not (exc.gone and served):
                raise  # a session that never answered failed: no second try
        client = await self._client()
        return await self._within(client, send(client), what)

    async def ensure(self) -> dict[str, Tool]:
        """Start the session (if it is not running) and return the server's tools."""
        await self._client()
        return self.tools

    async def aclose(self) -> None:
        """Stop the session and wait (bounded) for the server to be gone."""
        self._retire()
        pending = [t for t in self._closing if not t.done()]
        if pending:
            await asyncio.wait(pending, timeout=CLOSE_WAIT_S)

    async def _within(self, client: Client, call: Awaitable[T], what: str) -> T:
        try:
            async with asyncio.timeout(self.limits.timeout_s):
                answer = await call
        except TimeoutError as exc:
            self._retire(client)
            raise McpFailed(f"{what} gave no answer within {self.limits.timeout_s:g}s; the "
                            "server is started again for the next call",
                            reason="timeout") from exc
        except CALL_FAILURES as exc:
            gone = not isinstance(exc, MCPError) or "closed" in str(exc).lower()
            if gone:
                self._retire(client)  # the transport is gone: start afresh next time
            raise McpFailed(f"{what} failed: {one_line(exc)}", gone, "failed") from exc
        if self._holder is not None and self._holder.client is client:
            self._holder.served = True
        return answer

    async def _client(self) -> Client:
        self._same_loop()
        assert self._lock is not None
        async with self._lock:
            holder = self._holder
            if holder is not None and holder.client is not None and not holder.stop.is_set():
                return holder.client
            return await self._start()

    async def _start(self) -> Client:
        self._retire()
        self.starts += 1
        holder = self._holder = _Holder(self._make)
        try:
            async with asyncio.timeout(self.limits.start_timeout_s):
                await holder.ready.wait()
                if holder.client is not None:
                    self.tools = {t.name: t for t in (await self._list_tools(holder.client))}
        except TimeoutError as exc:
            self._retire()
            raise McpFailed(f"did not start within {self.limits.start_timeout_s:g}s",
                            reason="start") from exc
        except CALL_FAILURES as exc:
            self._retire()
            raise McpFailed(f"tools/list failed: {one_line(exc)}", reason="start") from exc
        if holder.client is None:
            self._retire()
            raise McpFailed(f"could not start: {holder.error or 'the session ended'}",
                            reason="start")
        return holder.client

    @staticmethod
    async def _list_tools(client: Client) -> list[Tool]:
        listed: ListToolsResult = await client.list_tools()
        return list(listed.tools)

    def _make(self) -> Client:
        server = self.server
        if server.command:
            params = StdioServerParameters(command=server.command[0],
                                           args=list(server.command[1:]),
                                           env={k: str(v) for k, v in server.env.items()})
            return Client(params)
        http = create_mcp_http_client(headers={k: str(v) for k, v in server.headers.items()})
        return Client(_OwnedHttp(server.url, http))

    def _retire(self, client: Client | None = None) -> None:
        """Stop the current session (only if it is still `client`, when given); its task
        closes it in the background."""
        holder = self._holder
        if holder is None or (client is not None and holder.client is not client):
            return
        self._holder = None
        holder.stop.set()
        self._closing.add(holder.task)
        holder.task.add_done_callback(self._closing.discard)

    def _same_loop(self) -> None:
        """A session belongs to the event loop it was started in; another loop (a new test,
        a new `asyncio.run`) starts its own."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop, self._lock, self._holder = loop, asyncio.Lock(), None
            self._closing = set()


class _OwnedHttp(contextlib.AbstractAsyncContextManager[Any]):
    """The streamable HTTP transport with its own HTTP client, closed with it."""

    def __init__(self, url: str, http: httpx2.AsyncClient) -> None:
        self.url = url
        self.http = http
        self.stack = contextlib.AsyncExitStack()

    async def __aenter__(self) -> Any:
        await self.stack.enter_async_context(self.http)
        return await self.stack.enter_async_context(
            streamable_http_client(self.url, http_client=self.http))

    async def __aexit__(self, *exc: Any) -> None:
        await self.stack.aclose()


def one_line(exc: BaseException) -> str:
    """An exception as one short line: its type and first line (a group: its first leaf)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    said = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {said}" if said else type(exc).__name__
