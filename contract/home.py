"""The App Home tab: a person's recent research runs and the budgets in force.

The bot notes every request under its requester (`remember`); workers add what the run cost
as it goes (`record_stats`: steps, tokens, cost, a link to the thread). The bot publishes the
tab when a person opens it, and a worker publishes it again when that person's run ends, both
through `publish_home` (views.publish). Questions are quoted escaped, like in the thread.
The tab's words come from the message catalogue (`research_core.wording`); it has no question
to take a language from, and the app does not read a person's Slack locale (users.info would
need users:read), so the bot and the workers publish it in English (`w` takes another).
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass
from typing import Any

import redis.asyncio as aioredis
from slack_sdk.web.async_client import AsyncWebClient

from contract.blocks import DEPTHS, STATUS_WORDS, shown
from contract.keys import KEEP_S, stats_key, user_runs_key
from contract.mrkdwn import clip, escape, link
from contract.requests import Requests, ResearchRequestMsg
from contract.slack_client import SLACK_FAILURES, slack_error
from research_core.budget.axes import deep_total
from research_core.budget.caps import amount
from research_core.policy import MEASURES, Caps
from research_core.settings import BudgetSettings
from research_core.store.usage import UsageLine
from research_core.wording import ENGLISH_WORDS, N_, Words

log = logging.getLogger(__name__)

Block = dict[str, Any]
RUNS_SHOWN = 10
USAGE_LINES = 40
QUESTION_CHARS = 200


@dataclass(frozen=True)
class RunStats:
    """What a run has cost so far, and where its thread is."""

    steps: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    permalink: str = ""
    watch: str = ""  # the last watch cycle's outcome ("as of …: nothing changed since …")

    @classmethod
    def from_json(cls, raw: str | bytes | None) -> RunStats:
        if not raw:
            return cls()
        data = json.loads(raw)
        return cls(int(data.get("steps", 0)), int(data.get("tokens", 0)),
                   float(data.get("cost_usd", 0.0)), str(data.get("permalink", "")),
                   str(data.get("watch", "")))


async def remember(redis: aioredis.Redis, request: ResearchRequestMsg) -> None:
    """Note a new request under its requester (the newest RUNS_SHOWN * 2 are kept)."""
    key = user_runs_key(request.user)
    await redis.zadd(key, {request.key: time.time()})
    await redis.zremrangebyrank(key, 0, -RUNS_SHOWN * 2 - 1)
    await redis.expire(key, KEEP_S)


async def record_stats(redis: aioredis.Redis, request_key: str, stats: RunStats) -> None:
    await redis.set(stats_key(request_key), json.dumps(asdict(stats)), ex=KEEP_S)


async def recent_runs(redis: aioredis.Redis,
                      user: str) -> list[tuple[ResearchRequestMsg, RunStats]]:
    """The person's newest requests that still exist, newest first, with their stats."""
    keys = await redis.zrevrange(user_runs_key(user), 0, RUNS_SHOWN - 1)
    requests = Requests(redis)
    found = []
    for raw in keys:
        key = raw.decode() if isinstance(raw, bytes) else str(raw)
        request = await requests.load(key)
        if request is not None:
            found.append((request, RunStats.from_json(await redis.get(stats_key(key)))))
    return found


def home_view(runs: list[tuple[ResearchRequestMsg, RunStats]], budget: BudgetSettings,
              deep_allowed: bool, everyone: str | None = None,
              w: Words = ENGLISH_WORDS) -> dict[str, Any]:
    """The Home tab: recent runs, the budgets in force, and for an admin everyone's usage
    (`everyone`, see `usage_text`), in the language of `w`."""
    blocks: list[Block] = [_header(w("Your recent research"))]
    if not runs:
        blocks.append(_section(w("No research yet. Mention @RED with a question in a channel, "
                                 "use `/research`, or open a chat with the app.")))
    for request, stats in runs:
        blocks += [_section(_run_text(request, stats, w)),
                   _context(_run_facts(request, stats, w))]
    blocks += [{"type": "divider"}, _header(w("Budgets in force")),
               _section(_budget_text(budget, deep_allowed, w))]
    if everyone is not None:
        blocks += [{"type": "divider"}, _header(w("Everyone's usage (admin)")),
                   _section(everyone)]
    return {"type": "home", "blocks": blocks}


def usage_text(lines: list[UsageLine], caps: Caps, w: Words = ENGLISH_WORDS) -> str:
    """Everyone's usage this day and month, one line per user or channel and period, with
    the caps in force (the admin's Home tab)."""
    if not lines:
        return w("No usage recorded this day or month.")
    shown = []
    for line in lines[:USAGE_LINES]:
        limits = caps.limits(line.scope, "day" if line.period.startswith("day:") else "month")
        used = line.usage
        capped = [amount(m, limits.cap(m) or 0, w) for m in MEASURES
                  if limits.cap(m) is not None]
        who = f"<@{line.key}>" if line.scope == "user" else f"<#{line.key}>"
        spent = w(", ").join(amount(m, v, w) for m, v in (
            ("runs", used.runs), ("tokens", used.tokens), ("cost_usd", used.cost_usd)))
        shown.append(f"• {who} {line.period.split(':', 1)[1]}: {spent}"
                     + (" " + w("(caps: {caps})", caps=w(", ").join(capped)) if capped else ""))
    more = len(lines) - USAGE_LINES
    return "\n".join(shown) + ("\n" + w("…and {n} more (`redsearch usage`)", n=more)
                               if more > 0 else "")


async def publish_home(client: AsyncWebClient, redis: aioredis.Redis, user: str,
                       budget: BudgetSettings, deep_allowed: bool,
                       everyone: str | None = None, w: Words = ENGLISH_WORDS) -> bool:
    """Publish the person's Home tab; best effort (False, logged, when Slack refuses)."""
    view = home_view(await recent_runs(redis, user), budget, deep_allowed, everyone, w)
    try:
        await client.views_publish(user_id=user, view=view)
    except SLACK_FAILURES as exc:
        log.warning("Home tab of %s not published: %s", user, slack_error(exc))
        return False
    return True


def _run_text(request: ResearchRequestMsg, stats: RunStats, w: Words) -> str:
    question = shown(request.question)
    if len(question) > QUESTION_CHARS:
        question = clip(question, QUESTION_CHARS) + "…"
    thread = link(stats.permalink, w("open the thread")) if stats.permalink else None
    return f"*{question}*" + (f"\n{thread}" if thread else "")


def _run_facts(request: ResearchRequestMsg, stats: RunStats, w: Words) -> str:
    depth = w(DEPTHS.get(request.depth or "", N_("depth not chosen")))
    status = w(STATUS_WORDS[request.status]) if request.status in STATUS_WORDS \
        else request.status
    facts = [depth, status, w.count(stats.steps, "{n} step", "{n} steps"),
             amount("tokens", stats.tokens, w), f"${stats.cost_usd:.4f}"]
    if stats.watch:
        facts.append(w("watched: {outcome}", outcome=escape(stats.watch)))
    return " · ".join(facts)


def _budget_text(budget: BudgetSettings, deep_allowed: bool, w: Words) -> str:
    """What a person can plan with: how long a run may work at each depth, and whether Deep
    is theirs (the budget's axes are the operator's, docs/teams.md)."""
    minutes = budget.active_time_s // 60
    lines = ["• " + w("Standard works for at most {standard} min, Deep for at most {deep} min",
                      standard=minutes, deep=deep_total(minutes)),
             "• " + (w("Deep: available to you") if deep_allowed
                     else w("Deep: not enabled for you"))]
    return "\n".join(lines)


def _header(text: str) -> Block:
    return {"type": "header", "text": {"type": "plain_text", "text": text}}


def _section(text: str) -> Block:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text[:3000]}}


def _context(text: str) -> Block:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text[:3000]}]}


async def home_words(client: AsyncWebClient, user: str) -> Words:
    """The person's own language for their Home tab: their Slack locale (users.info, scope
    `users:read`), "zh-CN" → Chinese; English where Slack gives none or refuses."""
    try:
        found = await client.users_info(user=user, include_locale=True)
    except SLACK_FAILURES as exc:
        log.info("locale of %s unknown, Home in English: %s", user, slack_error(exc))
        return ENGLISH_WORDS
    person = found.get("user")
    locale = person.get("locale") if isinstance(person, dict) else None
    return Words(locale.split("-")[0].lower()) if isinstance(locale, str) else ENGLISH_WORDS
