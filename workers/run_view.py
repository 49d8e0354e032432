"""What people see of a run besides its messages: the plan in the thread, kept in step with the
run log, the chart of a part whose evidence holds a dated series, and the run's line on its
requester's Home tab (steps, tokens, cost, a link to the thread), published again when the run
ends."""

from __future__ import annotations

import logging

import redis.asyncio as aioredis
from slack_sdk.web.async_client import AsyncWebClient

from contract.cited_text import describe_evidence
from contract.home import RunStats, publish_home, record_stats
from contract.keys import KEEP_S, chart_key
from contract.redis_server import awaited
from contract.requests import ResearchRequestMsg
from contract.slack_client import SLACK_FAILURES, slack_error
from research_core.budget.axes import is_allowed
from research_core.loop.memory.state import RunState
from research_core.loop.publishing.plan_view import PLAN_EVENTS, plan_view
from research_core.loop.publishing.series import Series, part_series
from research_core.runlog import LogEvent
from research_core.settings import Settings
from research_core.wording import for_question
from workers.slack_charts import PartCharts
from workers.slack_publisher import SlackPublisher

log = logging.getLogger(__name__)


def name_sources(state: RunState, publisher: SlackPublisher) -> None:
    """Answer parts name their sources by id; the context line links each to its page (an
    MCP server's resource, which is no web page: its title, server and URI)."""
    publisher.describe = describe_evidence(state.evidence)
    publisher.words = for_question(state.question)


async def show_charts(state: RunState, publisher: SlackPublisher,
                      redis: aioredis.Redis) -> None:
    """A part whose kept evidence holds a dated series shows it as a chart; each part's
    chart file is kept per run in Redis, so any job of the run replaces it, not adds one."""
    key = chart_key(state.run_id)
    known = {_text(k): _text(v) for k, v in (await awaited(redis.hgetall(key))).items()}

    def chart_for(part_key: str, sources: list[str]) -> tuple[Series, dict[str, str]] | None:
        found = part_series(state, part_key, sources)  # what follow-ups read too
        wanted = set(sources)
        titles = {e.source_id: e.title or e.publisher or e.source_id for e in state.kept()
                  if e.source_id in wanted}
        return (found, titles) if found is not None else None

    async def remember(part_key: str, value: str) -> None:
        await awaited(redis.hset(key, part_key, value))
        await redis.expire(key, KEEP_S)

    publisher.charts = PartCharts(publisher.client, chart_for, known, remember,
                                  for_question(state.question))


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def follow_plan(state: RunState, publisher: SlackPublisher) -> None:
    """Show the run's goal tree as the thread's plan, redrawn after every event that can
    change it (the publisher holds redraws to its write interval)."""
    def changed(event: LogEvent) -> None:
        if event.kind in PLAN_EVENTS:
            publisher.plan_changed()

    publisher.show_plan(lambda: plan_view(state))
    state.log.listeners.append(changed)


async def thread_link(slack: AsyncWebClient, request: ResearchRequestMsg) -> str:
    """The permalink of the request's thread ("" when Slack does not give one)."""
    try:
        resp = await slack.chat_getPermalink(channel=request.channel,
                                             message_ts=request.thread_ts)
    except SLACK_FAILURES as exc:
        log.info("no permalink for %s: %s", request.key, slack_error(exc))
        return ""
    return str(resp.get("permalink") or "")


def stats_of(state: RunState, permalink: str, watch: str = "") -> RunStats:
    totals = state.ledger.totals()
    return RunStats(steps=state.step, tokens=sum(t.total_tokens for t in totals),
                    cost_usd=round(sum(t.cost_usd for t in totals), 6), permalink=permalink,
                    watch=watch)


async def update_home(slack: AsyncWebClient, redis: aioredis.Redis, settings: Settings,
                      request: ResearchRequestMsg, state: RunState, permalink: str,
                      watch: str = "") -> None:
    """Record what the run cost (and its last watch cycle) and republish its requester's
    Home tab (best effort)."""
    await record_stats(redis, request.key, stats_of(state, permalink, watch))
    allowed = is_allowed(settings.budget, request.user)
    await publish_home(slack, redis, request.user, settings.budget, allowed)
