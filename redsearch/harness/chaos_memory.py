"""The soak's memory record: the resident memory of every process of the deployment (each
worker process, the bot, Redis, this harness with the fake Slack and the scripted models),
sampled at a fixed interval, and per process its first sample, its sample once the soak has
warmed up, and its last. A process that lives through the soak and grows from its warm sample
to its last by more than LEAK_SHARE (and LEAK_FLOOR_KIB) is reported as a leak."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

LEAK_SHARE = 0.25  # growth beyond this share of the warm size, and …
LEAK_FLOOR_KIB = 30 * 1024  # … beyond this many KiB (interpreter noise is below it)
HARNESS = "harness"  # the label of this process: the fake Slack and the scripted models


def rss_kib(pid: int) -> int | None:
    """Resident set size of a live process in KiB (Linux /proc); None once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return None


@dataclass
class ProcessMemory:
    label: str
    pid: int
    samples: list[tuple[float, int]] = field(default_factory=list)  # (time, KiB)

    @property
    def lived_s(self) -> float:
        return self.samples[-1][0] - self.samples[0][0] if self.samples else 0.0

    def at_or_after(self, when: float) -> int | None:
        return next((kib for at, kib in self.samples if at >= when), None)

    @property
    def last(self) -> int | None:
        return self.samples[-1][1] if self.samples else None


@dataclass
class MemoryLog:
    """Samples `processes()` (label → pid) every `every_s`; `warm_at` starts the leak check."""

    processes: Callable[[], dict[str, int]]
    every_s: float = 30.0
    warm_at: float = 0.0
    seen: dict[int, ProcessMemory] = field(default_factory=dict)
    _last: float = 0.0

    def sample(self, now: float | None = None, force: bool = False) -> None:
        now = time.time() if now is None else now
        if not force and now - self._last < self.every_s:
            return
        self._last = now
        for label, pid in self.processes().items():
            kib = rss_kib(pid)
            if kib is not None:
                self.seen.setdefault(pid, ProcessMemory(label, pid)).samples.append((now, kib))

    def long_lived(self, share_of_soak: float = 0.8) -> list[ProcessMemory]:
        """The processes that lived through most of the soak (killed workers did not)."""
        spans = [m.lived_s for m in self.seen.values()]
        longest = max(spans, default=0.0)
        return [m for m in self.seen.values() if m.lived_s >= share_of_soak * longest]

    def growth_kib(self, memory: ProcessMemory) -> int:
        warm = memory.at_or_after(self.warm_at) or 0
        return (memory.last or 0) - warm

    def leaks(self) -> list[ProcessMemory]:
        """Long-lived service processes past the rule; the harness is shown, not judged (it
        keeps every Slack and model call it served, for the audit)."""
        found = []
        for memory in self.long_lived():
            if memory.label.startswith(HARNESS):
                continue
            warm = memory.at_or_after(self.warm_at) or 0
            growth = self.growth_kib(memory)
            if growth > max(LEAK_FLOOR_KIB, LEAK_SHARE * warm):
                found.append(memory)
        return found

    def rows(self) -> list[str]:
        """One line per long-lived process: RSS at start, once warm, at the end, growth."""
        lines = []
        for m in sorted(self.long_lived(), key=lambda m: m.label):
            first, warm = m.samples[0][1], m.at_or_after(self.warm_at) or 0
            lines.append(f"{m.label:<22} {_mib(first):>8} {_mib(warm):>8} {_mib(m.last or 0):>8}"
                         f" {_signed_mib(self.growth_kib(m)):>9}")
        short = [m for m in self.seen.values() if m not in self.long_lived()]
        if short:
            peaks = sorted(max(kib for _, kib in m.samples) for m in short)
            lines.append(f"{len(short)} shorter-lived processes (workers killed or restarted, "
                         f"a Redis restarted): "
                         f"peak RSS p50 {_mib(peaks[len(peaks) // 2])}, max {_mib(peaks[-1])}")
        return lines

    def table(self) -> str:
        head = f"{'process':<22} {'start':>8} {'warm':>8} {'end':>8} {'growth':>9}"
        return "\n".join([head, *self.rows()])


def _mib(kib: int) -> str:
    return f"{kib / 1024:.0f} MiB"


def _signed_mib(kib: int) -> str:
    return f"{kib / 1024:+.0f} MiB"
