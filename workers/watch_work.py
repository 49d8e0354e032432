"""Watched threads in the workers (docs/watch.md): storing the requester's choice, the tick
that queues one job per due watch, and one watch cycle in its thread.

The tick is a task beside the jobs in every worker, not a job: a job waits for a free slot,
and with every slot taken by a long run it waited until one ended (908 s once). The cycles it
queues run in slots kept for them (`workers.worker.SteadyWorker`), so a due watch starts
within RED_WORKER_WATCH_TICK_S and ARQ's poll, however many runs are in flight.

Of several workers ticking at once, one claims a due watch (a compare-and-set on its date in
the store) and its job id names the thread and the date, so a cycle never runs twice. A
cycle revises the parts that changed in place and posts one "What changed since <date>"
message; when nothing changed it posts nothing (the worker log, the run log and the watch's
note say so). A watch whose thread or channel is gone stops itself.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import json
import logging

from arq.connections import ArqRedis
from redis.exceptions import RedisError
from sqlalchemy.exc import SQLAlchemyError

from contract.blocks import words_of
from contract.queue import JobPayload, JobQueue
from contract.requests import Requests, ResearchRequestMsg
from contract.slack_client import SLACK_FAILURES, slack_error
from contract.watch_blocks import Change, changes_blocks, changes_text
from research_core.delivery.publications import Publication
from research_core.errors import RunNotFound, StoreUnavailable
from research_core.loop.memory.state import RunState
from research_core.store.jobs import JobRecords
from research_core.store.restore import load_state
from research_core.store.sql import SqlStore
from research_core.store.usage import UsageStore
from research_core.store.watches import WatchStore
from workers import thread_messages as msgs
from workers.run_view import name_sources, show_charts, thread_link, update_home
from workers.services import Services
from workers.slack_publisher import SlackPublisher
from workers.team_rules import job_settings, run_caps

log = logging.getLogger(__name__)

GONE = {"channel_not_found", "thread_not_found", "message_not_found", "is_archived",
        "not_in_channel", "team_not_found", "account_inactive"}


async def watch_policy(services: Services, request: ResearchRequestMsg,
                       cycle_id: str) -> str | None:
    """Why this cycle may not run (None: it runs, counted as one more run of its requester
    and channel against the spending caps, docs/teams.md)."""
    policy = services.settings.policy
    if not policy.answers_in(request.channel):
        return "the bot no longer answers in this channel"
    breach = await UsageStore(services.store).admit_run(cycle_id, request.user,
                                                        request.channel, policy.caps)
    return None if breach is None else breach.message()


async def record_watch(services: Services, payload: JobPayload) -> str:
    """The requester's choice from the Watch menu, stored with the run."""
    watches = WatchStore(services.store)
    if payload.cadence == "stop":
        stopped = await watches.stop(payload.request_key, f"stopped by {payload.voter}")
        return "watch stopped" if stopped else "was not watched"
    request = await services.requests.load(payload.request_key)
    row = await services.store.run_row(payload.run_id)
    if request is None or row is None:
        return "nothing to watch"
    watch = await watches.watch(
        request_key=request.key, team=request.team or "", run_id=request.run_id,
        channel=request.channel, thread_ts=request.thread_ts,
        request=json.loads(request.to_json()), cadence=payload.cadence, last_as_of=row.as_of)
    return f"watching {watch.cadence}, next cycle {watch.next_due}"


async def queue_due_watches(store: SqlStore, redis: ArqRedis, today: dt.date) -> list[str]:
    """Claim every watch due by `today` and queue its cycle; the job ids queued."""
    watches, requests = WatchStore(store), Requests(redis)
    queued: list[str] = []
    for watch in await watches.due(today):
        if not await watches.claim(watch, today):
            continue  # another worker claimed it
        request = await requests.load(watch.request_key)
        if request is None:  # a request older than a week
            request = ResearchRequestMsg.from_json(json.dumps(watch.request))
            await requests.save(request)
            await requests.link_thread(request)
        payload = JobPayload.watch(watch.request_key, watch.channel, watch.thread_ts,
                                   today.isoformat(), watch.team)
        await JobQueue(redis, JobRecords(store)).submit(payload, request)
        queued.append(payload.job_id)
    return queued


async def tick_forever(services: Services, every_s: float) -> None:
    """Queue the cycles due today, now and every `every_s` (on every worker); Redis or the
    database away costs a tick, not the ticking. Today is the research's date: `Settings.as_of`
    where the worker's research is pinned to one (tests), else today in UTC."""
    while True:
        try:
            today = services.settings.as_of or dt.datetime.now(dt.UTC).date()
            await queue_due_watches(services.store, services.redis, today)
        except (RedisError, OSError, SQLAlchemyError, StoreUnavailable) as exc:
            log.warning("watch tick: %s; trying again next tick", exc)
        await asyncio.sleep(every_s)


class WatchCycle:
    """One cycle of one watched thread, run by a job under the run's lease."""

    def __init__(self, services: Services, payload: JobPayload) -> None:
        self.services = services
        self.payload = payload
        self.watches = WatchStore(services.store)
        self.cycle_id = f"{payload.run_id}:watch:{payload.as_of}"  # its spending's charge id

    async def run(self, request: ResearchRequestMsg) -> str:
        watch = await self.watches.get(request.key)
        if watch is None or not watch.active:
            return "not watched"
        gone = await self.thread_gone(request)
        if gone:
            await self.watches.stop(request.key, f"stopped itself: {gone}")
            log.info("watch of %s stopped itself: %s", request.key, gone)
            return f"watch stopped: {gone}"
        refused = await watch_policy(self.services, request, self.cycle_id)
        if refused:  # skipped, not stopped: the next cycle searches from the same date
            log.info("watch cycle of %s not run: %s", request.key, refused)
            return f"watch cycle not run: {refused}"
        try:
            state = await load_state(self.services.store, self.payload.run_id,
                                     self.services.settings)
        except RunNotFound:
            await self.watches.stop(request.key, "stopped itself: its run is gone")
            return "watch stopped: no run"
        as_of = dt.date.fromisoformat(self.payload.as_of)
        if state.as_of > as_of:
            return f"already researched as of {state.as_of}"
        since = dt.date.fromisoformat(state.extra.watch_since or state.as_of.isoformat()) \
            if state.as_of == as_of else state.as_of
        revised = await self.cycle(request, state, as_of)
        return await self.report(request, state, since, as_of, revised)

    async def cycle(self, request: ResearchRequestMsg, state: RunState,
                    as_of: dt.date) -> list[Publication]:
        slack = SlackPublisher(self.services.slack, request.channel, request.thread_ts,
                               progress_interval=self.services.settings.slack.progress_interval_s)
        name_sources(state, slack)
        await show_charts(state, slack, self.services.redis)
        totals = state.ledger.totals()
        caps = dataclasses.replace(
            run_caps(self.services, self.cycle_id, request),
            spent_before=(sum(t.total_tokens for t in totals), sum(t.cost_usd for t in totals)))
        engine = self.services.engine(
            QuietPublisher(slack), job_settings(self.services.settings, request.channel), caps)
        try:
            return await engine.watch_cycle(state, as_of)
        finally:
            await slack.close()

    async def report(self, request: ResearchRequestMsg, state: RunState, since: dt.date,
                     as_of: dt.date, revised: list[Publication]) -> str:
        if not revised:  # no message: the log, the watch's note and the Home tab say so
            note = f"as of {as_of}: nothing changed since {since}"
            log.info("watch of %s %s", request.key, note)
            await self.watches.cycle_done(request.key, as_of, note)
            await self.home(request, state, note)
            return f"watch cycle {note}"
        changes = [_change(state, p) for p in revised]
        message = Publication(state.run_id, f"watch-{as_of.isoformat()}", 1, "final",
                              changes_text(since, changes, words_of(request)))
        await msgs.post_once(self.services.slack, self.services.store, request, message,
                             changes_blocks(since, changes, words_of(request)))
        note = f"as of {as_of}: {len(changes)} finding(s) updated since {since}"
        await self.watches.cycle_done(request.key, as_of, note)
        await self.home(request, state, note)
        return f"watch cycle {note}"

    async def home(self, request: ResearchRequestMsg, state: RunState, note: str) -> None:
        """The run's line on its requester's Home tab, with the cycle's outcome."""
        link = await thread_link(self.services.slack, request)
        await update_home(self.services.slack, self.services.redis, self.services.settings,
                          request, state, link, watch=note)

    async def thread_gone(self, request: ResearchRequestMsg) -> str:
        """Why the thread cannot be posted in any more ("" when it is there)."""
        try:
            await self.services.slack.conversations_replies(
                channel=request.channel, ts=request.thread_ts, limit=1)
        except SLACK_FAILURES as exc:  # Slack away: the cycle runs, and posting will tell
            error = slack_error(exc)
            return f"the thread is gone ({error})" if error in GONE else ""
        return ""


class QuietPublisher:
    """A watch cycle speaks only through revised parts and its one "What changed" message:
    progress notes go to the log, not to the thread."""

    def __init__(self, inner: SlackPublisher) -> None:
        self.inner = inner

    async def progress(self, run_id: str, text: str) -> None:
        log.debug("watch cycle of %s: %s", run_id, text)

    async def answer_part(self, run_id: str, part_key: str, text: str, sources: list[str],
                          replaces: str | None = None, reason: str = "",
                          key: str = "") -> str | None:
        return await self.inner.answer_part(run_id, part_key, text, sources, replaces, reason,
                                            key)

    async def posted(self, key: str) -> str | None:
        return await self.inner.posted(key)


def _change(state: RunState, part: Publication) -> Change:
    node = state.tree.nodes.get(part.part_key)
    links: list[tuple[str, str]] = []
    named = [s for s in part.sources if s in part.reason] or part.sources
    for source_id in named:
        found = next((e for e in state.evidence if e.source_id == source_id), None)
        links.append((found.url if found else "", (found.title if found else "") or source_id))
    return Change(node.question if node else part.part_key, part.reason, links)
