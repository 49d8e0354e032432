"""The time up front (docs/teams.md): the picker's line with how long Standard and Deep take,
the median of this workspace's recent runs of the same depth ("Standard about 3 min"); with no
runs yet, no line. What runs cost in tokens and money is the operator's to see (the Home tab's
usage view, `redsearch usage`, `/metrics`), never the channel's (issue 44).

Workers note each finished run's depth and active time (`record_run`, the newest RECENT_RUNS
kept in Redis); the bot reads them (`RecentEstimates`)."""

from __future__ import annotations

import json
import math
import statistics
import time

import redis.asyncio as aioredis

from contract.blocks import DEPTHS
from contract.keys import KEEP_S, costs_key
from contract.redis_server import awaited
from research_core.wording import ENGLISH_WORDS, Words

RECENT_RUNS = 50
KEEP_COSTS_S = 4 * KEEP_S
MAX_TEAMS_KEPT = 1024  # workspaces whose recent runs the bot keeps in memory


async def record_run(redis: aioredis.Redis, team: str | None, deep: bool,
                     took_s: float) -> None:
    """Note a finished run: whether it ran deep and how long it worked."""
    key = costs_key(team)
    entry = {"deep": deep, "took_s": round(took_s, 1)}
    await awaited(redis.lpush(key, json.dumps(entry)))
    await awaited(redis.ltrim(key, 0, RECENT_RUNS - 1))
    await redis.expire(key, KEEP_COSTS_S)


def minutes(took_s: float, w: Words = ENGLISH_WORDS) -> str:
    """A duration as a person plans with it: "under a minute", "about 4 min"."""
    if took_s < 45:
        return w("under a minute")
    return w("about {n} min", n=max(1, math.ceil(took_s / 60 - 0.25)))


def estimate(entries: list[dict[str, object]], w: Words = ENGLISH_WORDS) -> str:
    """The picker's line from recent runs' entries (see `record_run`); "" with none timed."""
    parts = []
    for deep, label in ((False, DEPTHS["standard"]), (True, DEPTHS["deep"])):
        took = [float(e["took_s"]) for e in entries  # type: ignore[arg-type]
                if bool(e.get("deep")) == deep and isinstance(e.get("took_s"), int | float)]
        if took:
            parts.append(f"*{w(label)}* {minutes(statistics.median(took), w)}")
    return w("Recent runs took: {times}", times=" · ".join(parts)) if parts else ""


async def recent_entries(redis: aioredis.Redis, team: str | None) -> list[dict[str, object]]:
    """This workspace's recent runs as `record_run` noted them; unreadable entries skipped."""
    raw = await awaited(redis.lrange(costs_key(team), 0, RECENT_RUNS - 1))
    entries: list[dict[str, object]] = []
    for item in raw:
        try:
            parsed = json.loads(item)
        except ValueError:
            continue
        if isinstance(parsed, dict):
            entries.append(parsed)
    return entries


class RecentEstimates:
    """The picker's line, its runs read from Redis at most once per `fresh_s` a workspace:
    under a burst of mentions the bot reads them once, not once a mention (issue 45), and
    a run that finished is in the line a second later."""

    def __init__(self, redis: aioredis.Redis, fresh_s: float = 1.0) -> None:
        self.redis = redis
        self.fresh_s = fresh_s
        self._read: dict[str | None, tuple[float, list[dict[str, object]]]] = {}

    async def line(self, team: str | None, w: Words = ENGLISH_WORDS) -> str:
        now = time.monotonic()
        read = self._read.get(team)
        if read is None or now - read[0] >= self.fresh_s:
            read = (now, await recent_entries(self.redis, team))
            if len(self._read) >= MAX_TEAMS_KEPT:
                self._read.clear()
            self._read[team] = read
        return estimate(read[1], w)
