"""Delivery: progress notes and answer parts as two different things, with bounded revisions.

Every version of a part has a stable key (run, part, version). Publishing is exactly-once:
the intent is written to the store before the channel is called, the message carries its key
(a publisher that can be asked, `FindsPosted`, looks for it), and the publication goes to the
outbox with the id the channel gave it once the channel accepted it. A resumed run never
publishes an outbox entry again, and an intent left without an outbox entry (a crash between
the send and the record) is first looked for in the channel, and sent only when not found.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from research_core.budget.axes import Budget
from research_core.protocols import PartStream, Publisher, StreamsParts
from research_core.runlog import RunLog

PART_KEY_CHARS = 40  # the store's column; PostgreSQL refuses longer values (SQLite does not)
_DIGEST_CHARS = 12


def bounded_part_key(part_key: str, limit: int = PART_KEY_CHARS) -> str:
    """`part_key`, or when longer than `limit` its start and a digest of the whole: the same
    key every time (a resumed run finds its publications), and one that fits the store."""
    if len(part_key) <= limit:
        return part_key
    digest = hashlib.sha256(part_key.encode()).hexdigest()[:_DIGEST_CHARS]
    return f"{part_key[:limit - _DIGEST_CHARS - 1]}~{digest}"


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

    def __post_init__(self) -> None:
        self.part_key = bounded_part_key(self.part_key)

    @property
    def key(self) -> str:
        return f"{self.run_id}/{self.part_key}/v{self.version}"


class Outbox(Protocol):
    """Publications the channel has accepted, and those about to be sent (intents), kept
    outside the step checkpoint."""

    async def sent_publication(self, key: str) -> Publication | None: ...

    async def record_intent(self, publication: Publication) -> None: ...

    async def pending_publication(self, key: str) -> Publication | None: ...

    async def record_publication(self, publication: Publication) -> None: ...


@runtime_checkable
class FindsPosted(Protocol):
    """A publisher that can tell whether a message with this key already reached the
    channel, and its id (a Slack ts) if so."""

    async def posted(self, key: str) -> str | None: ...


@dataclass
class Delivery:
    run_id: str
    publisher: Publisher | None
    outbox: Outbox
    log: RunLog
    published: list[Publication] = field(default_factory=list)
    owner: Budget | None = None

    def latest(self, part_key: str) -> Publication | None:
        part_key = bounded_part_key(part_key)
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

    def stream(self, part_key: str) -> PartStream | None:
        """A stream that shows a new part while a model writes it, when the publisher can
        stream; the part is then published as usual and replaces what was streamed."""
        if not isinstance(self.publisher, StreamsParts) or self.latest(part_key) is not None:
            return None
        key = Publication(self.run_id, part_key, 1, "part", "").key
        return self.publisher.stream_part(self.run_id, part_key, key)

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
        intent = await self.outbox.pending_publication(publication.key)
        if intent is not None:
            return await self._settle(intent)
        if not self._granted(publication.part_key, revision):
            return None
        await self.outbox.record_intent(publication)
        publication.channel_id = await self._send(publication)
        return await self._record(publication)

    async def _settle(self, intent: Publication) -> Publication:
        """An intent from before a crash: found in the channel, or sent now (already
        granted; an edit in place is simply made again)."""
        found = await self._find(intent)
        if found is not None:
            intent.channel_id = found
            self.log.emit("outbox", f"{intent.key} had reached the channel before the "
                          f"crash ({found}); recorded, not sent again")
            await self.outbox.record_publication(intent)
            self.published.append(intent)
            return intent
        self.log.emit("outbox", f"{intent.key} was not in the channel; sending it now")
        intent.channel_id = await self._send(intent)
        return await self._record(intent)

    async def _find(self, intent: Publication) -> str | None:
        if intent.kind != "part" or not isinstance(self.publisher, FindsPosted):
            return None
        return await self.publisher.posted(intent.key)

    async def _record(self, publication: Publication) -> Publication:
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
                                                replaces=p.replaces, reason=p.reason,
                                                key=p.key)
