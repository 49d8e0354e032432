"""A local OpenAI-compatible HTTP server for tests, driven by a script.

The real `openai` client talks to it over HTTP. A handler receives each
`/v1/chat/completions` request body and returns the assistant's text, or a `Reply`
to control status codes, Retry-After and token counts. Every request is recorded.
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


class FakeOpenAIServer:
    def __init__(self, handler: Handler) -> None:
        self.handler = handler
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

    async def _chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        result = self.handler(body)
        reply = result if isinstance(result, Reply) else Reply(content=result)
        if reply.delay_s:
            await asyncio.sleep(reply.delay_s)
        if reply.status != 200:
            return self._error(reply)
        prompt = sum(_count_tokens(str(m.get("content", ""))) for m in body["messages"])
        return web.json_response(self._completion(body, reply, prompt))

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
