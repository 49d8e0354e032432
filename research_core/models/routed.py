"""A tier that takes only the call kinds its model measured better at than the code path
(issue 43): every other call kind takes the code path at once, as with no model. The
embedded default is wrapped in one (`research_core.models.profile`); API tiers and models a
user configures are not."""

from __future__ import annotations

from typing import Any

from research_core.protocols import Completion, Message, ModelTier


class RoutedTier:
    """`inner` for the call kinds in `calls`; no model for the others."""

    def __init__(self, inner: ModelTier, calls: frozenset[str]) -> None:
        self.inner = inner
        self.calls = calls

    @property
    def model(self) -> str:
        return self.inner.model

    def takes(self, purpose: str) -> bool:
        return purpose in self.calls

    async def complete(self, messages: list[Message], *, schema: dict[str, Any] | None,
                       schema_name: str, max_tokens: int) -> Completion:
        return await self.inner.complete(messages, schema=schema, schema_name=schema_name,
                                         max_tokens=max_tokens)

    def __repr__(self) -> str:
        return f"RoutedTier({self.inner!r}, calls={sorted(self.calls)})"
