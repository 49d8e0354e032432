"""The evaluation's publisher: every answer part with all its versions, and the answer as it is
graded at any moment.

The graded text is the answer's own text: the latest version of every part, in the order the
parts were first published (a revision is edited in place in the thread, so it keeps its
part's place), the report as its body only (`render` adds the cited sources' titles and ids,
which must not pass a check by themselves), with source ids taken out; then only its first
`reading_budget` characters, what a reader of the thread reads
(`research_core.evaluation.reading`). A part cites what its text cites: the source ids written
in it, and for the report the sources its [n] citations resolve to; a citation counts only
where it lies within the budget. `revised` is true only for a revision published after the
late documents arrived that cites one of them (a matter of the publication history, not of
the text read).
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field

from research_core.evaluation.grading import Answer, GroupResult, all_passed, grade
from research_core.evaluation.reading import Cited, join, merged, numbered, without_ids
from research_core.evaluation.suite import Requirement
from research_core.loop.report.reporter import split_rendered

Hook = Callable[[], Awaitable[None]]


@dataclass(frozen=True)
class PartVersion:
    text: str
    sources: tuple[str, ...]
    at_s: float
    reason: str = ""
    seq: int = 0  # the publication's place in the run: 1, 2, …


def id_pattern(ids: Collection[str]) -> re.Pattern[str] | None:
    """Matches any of the ids as a whole token (not inside a longer id)."""
    if not ids:
        return None
    alternatives = "|".join(re.escape(i) for i in sorted(ids, key=len, reverse=True))
    return re.compile(rf"(?<![\w-])(?:{alternatives})(?![\w-])")


def graded_text(text: str, ids: re.Pattern[str] | None) -> Cited:
    """A published text's own words (report body, source ids removed) with its citations."""
    body, numbers = split_rendered(text)
    plain = without_ids(body, ids)
    return merged(plain, numbered(plain.text, numbers))


def graded_part(text: str, ids: re.Pattern[str] | None) -> tuple[str, frozenset[str]]:
    """A published text's own words and every source it cites."""
    cited = graded_text(text, ids)
    return cited.text, cited.cited_ids()


@dataclass
class RecordingPublisher:
    """A Publisher that keeps every answer part by key with all its versions, runs `on_first_part`
    right after the first part and grades the answer after every publication.

    A part is revised when `replaces` names a published part (by key or by the message id this
    publisher returned for one of its versions), or when a key is published again; its newest
    version is what the user sees. `known_ids` are the suite's document ids (what a part's text
    may cite); `late_ids` those that arrive late (`late_arrived` marks the moment);
    `reading_budget` how many characters of the answer are graded (None: all).
    """

    requirements: Sequence[Requirement]
    on_first_part: Hook | None = None
    clock: Callable[[], float] = time.monotonic
    known_ids: frozenset[str] = frozenset()
    late_ids: frozenset[str] = frozenset()
    reading_budget: int | None = None
    parts: dict[str, list[PartVersion]] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    notes: list[tuple[float, str]] = field(default_factory=list)
    first_all_passed_s: float | None = None
    first_part_hook_s: float | None = None
    late_at_s: float | None = None
    late_after: int | None = None  # publications made before the late documents arrived
    started: float = field(init=False)
    _ids: re.Pattern[str] | None = field(init=False)

    def __post_init__(self) -> None:
        self.started = self.clock()
        self._ids = id_pattern(self.known_ids | self.late_ids)

    def elapsed(self) -> float:
        return self.clock() - self.started

    def late_arrived(self) -> None:
        if self.late_after is None:
            self.late_at_s, self.late_after = self.elapsed(), self.publications

    async def progress(self, run_id: str, text: str) -> None:
        self.notes.append((self.elapsed(), text))

    async def answer_part(self, run_id: str, part_key: str, text: str, sources: list[str],
                          replaces: str | None = None, reason: str = "",
                          key: str = "") -> str | None:
        """Record the part; returns its message id (what a later `replaces` may name)."""
        first = not self.parts
        slot = self._slot(part_key, replaces)
        versions = self.parts.setdefault(slot, [])
        versions.append(PartVersion(text, tuple(sources), self.elapsed(), reason,
                                    self.publications + 1))
        message_id = f"{slot}#v{len(versions)}"
        self.aliases[message_id] = slot
        self.grade()
        if first and self.on_first_part is not None:
            await self.on_first_part()
            self.first_part_hook_s = self.elapsed()
        return message_id

    def _slot(self, part_key: str, replaces: str | None) -> str:
        """The key of the part this publication belongs to (its first key)."""
        target = self.aliases.get(replaces, replaces) if replaces else None
        slot = target if target in self.parts else self.aliases.get(part_key, part_key)
        self.aliases[part_key] = slot
        return slot

    @property
    def revisions(self) -> int:
        return sum(len(v) - 1 for v in self.parts.values())

    @property
    def publications(self) -> int:
        return sum(len(v) for v in self.parts.values())

    def reading(self) -> Cited:
        """The whole answer in reading order, before the budget's cut."""
        return join([graded_text(v[-1].text, self._ids) for v in self.parts.values()])

    def answer(self) -> Answer:
        """The answer as graded: what lies within the reading budget."""
        full = self.reading()
        read = full if self.reading_budget is None else full.cut(self.reading_budget)
        return Answer(read.text, read.cited_ids(), self.late_revision())

    def late_revision(self) -> bool:
        """Whether a part was revised after the late documents arrived, citing one of them."""
        if self.late_after is None:
            return False
        return any(v.seq > self.late_after and graded_part(v.text, self._ids)[1] & self.late_ids
                   for versions in self.parts.values() for v in versions[1:])

    def grade(self) -> list[GroupResult]:
        """Grade the answer now; the first time every group passes is recorded."""
        results = grade(self.answer(), self.requirements)
        if self.first_all_passed_s is None and all_passed(results):
            self.first_all_passed_s = self.elapsed()
        return results
