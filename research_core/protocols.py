"""The seams of the engine: small Protocols for the outside world and the values they exchange.

`research_core` talks to models, search services, channels and storage only through these.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

Role = Literal["system", "user", "assistant"]
TierName = Literal["planner", "executor", "reporter"]


@dataclass(frozen=True)
class Message:
    role: Role
    content: str


@dataclass(frozen=True)
class Completion:
    """What one model call returned, with the token counts the provider reported."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    model: str


class ModelTier(Protocol):
    """One model behind one tier. `schema` asks for JSON matching a JSON schema."""

    @property
    def model(self) -> str: ...

    async def complete(
        self,
        messages: list[Message],
        *,
        schema: dict[str, Any] | None,
        schema_name: str,
        max_tokens: int,
    ) -> Completion: ...


@dataclass(frozen=True)
class TimeRange:
    """Inclusive publish-date range; either end may be open."""

    since: dt.date | None = None
    until: dt.date | None = None

    def key(self) -> str:
        return f"{self.since or ''}..{self.until or ''}"


@dataclass(frozen=True)
class SearchHit:
    """One search result in the engine's common shape."""

    source_id: str
    title: str
    snippet: str
    url: str
    published: dt.date | None
    source_type: str
    publisher: str = ""
    lang: str = ""


@dataclass(frozen=True)
class SearchRequest:
    query: str
    time_range: TimeRange = field(default_factory=TimeRange)
    lang: str | None = None
    limit: int = 8


class SearchBackend(Protocol):
    """A search service. It applies the time range itself (never filtered afterwards)."""

    @property
    def name(self) -> str: ...

    async def search(self, request: SearchRequest) -> list[SearchHit]: ...

    async def read_body(self, source_id: str) -> str | None:
        """Full text of a result, or None when the backend cannot read it."""
        ...


class RateLimiter(Protocol):
    """Paces requests per key (a search backend); waits until one more request is allowed."""

    async def acquire(self, key: str) -> None: ...

class Publisher(Protocol):
    """Where a run speaks to people: short progress notes, and sourced answer parts.

    `answer_part` returns the id the channel gave the message (a Slack ts), if any;
    `replaces` is the id (or key) of the version a revision replaces, `reason` why; `key` is
    the publication's stable key (run/part/version), which a channel that can store it keeps
    with the message so that a resumed run can find what it already sent.
    """

    async def progress(self, run_id: str, text: str) -> None: ...

    async def answer_part(
        self, run_id: str, part_key: str, text: str, sources: list[str],
        replaces: str | None = None, reason: str = "", key: str = "",
    ) -> str | None: ...


class PartStream(Protocol):
    """An answer part shown while a model writes it. `write` adds text as the model writes it;
    `end` says the model stopped; `discard` says the text written is not the answer (a retry,
    a fallback or a second attempt may write again). The part itself is published afterwards
    through `Publisher.answer_part` with the publication key the stream was opened for, and
    replaces what was streamed."""

    async def write(self, text: str) -> None: ...

    async def end(self) -> None: ...

    async def discard(self) -> None: ...


@runtime_checkable
class StreamsParts(Protocol):
    """A publisher that can show an answer part while it is written (`key`: the publication
    key its message will carry)."""

    def stream_part(self, run_id: str, part_key: str, key: str) -> PartStream: ...


@runtime_checkable
class StreamingTier(Protocol):
    """A model tier that can hand its text over as it is generated (`on_text` per piece)."""

    async def stream(
        self,
        messages: list[Message],
        *,
        schema: dict[str, Any] | None,
        schema_name: str,
        max_tokens: int,
        on_text: Callable[[str], Awaitable[None]],
    ) -> Completion: ...


class Similarity(Protocol):
    """Semantic similarity between texts, 0..1 (embeddings, possibly blended with overlap)."""

    async def matrix(self, rows: list[str], cols: list[str]) -> list[list[float]]:
        """similarity[i][j] of rows[i] and cols[j]."""
        ...


@dataclass(frozen=True)
class Steer:
    """A person's message to a running research ("skip the UK, focus on prices"): who wrote
    it (a channel's user id), what, and where (the message's id in the channel)."""

    who: str
    text: str
    ts: str = ""


class SteerSource(Protocol):
    """The steers written to a run, oldest first, kept by the channel (Slack: Redis).
    `after(read)`: those after the first `read` (the run keeps how many it read); `tell`: the
    run read `steer` and says to its writer what it changed; `close(read)`: no step is left,
    so steering ends: the steers after the first `read`, which no step reads (the channel
    answers them as follow-ups), and none after them from now on."""

    async def after(self, read: int) -> list[Steer]: ...

    async def tell(self, steer: Steer, text: str) -> None: ...

    async def close(self, read: int) -> list[Steer]: ...
