"""What the chaos suite counts, from what the services recorded: the fake Slack's calls, the
scripted endpoint's model calls, the workers killed (and which runs each held), the saved
checkpoint steps seen over time, and the runs' own `resume` events.

- lost: a run started (its depth clicked) that has no closing "finished" message.
- duplicated: a message key (run / part / version, progress, closing note) posted more than
  once, or a second depth picker for one mention.
- finished steps redone: a resumed run that starts below a step whose checkpoint had been
  saved before it resumed.
- recovery: from a worker's SIGKILL to the next model or Slack call of each run it held
  (each run has a channel of its own).
- after a Redis write loss: the runs in flight then (their jobs, leases or requests lost),
  whether each finished once, and from Redis back to its next model or Slack call.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from playground.fake_slack import Call
from playground.fake_slack_messages import SlackError, parse_metadata
from redsearch.harness.scripted_tiers import ModelCall
from redsearch.harness.stormy_slack import RateLimited


@dataclass
class TrackedRun:
    tag: str
    channel: str
    thread_ts: str
    run_id: str
    clicked_at: float
    finished_at: float | None = None
    failed: str = ""


@dataclass(frozen=True)
class KillRecord:
    at: float
    pid: int
    held: tuple[str, ...]  # run ids whose lease the killed worker held


@dataclass(frozen=True)
class Resume:
    run_id: str
    step: int
    at: float


@dataclass(frozen=True)
class WriteLoss:
    at: float  # when Redis was back, without the writes since its snapshot
    runs: tuple[str, ...]  # run ids in flight then
    queued: tuple[str, ...]  # of them, the runs asked after the snapshot (nothing of them kept)


@dataclass
class Recovery:
    kill_at: float
    run_id: str
    seconds: float | None  # None: the run showed no sign of life after the kill
    worker_up: bool = True  # another worker was up from the lease's expiry to the bound
    bound_s: float | None = None  # this kill's own bound (a Redis outage in it); None: the plan's


def message_key(call: Call) -> str | None:
    """The publication key a posted message carries in its metadata, if any."""
    try:
        meta = parse_metadata(call.params.get("metadata"))
    except (SlackError, ValueError):
        return None
    key = (meta or {}).get("event_payload", {}).get("key")
    return key if isinstance(key, str) else None


def is_picker(call: Call) -> bool:
    return '"depth_standard"' in str(call.params.get("blocks", ""))


def posted(calls: Iterable[Call]) -> list[Call]:
    """chat.postMessage calls that Slack accepted."""
    return [c for c in calls if c.method == "chat.postMessage" and c.status == 200
            and c.error is None]


def duplicates(calls: Iterable[Call]) -> dict[str, int]:
    """Extra copies per message key; pickers count per thread (`picker:<channel>/<ts>`)."""
    keys: Counter[str] = Counter()
    for call in posted(calls):
        key = message_key(call)
        if key is None and is_picker(call):
            key = f"picker:{call.params.get('channel')}/{call.params.get('thread_ts')}"
        if key is not None:
            keys[key] += 1
    return {k: n - 1 for k, n in keys.items() if n > 1}


def signs_of_life(runs: list[TrackedRun], model_calls: Iterable[ModelCall],
                  slack_calls: Iterable[Call]) -> dict[str, list[float]]:
    """Per run, when it called a model or Slack (its channel is its own): what a worker
    does first when it takes a run over."""
    by_tag = {r.tag: r.run_id for r in runs}
    by_channel = {r.channel: r.run_id for r in runs}
    signs: dict[str, list[float]] = {r.run_id: [] for r in runs}
    for model_call in model_calls:
        if model_call.tag in by_tag:
            signs[by_tag[model_call.tag]].append(model_call.at)
    for call in slack_calls:
        channel = str(call.params.get("channel") or call.params.get("channel_id") or "")
        if channel in by_channel:
            signs[by_channel[channel]].append(call.at)
    return signs


def recoveries(kills: Iterable[KillRecord], signs: dict[str, list[float]],
               worker_up: Callable[[float], bool] = lambda _: True,
               bound_for: Callable[[float], float | None] = lambda _: None) -> list[Recovery]:
    """Kill → the first sign of life of each run the killed worker held; `worker_up(at)`
    says whether another worker could take the runs of a kill at `at` within the bound,
    `bound_for(at)` that kill's own bound (None: the report's)."""
    found: list[Recovery] = []
    for kill in kills:
        for run_id in kill.held:
            after = [at for at in signs.get(run_id, []) if at > kill.at]
            found.append(Recovery(kill.at, run_id, min(after) - kill.at if after else None,
                                  worker_up(kill.at), bound_for(kill.at)))
    return found


def loss_recoveries(losses: Iterable[WriteLoss],
                    signs: dict[str, list[float]]) -> list[Recovery]:
    """Redis back → the first sign of life of each run in flight at a write loss."""
    return recoveries((KillRecord(loss.at, 0, loss.runs) for loss in losses), signs)


def redone_steps(resumes: Iterable[Resume],
                 saved: list[tuple[float, dict[str, int]]]) -> dict[str, int]:
    """Per run, the saved steps its resumes started below. `saved` holds (time, run id →
    checkpoint step) snapshots in time order."""
    redone: Counter[str] = Counter()
    for resume in resumes:
        before = [steps.get(resume.run_id, 0) for at, steps in saved if at < resume.at]
        highest = max(before, default=0)
        if highest > resume.step:
            redone[resume.run_id] += highest - resume.step
    return dict(redone)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))]


@dataclass
class ChaosReport:
    seed: int
    runs: list[TrackedRun]
    messages_posted: int
    duplicated: dict[str, int]
    redone: dict[str, int]
    recovery: list[Recovery]
    limited: list[RateLimited]
    bound_s: float
    faults: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    losses: list[WriteLoss] = field(default_factory=list)
    loss_recovery: list[Recovery] = field(default_factory=list)
    loss_bound_s: float = 0.0

    @property
    def finished(self) -> list[TrackedRun]:
        return [r for r in self.runs if r.finished_at is not None]

    @property
    def lost(self) -> list[TrackedRun]:
        return [r for r in self.runs if r.finished_at is None]

    @property
    def recovered_s(self) -> list[float]:
        return [r.seconds for r in self.recovery if r.seconds is not None]

    @property
    def beyond_bound(self) -> list[Recovery]:
        """Recoveries slower than the bound although another worker was up to take the run
        (when every worker had been killed, a run waits for one to start again)."""
        return [r for r in self.recovery if r.worker_up
                and (r.seconds is None or r.seconds > self.bound_of(r))]

    def bound_of(self, recovery: Recovery) -> float:
        return self.bound_s if recovery.bound_s is None else recovery.bound_s

    @property
    def ok(self) -> bool:
        unrecovered = [r for r in self.recovery if r.seconds is None]
        slow_after_loss = [r for r in self.loss_recovery
                           if r.seconds is None or r.seconds > self.loss_bound_s]
        return not (self.lost or self.duplicated or self.redone or self.beyond_bound
                    or unrecovered or slow_after_loss)

    def rows(self) -> list[tuple[str, str]]:
        rec = self.recovered_s
        storm = [x for x in self.limited if x.storm]
        waited = sum(x.retry_after_s for x in self.limited)
        return [
            ("runs started / finished / lost",
             f"{len(self.runs)} / {len(self.finished)} / {len(self.lost)}"),
            ("messages posted / duplicated",
             f"{self.messages_posted} / {sum(self.duplicated.values())}"),
            ("finished steps redone", str(sum(self.redone.values()))),
            ("recoveries measured (kill × run held)",
             f"{len(rec)} of {len(self.recovery)}"),
            ("recovery after a kill p50 / max",
             f"{percentile(rec, 0.5):.1f} s / {max(rec, default=float('nan')):.1f} s "
             f"(bound {self.bound_s:g} s{self._outage_bounds()})"),
            ("  with another worker up: p50 / max / beyond the bound", self._covered()),
            ("  waiting for a killed worker to restart", str(sum(
                not r.worker_up for r in self.recovery))),
            ("429s answered (storm / pacing)",
             f"{len(storm)} / {len(self.limited) - len(storm)}"),
            ("time lost to 429s (Retry-After waited, all calls)", f"{waited} s"),
            ("Redis write loss: runs caught (asked after the snapshot) / finished once / lost",
             self._caught()),
            ("  after the loss: back p50 / max / posted twice", self._after_loss()),
            ("run wall time p50 / max", self._wall()),
        ]

    def _caught(self) -> str:
        if not self.losses:
            return "-"
        caught = {run for loss in self.losses for run in loss.runs}
        asked = {run for loss in self.losses for run in loss.queued}
        done = {r.run_id for r in self.finished} & caught
        return f"{len(caught)} ({len(asked)}) / {len(done)} / {len(caught - done)}"

    def _after_loss(self) -> str:
        if not self.losses:
            return "-"
        caught = {run for loss in self.losses for run in loss.runs}
        twice = sum(n for key, n in self.duplicated.items()
                    if key.split("/", 1)[0] in caught)
        back = [r.seconds for r in self.loss_recovery if r.seconds is not None]
        return (f"{percentile(back, 0.5):.1f} s / {max(back, default=float('nan')):.1f} s "
                f"(bound {self.loss_bound_s:g} s) / {twice}")

    def _outage_bounds(self) -> str:
        longer = [self.bound_of(r) for r in self.recovery if self.bound_of(r) > self.bound_s]
        return f"; up to {max(longer):.1f} s after a Redis outage" if longer else ""

    def _covered(self) -> str:
        rec = [r.seconds for r in self.recovery if r.worker_up and r.seconds is not None]
        return (f"{percentile(rec, 0.5):.1f} s / {max(rec, default=float('nan')):.1f} s / "
                f"{len(self.beyond_bound)}")

    def _wall(self) -> str:
        walls = [r.finished_at - r.clicked_at for r in self.finished
                 if r.finished_at is not None]
        if not walls:
            return "-"
        return f"{statistics.median(walls):.0f} s / {max(walls):.0f} s"

    def table(self) -> str:
        width = max(len(k) for k, _ in self.rows())
        lines = [f"{k:<{width}}  {v}" for k, v in self.rows()]
        lines.append(f"{'verdict':<{width}}  {'PASS' if self.ok else 'FAIL'}")
        return "\n".join(lines)
