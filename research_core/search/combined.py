"""Several search backends as one: the corpus or the web, each MCP server, the workspace's own
Slack. A query goes to all of them at once; their hits alternate (the first hit of each, then
the second of each, …, a URL given twice kept once) up to the request's limit, so that each
source gets its share. A member that fails (every web service down) costs its own hits, noted
in the run log (and the answer, incomplete, is not cached: `failures.py`); only when every
member fails does the search fail. A body is read by the member whose hit it was."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from research_core.errors import SearchUnavailable
from research_core.protocols import SearchBackend, SearchHit, SearchRequest
from research_core.search.failures import did_not_answer
from research_core.search.tool import DatesPages, KeepsHitsPrivate, RemembersHits

REMEMBERED = 20_000  # source ids whose member is known (the oldest dropped)


@runtime_checkable
class Closes(Protocol):
    """A backend holding something open (an MCP server's session) until it is closed."""

    async def aclose(self) -> None: ...


def interleave(lists: Sequence[list[SearchHit]], limit: int) -> list[SearchHit]:
    """The first hit of each list, then the second of each, …; repeated URLs dropped."""
    merged: list[SearchHit] = []
    seen: set[str] = set()
    for rank in range(max((len(hits) for hits in lists), default=0)):
        for hits in lists:
            if rank < len(hits) and hits[rank].url not in seen:
                seen.add(hits[rank].url)
                merged.append(hits[rank])
    return merged[:limit]


class CombinedBackend:
    """`members` searched together (see the module's docstring)."""

    def __init__(self, members: Sequence[SearchBackend]) -> None:
        self.members = list(members)
        self._owners: dict[str, SearchBackend] = {}

    @property
    def name(self) -> str:
        """Part of the response cache key: every member, in order."""
        return "+".join(m.name for m in self.members)

    @property
    def private(self) -> bool:
        return any(isinstance(m, KeepsHitsPrivate) and m.private for m in self.members)

    async def search(self, request: SearchRequest) -> list[SearchHit]:
        answers = await asyncio.gather(*(self._one(m, request) for m in self.members))
        if all(a is None for a in answers):
            raise SearchUnavailable(f"every search backend failed for {request.query!r}")
        lists = [a or [] for a in answers]
        for member, hits in zip(self.members, lists, strict=True):
            self._owners.update((h.source_id, member) for h in hits)
        for oldest in list(self._owners)[:max(0, len(self._owners) - REMEMBERED)]:
            del self._owners[oldest]
        return interleave(lists, request.limit)

    async def read_body(self, source_id: str) -> str | None:
        owner = self._owners.get(source_id)
        for member in [owner] if owner is not None else self.members:
            body = await member.read_body(source_id)
            if body:
                return body
        return None

    def remember(self, hits: list[SearchHit]) -> None:
        for member in self.members:
            if isinstance(member, RemembersHits):
                member.remember(hits)

    def published_of(self, source_id: str) -> dt.date | None:
        owner = self._owners.get(source_id)
        return owner.published_of(source_id) if isinstance(owner, DatesPages) else None

    async def aclose(self) -> None:
        for member in self.members:
            if isinstance(member, Closes):
                await member.aclose()

    @staticmethod
    async def _one(member: SearchBackend, request: SearchRequest) -> list[SearchHit] | None:
        try:
            return await member.search(request)
        except SearchUnavailable as exc:
            did_not_answer(member.name, "unavailable", "fallback",
                           f"{member.name}: {exc}; the other sources answer")
            return None
