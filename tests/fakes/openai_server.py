"""A local OpenAI-compatible HTTP server for tests, driven by a script.

The real `openai` client talks to it over HTTP. A handler receives each
`/v1/chat/completions` request body and returns the assistant's text, or a `Reply`
to control status codes, Retry-After and token counts. Every request is recorded. A request
with `stream: true` is answered with server-sent `chat.completion.chunk`s (a few characters
each, `Reply.chunk_delay_s` apart), usage in a last chunk when `stream_options.include_usage`
asks for it, then `data: [DONE]`; `streaming=False` makes the server refuse streaming (400).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web


@dataclass
class Reply:
    content: str = ""
    status: int = 200
    retry_after_s: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    delay_s: float = 0.0
    chunk_delay_s: float = 0.0


Handler = Callable[[dict[str, Any]], "Reply | str"]


def schema_name(body: dict[str, Any]) -> str:
    """The JSON-schema name the request asked for ('' for free text)."""
    fmt = body.get("response_format") or {}
    return str((fmt.get("json_schema") or {}).get("name", ""))


def last_user_text(body: dict[str, Any]) -> str:
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return str(users[-1]["content"]) if users else ""


def _count_tokens(text: str) -> int:
    return max(1, len(text) // 4)


CHUNK_CHARS = 6


class FakeOpenAIServer:
    def __init__(self, handler: Handler, streaming: bool = True) -> None:
        self.handler = handler
        self.streaming = streaming
        self.requests: list[dict[str, Any]] = []
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self.base_url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def requests_for(self, name: str) -> list[dict[str, Any]]:
        return [r for r in self.requests if schema_name(r) == name]

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        if body.get("stream") and not self.streaming:
            return self._error(Reply("streaming is not supported", status=400))
        result = self.handler(body)
        reply = result if isinstance(result, Reply) else Reply(content=result)
        if reply.delay_s:
            await asyncio.sleep(reply.delay_s)
        if reply.status != 200:
            return self._error(reply)
        prompt = sum(_count_tokens(str(m.get("content", ""))) for m in body["messages"])
        completion = self._completion(body, reply, prompt)
        if body.get("stream"):
            return await self._stream(request, body, reply, completion)
        return web.json_response(completion)

    @staticmethod
    async def _stream(request: web.Request, body: dict[str, Any], reply: Reply,
                      completion: dict[str, Any]) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        base = {k: completion[k] for k in ("id", "created", "model")}

        async def send(choices: list[dict[str, Any]], **extra: Any) -> None:
            chunk = {**base, "object": "chat.completion.chunk", "choices": choices, **extra}
            await resp.write(f"data: {json.dumps(chunk)}\n\n".encode())

        text = reply.content
        for start in range(0, len(text), CHUNK_CHARS):
            delta = {"content": text[start:start + CHUNK_CHARS],
                     **({"role": "assistant"} if start == 0 else {})}
            await send([{"index": 0, "delta": delta, "finish_reason": None}])
            if reply.chunk_delay_s:
                await asyncio.sleep(reply.chunk_delay_s)
        await send([{"index": 0, "delta": {}, "finish_reason": "stop"}])
        if (body.get("stream_options") or {}).get("include_usage"):
            await send([], usage=completion["usage"])
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    @staticmethod
    def _error(reply: Reply) -> web.Response:
        headers = {}
        if reply.retry_after_s is not None:
            headers["retry-after"] = str(reply.retry_after_s)
        payload = {"error": {"message": reply.content or "error", "type": "fake", "code": None}}
        return web.Response(
            status=reply.status, text=json.dumps(payload),
            content_type="application/json", headers=headers,
        )

    @staticmethod
    def _completion(body: dict[str, Any], reply: Reply, prompt: int) -> dict[str, Any]:
        p = reply.prompt_tokens if reply.prompt_tokens is not None else prompt
        c = reply.completion_tokens
        c = c if c is not None else _count_tokens(reply.content)
        return {
            "id": f"chatcmpl-{len(reply.content)}-{time.time_ns()}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [{
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": reply.content},
            }],
            "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c},
        }
