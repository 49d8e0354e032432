"""Delivery: progress notes and answer parts as two different things, with bounded revisions.

Every version of a part has a stable key (run, part, version). It is written to the outbox
(the store) the moment the channel accepts it, with the id the channel gave it, so a resumed
run never publishes it again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from research_core.budget import Budget
from research_core.protocols import Publisher
from research_core.runlog import RunLog


@dataclass
class Publication:
    run_id: str
    part_key: str
    version: int
    kind: str
    text: str
    sources: list[str] = field(default_factory=list)
    reason: str = ""
    replaces: str | None = None
    channel_id: str | None = None

    @property
    def key(self) -> str:
        return f"{self.run_id}/{self.part_key}/v{self.version}"


class Outbox(Protocol):
    """Publications the channel has accepted, kept outside the step checkpoint."""

    async def sent_publication(self, key: str) -> Publication | None: ...

    async def record_publication(self, publication: Publication) -> None: ...


@dataclass
class Delivery:
    run_id: str
    publisher: Publisher | None
    outbox: Outbox
    log: RunLog
    published: list[Publication] = field(default_factory=list)
    owner: Budget | None = None

    def latest(self, part_key: str) -> Publication | None:
        versions = [p for p in self.published if p.part_key == part_key]
        return max(versions, key=lambda p: p.version) if versions else None

    def parts(self) -> list[Publication]:
        """The latest version of every answer part, in first-publication order."""
        keys = dict.fromkeys(p.part_key for p in self.published if p.kind == "part")
        return [p for k in keys if (p := self.latest(k)) is not None]

    async def progress(self, text: str, key: str) -> Publication | None:
        """A working note; `key` names the moment (e.g. step and node), so a step redone
        after a crash finds its note in the outbox instead of posting it again."""
        note = Publication(self.run_id, f"progress-{key}", 1, "progress", text)
        return await self._emit(note, revision=False)

    async def part(self, part_key: str, text: str, sources: list[str],
                   reason: str = "") -> Publication | None:
        """A new part, or a new version of it; None when nothing changed."""
        previous = self.latest(part_key)
        if previous is not None and previous.text == text:
            return None
        version = previous.version + 1 if previous else 1
        replaces = (previous.channel_id or previous.key) if previous else None
        return await self._emit(Publication(self.run_id, part_key, version, "part", text,
                                            sources, reason, replaces),
                                revision=previous is not None)

    def _granted(self, part_key: str, revision: bool) -> bool:
        """The resource owner's word on one more publication (a revision has limits)."""
        if self.owner is None:
            return True
        if revision:
            return bool(self.owner.record_revision(part_key))
        return bool(self.owner.spend("publications"))

    async def _emit(self, publication: Publication, revision: bool) -> Publication | None:
        """Send unless the outbox already has it; only a new send is charged to the budget."""
        sent = await self.outbox.sent_publication(publication.key)
        if sent is not None:
            self.log.emit("outbox", f"{publication.key} was already published; not again")
            self.published.append(sent)
            return sent
        if not self._granted(publication.part_key, revision):
            return None
        publication.channel_id = await self._send(publication)
        await self.outbox.record_publication(publication)
        self.published.append(publication)
        what = "revised" if publication.version > 1 else publication.kind
        self.log.emit("publish", f"{what} {publication.part_key} v{publication.version}"
                      + (f": {publication.reason}" if publication.reason else ""),
                      key=publication.key)
        return publication

    async def _send(self, p: Publication) -> str | None:
        if self.publisher is None:
            return None
        if p.kind == "progress":
            await self.publisher.progress(self.run_id, p.text)
            return None
        return await self.publisher.answer_part(self.run_id, p.part_key, p.text, p.sources,
                                                replaces=p.replaces, reason=p.reason)
