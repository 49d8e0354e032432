"""A model tier behind any OpenAI-compatible endpoint, through the official `openai` client.

The client itself retries 408/409/429/5xx and connection errors (honouring Retry-After)
up to `max_retries` times; what is still failing after that becomes `ModelUnavailable`.
`stream` asks for server-sent chunks (`stream=True`, usage in the last chunk) and hands each
piece of text on as it arrives; an endpoint that refuses streaming (HTTP 400/404/422) is asked
again without it, once per tier.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk, ChatCompletionMessageParam
from openai.types.chat.completion_create_params import ResponseFormat

from research_core.errors import ModelUnavailable
from research_core.protocols import Completion, Message
from research_core.settings import TierSettings

log = logging.getLogger(__name__)

UNUSED_KEY = "unused"
_NO_STREAMING = (400, 404, 422)  # the endpoint does not take stream=True

# Failures the caller cannot fix by retrying the same request with other content.
_UNAVAILABLE: tuple[type[openai.OpenAIError], ...] = (
    openai.APIConnectionError,  # includes APITimeoutError
    openai.AuthenticationError,
    openai.PermissionDeniedError,
    openai.RateLimitError,
    openai.NotFoundError,
    openai.InternalServerError,
    openai.APIStatusError,  # any other HTTP error: 400 (e.g. no json_schema support), 422...
    openai.APIResponseValidationError,
)


def endpoint_host(base_url: str | None) -> str:
    """host[:port] of a base URL, without any user:password part."""
    if not base_url:
        return ""
    parts = urlsplit(base_url)
    host = parts.hostname or base_url
    return f"{host}:{parts.port}" if parts.port else host


class OpenAITier:
    """`ModelTier` over `openai.AsyncOpenAI`. Call `aclose()` when done with it."""

    def __init__(self, settings: TierSettings, *, name: str = "model") -> None:
        if not settings.base_url:
            raise ValueError("OpenAITier needs TierSettings.base_url")
        self._name = name
        self._model = settings.model
        self._host = endpoint_host(settings.base_url)
        self._key = str(settings.api_key)
        self._streams = True
        self._client = openai.AsyncOpenAI(
            base_url=settings.base_url,
            api_key=self._key or UNUSED_KEY,
            timeout=settings.timeout_s,
            max_retries=settings.max_retries,
        )

    @property
    def model(self) -> str:
        return self._model

    @property
    def host(self) -> str:
        return self._host

    def __repr__(self) -> str:
        return f"OpenAITier(name={self._name!r}, model={self._model!r}, host={self._host!r})"

    async def aclose(self) -> None:
        await self._client.close()

    async def complete(
        self,
        messages: list[Message],
        *,
        schema: dict[str, Any] | None,
        schema_name: str,
        max_tokens: int,
    ) -> Completion:
        try:
            response = await self._create(messages, schema, schema_name, max_tokens)
        except _UNAVAILABLE as exc:
            raise ModelUnavailable(self._unavailable_message(exc)) from exc
        return self._to_completion(response)

    async def stream(
        self,
        messages: list[Message],
        *,
        schema: dict[str, Any] | None,
        schema_name: str,
        max_tokens: int,
        on_text: Callable[[str], Awaitable[None]],
    ) -> Completion:
        """The completion, its text handed to `on_text` piece by piece as it is generated."""
        if not self._streams:
            return await self.complete(messages, schema=schema, schema_name=schema_name,
                                       max_tokens=max_tokens)
        try:
            return await self._streamed(messages, schema, schema_name, max_tokens, on_text)
        except openai.APIStatusError as exc:
            if exc.status_code not in _NO_STREAMING:
                raise ModelUnavailable(self._unavailable_message(exc)) from exc
            log.warning("%s: the endpoint refused streaming (HTTP %d); asking without it from "
                        "now on", self, exc.status_code)
            self._streams = False
        except _UNAVAILABLE as exc:
            raise ModelUnavailable(self._unavailable_message(exc)) from exc
        return await self.complete(messages, schema=schema, schema_name=schema_name,
                                   max_tokens=max_tokens)

    async def _streamed(
        self,
        messages: list[Message],
        schema: dict[str, Any] | None,
        schema_name: str,
        max_tokens: int,
        on_text: Callable[[str], Awaitable[None]],
    ) -> Completion:
        options: dict[str, Any] = {} if schema is None else {
            "response_format": _json_schema_format(schema, schema_name)}
        chunks = await self._client.chat.completions.create(
            model=self._model, messages=[_message_param(m) for m in messages],
            max_tokens=max_tokens, temperature=0, stream=True,
            stream_options={"include_usage": True}, **options)
        pieces: list[str] = []
        last: ChatCompletionChunk | None = None
        async for chunk in chunks:
            last = chunk if chunk.usage is not None or last is None else last
            text = "".join(c.delta.content or "" for c in chunk.choices)
            if text:
                pieces.append(text)
                await on_text(text)
        usage = last.usage if last is not None else None
        return Completion(text="".join(pieces),
                          prompt_tokens=usage.prompt_tokens if usage else 0,
                          completion_tokens=usage.completion_tokens if usage else 0,
                          model=(last.model if last is not None else "") or self._model)

    async def _create(
        self,
        messages: list[Message],
        schema: dict[str, Any] | None,
        schema_name: str,
        max_tokens: int,
    ) -> ChatCompletion:
        params = [_message_param(m) for m in messages]
        if schema is None:
            return await self._client.chat.completions.create(
                model=self._model, messages=params, max_tokens=max_tokens, temperature=0
            )
        return await self._client.chat.completions.create(
            model=self._model,
            messages=params,
            max_tokens=max_tokens,
            temperature=0,
            response_format=_json_schema_format(schema, schema_name),
        )

    def _to_completion(self, response: ChatCompletion) -> Completion:
        text = (response.choices[0].message.content or "") if response.choices else ""
        usage = response.usage
        return Completion(
            text=text,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            model=response.model or self._model,
        )

    def _unavailable_message(self, exc: openai.OpenAIError) -> str:
        """One line naming tier, model and host; the API key is never part of it."""
        reason = " ".join(str(exc).split())
        if self._key:
            reason = reason.replace(self._key, "***")
        reason = reason[:200] or type(exc).__name__
        return (
            f"{self._name} model {self._model!r} at {self._host} is unavailable: "
            f"{type(exc).__name__}: {reason}"
        )


def _message_param(message: Message) -> ChatCompletionMessageParam:
    if message.role == "system":
        return {"role": "system", "content": message.content}
    if message.role == "assistant":
        return {"role": "assistant", "content": message.content}
    return {"role": "user", "content": message.content}


def _json_schema_format(schema: dict[str, Any], name: str) -> ResponseFormat:
    return {
        "type": "json_schema",
        "json_schema": {"name": name, "schema": schema, "strict": False},
    }
