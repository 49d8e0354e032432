"""The cost up front (docs/teams.md): the picker's line with the expected range of tokens and
cost for Standard and Deep, from what this workspace's recent runs used (median and p90 of
runs of the same depth), priced with the models' prices in force now.

Workers note each finished run's tokens per tier (`record_run`, the newest RECENT_RUNS kept in
Redis); the bot prices them (`estimate_line`)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping

import redis.asyncio as aioredis

from contract.keys import KEEP_S, costs_key
from contract.redis_server import awaited
from research_core.settings import TierSettings

RECENT_RUNS = 50
NO_HISTORY = "Expected cost: no history yet"
KEEP_COSTS_S = 4 * KEEP_S


async def record_run(redis: aioredis.Redis, team: str | None, deep: bool,
                     tiers: Mapping[str, tuple[int, int]]) -> None:
    """Note a finished run: whether it ran deep, and its prompt and completion tokens per
    tier."""
    key = costs_key(team)
    entry = {"deep": deep, "tiers": {t: list(tokens) for t, tokens in tiers.items()}}
    await awaited(redis.lpush(key, json.dumps(entry)))
    await awaited(redis.ltrim(key, 0, RECENT_RUNS - 1))
    await redis.expire(key, KEEP_COSTS_S)


def _price(tiers: Mapping[str, list[int]], prices: Mapping[str, TierSettings]) -> float:
    cost = 0.0
    for tier, (prompt, completion) in tiers.items():
        price = prices.get(tier, TierSettings())
        cost += (prompt * price.price_in_per_mtok + completion * price.price_out_per_mtok) / 1e6
    return cost


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def _range(runs: list[Mapping[str, list[int]]], prices: Mapping[str, TierSettings]) -> str:
    tokens = [float(sum(p + c for p, c in run.values())) for run in runs]
    costs = [_price(run, prices) for run in runs]
    return (f"{statistics.median(tokens):,.0f}–{_p90(tokens):,.0f} tokens, "
            f"${statistics.median(costs):.4f}–${_p90(costs):.4f}")


def estimate(entries: list[dict[str, object]], prices: Mapping[str, TierSettings]) -> str:
    """The picker's line from recent runs' entries (see `record_run`)."""
    parts = []
    for deep, label in ((False, "Standard"), (True, "Deep")):
        runs = [e["tiers"] for e in entries
                if bool(e.get("deep")) == deep and isinstance(e.get("tiers"), dict)]
        if runs:
            parts.append(f"*{label}* {_range(runs, prices)} "  # type: ignore[arg-type]
                         f"({len(runs)} run{'s' if len(runs) != 1 else ''})")
        else:
            parts.append(f"*{label}* no history yet")
    if all(p.endswith("no history yet") for p in parts):
        return NO_HISTORY
    return "Expected (median–p90 of recent runs): " + " · ".join(parts)


async def estimate_line(redis: aioredis.Redis, team: str | None,
                        prices: Mapping[str, TierSettings]) -> str:
    raw = await awaited(redis.lrange(costs_key(team), 0, RECENT_RUNS - 1))
    entries: list[dict[str, object]] = []
    for item in raw:
        try:
            parsed = json.loads(item)
        except ValueError:
            continue
        if isinstance(parsed, dict):
            entries.append(parsed)
    return estimate(entries, prices)
