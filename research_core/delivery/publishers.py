"""Two publishers: the terminal (the CLI) and memory (tests, evaluation)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import TextIO


@dataclass
class TerminalPublisher:
    """Parts are shown as they arrive; a revision is shown as such, with its reason."""

    out: TextIO = field(default_factory=lambda: sys.stdout)

    async def progress(self, run_id: str, text: str) -> None:
        print(f"… {text}", file=sys.stderr, flush=True)

    async def answer_part(self, run_id: str, part_key: str, text: str, sources: list[str],
                          replaces: str | None = None, reason: str = "",
                          key: str = "") -> str | None:
        head = f"── part {part_key}" + (f" REVISED ({reason})" if replaces else "") + " ──"
        tail = f"sources: {', '.join(sources)}" if sources else "sources: none"
        print(f"\n{head}\n{text.strip()}\n{tail}", file=self.out, flush=True)
        return None


@dataclass
class Sent:
    run_id: str
    part_key: str
    text: str
    sources: list[str]
    replaces: str | None
    reason: str
    channel_id: str


@dataclass
class MemoryPublisher:
    """Keeps everything it is given, and gives every part message an id of its own."""

    progress_notes: list[str] = field(default_factory=list)
    parts: list[Sent] = field(default_factory=list)

    async def progress(self, run_id: str, text: str) -> None:
        self.progress_notes.append(text)

    async def answer_part(self, run_id: str, part_key: str, text: str, sources: list[str],
                          replaces: str | None = None, reason: str = "",
                          key: str = "") -> str | None:
        channel_id = f"m{len(self.parts) + 1}"
        self.parts.append(Sent(run_id, part_key, text, sources, replaces, reason, channel_id))
        return channel_id

    def latest(self) -> dict[str, Sent]:
        return {p.part_key: p for p in self.parts}
