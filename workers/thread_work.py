"""What a job does in its thread: research a request, or answer one follow-up; and how it
closes the thread when it is stopped or fails. `workers/jobs.py` runs it under the run's lease.
While a research works, the thread's steers are read at each step and each writer is told what
theirs changed; those that came after the last step are answered as follow-ups (`RunSteers`).
"""

from __future__ import annotations

import datetime as dt
import logging

from redis.exceptions import RedisError

from contract.blocks import words_of
from contract.keys import KEEP_S, before_key, doing_key, progress_key, stream_key
from contract.mrkdwn import escape
from contract.queue import FOLLOWUP, WATCH, JobPayload
from contract.redis_server import awaited
from contract.requests import ENDED, FAILED, FINISHED, RUNNING, STOPPED, ResearchRequestMsg
from contract.slack_client import SLACK_FAILURES, slack_error
from contract.steers import LATE_READ, ThreadSteers
from research_core.errors import RunNotFound
from research_core.loop.memory.state import RunState
from research_core.loop.planning.plan_preview import seed_plan
from research_core.protocols import SearchBackend, Steer
from research_core.search.combined import CombinedBackend
from research_core.store.restore import load_state
from workers import thread_messages as msgs
from workers.metrics import RUN_SECONDS, RUN_STEPS
from workers.run_view import follow_plan, name_sources, show_charts, thread_link, update_home
from workers.services import Services
from workers.slack_publisher import SlackPublisher
from workers.slack_search import SlackSearch
from workers.team_rules import active_time_s, admit, job_settings, remember_time, run_caps
from workers.watch_work import WatchCycle

log = logging.getLogger(__name__)


class ThreadWork:
    def __init__(self, services: Services, payload: JobPayload) -> None:
        self.services = services
        self.payload = payload
        self.refused = False  # the policy's spending caps refused the research

    def record_doing(self, state: RunState) -> RunState:
        """Keep what the run is doing in Redis, so that a job that crashes its worker again
        and again can be reported with the step it was on (see `jobs.JobRunner`)."""
        key = doing_key(self.payload.job_id)

        async def write(what: str) -> None:  # awaited: a crash in `what` finds it recorded
            await self._set_doing(key, what)

        state.log.doing_listeners.append(write)
        return state

    async def _set_doing(self, key: str, what: str) -> None:
        try:
            await self.services.redis.set(key, what, ex=KEEP_S)
        except RedisError as exc:  # best effort: only a crash report would miss it
            log.warning("could not record what job %s is doing: %s", self.payload.job_id, exc)

    async def run(self, request: ResearchRequestMsg) -> str:
        if self.payload.kind == FOLLOWUP:
            return await self.followup(request)
        if self.payload.kind == WATCH:
            return await WatchCycle(self.services, self.payload).run(request)
        return await self.research(request)

    async def research(self, request: ResearchRequestMsg) -> str:
        settings = job_settings(self.services.settings, request.channel)
        state = await self.state(request)
        if state.step == 0 and not state.extra.budget:  # a new run: admitted against the caps
            refused = await admit(self.services, request, state.run_id)
            if refused is not None:
                self.refused = True
                return f"refused: {refused}"
            if request.plan:  # the previewed plan is the run's first expansion
                seed_plan(state, request.plan)
        await self.status(request, RUNNING)
        self.record_doing(state)
        link = await thread_link(self.services.slack, request)
        publisher = await self.publisher(request)
        # awaited before the plan is followed, so that its first drawing waits for the run
        await show_charts(state, publisher, self.services.redis)
        follow_plan(state, publisher)
        name_sources(state, publisher)
        caps = run_caps(self.services, state.run_id, request)
        backend = await self.search_backend(request)
        try:
            steers = RunSteers(self.services, request)
            report = await self.services.engine(publisher, settings, caps, backend,
                                                steers).run(state)
        finally:
            await publisher.close()
        note, blocks = msgs.finished_message(state, report, request.key)
        await msgs.post_once(self.services.slack, self.services.store, request, note, blocks)
        await self.status(request, FINISHED)
        await self.home(request, state, link)
        await remember_time(self.services, request, state)
        _count_run(state)
        return f"finished run {state.run_id} in {state.step} steps"

    async def home(self, request: ResearchRequestMsg, state: RunState, link: str = "") -> None:
        """The run's line on its requester's Home tab, with what it cost."""
        link = link or await thread_link(self.services.slack, request)
        await update_home(self.services.slack, self.services.redis, self.services.settings,
                          request, state, link)

    async def followup(self, request: ResearchRequestMsg) -> str:
        try:
            state = self.record_doing(
                await load_state(self.services.store, self.payload.run_id, self.services.settings))
        except RunNotFound:
            w = words_of(request)
            await self.services.slack.chat_postMessage(
                channel=request.channel, thread_ts=request.thread_ts,
                text=w("I have no research in this thread to follow up on yet."))
            return "no run to follow up"
        before = await self.status_before(request)
        await self.status(request, RUNNING)
        publisher = await self.publisher(request)
        name_sources(state, publisher)
        await show_charts(state, publisher, self.services.redis)
        try:
            w = publisher.words  # the thread's language (`name_sources`)
            await publisher.working(w("Answering the follow-up: {text}",
                                      text=self.payload.followup_text))
            engine = self.services.engine(
                publisher, job_settings(self.services.settings, request.channel),
                run_caps(self.services, self.payload.run_id, request),
                await self.search_backend(request))
            done = await engine.follow_up(
                state, self.payload.followup_text, f"followup-{self.payload.followup_ts}")
        finally:
            await publisher.close()
        await self.status(request, before)
        return f"follow-up answered ({done.researched_steps} research steps)"

    async def search_backend(self, request: ResearchRequestMsg) -> SearchBackend:
        """The worker's backend, and the workspace's own Slack beside it when the policy
        lets this workspace's runs search it and the asking message's action token came
        with the job (docs/teams.md)."""
        rule = self.services.settings.policy.slack_search
        if not rule.on_in(request.team or self.payload.team):
            return self.services.backend
        token = await self.services.requests.search_token(
            self.payload.job_id, self.services.settings.worker.job_timeout_s)
        if token is None:
            log.info("job %s: no action token came with it; the workspace's messages are "
                     "not searched", self.payload.job_id)
            return self.services.backend
        slack = SlackSearch(self.services.slack, token, request.channel, request.thread_ts,
                            rule.channel_types)
        return CombinedBackend([self.services.backend, slack])

    async def status_before(self, request: ResearchRequestMsg) -> str:
        """The status to restore after a follow-up; a resumed follow-up finds the first one."""
        first = request.status if request.status in ENDED else FINISHED
        key = before_key(self.payload.job_id)
        await self.services.redis.set(key, first, nx=True, ex=KEEP_S)
        raw = await self.services.redis.get(key)
        return raw.decode() if isinstance(raw, bytes) else str(raw or first)

    async def state(self, request: ResearchRequestMsg) -> RunState:
        """The run's checkpoint when one exists (a resumed job), else a new run."""
        try:
            return await load_state(self.services.store, self.payload.run_id,
                                    self.services.settings)
        except RunNotFound:
            pass
        settings = self.services.settings
        state = RunState.new(request.question, settings.as_of or dt.date.today(), settings,
                             mode=request.depth or "auto", requester=request.user)
        state.run_id = self.payload.run_id
        state.extra.team = request.team or self.payload.team
        return state

    async def publisher(self, request: ResearchRequestMsg) -> SlackPublisher:
        redis = self.services.redis
        key, streams = progress_key(self.payload.job_id), stream_key(self.payload.job_id)
        raw = await redis.get(key)
        streamed = {_text(k): _text(v)
                    for k, v in (await awaited(redis.hgetall(streams))).items()}

        async def remember(ts: str) -> None:
            await redis.set(key, ts, ex=KEEP_S)

        async def remember_stream(publication: str, ts: str) -> None:
            await awaited(redis.hset(streams, publication, ts))
            await redis.expire(streams, KEEP_S)

        asker = self.payload.followup_user if self.payload.kind == FOLLOWUP else request.user
        return SlackPublisher(self.services.slack, request.channel, request.thread_ts,
                              progress_interval=self.services.settings.slack.progress_interval_s,
                              progress_ts=raw.decode() if raw else None,
                              on_progress_ts=remember,
                              progress_key=f"{self.payload.run_id}/progress/{self.payload.job_id}",
                              recipient=(request.team or await self.team(), asker or None),
                              streamed=streamed, on_stream_ts=remember_stream,
                              status_refresh_s=self.services.settings.slack.status_refresh_s)

    async def team(self) -> str | None:
        """The workspace's team id (auth.test), for requests stored without one."""
        try:
            return str((await self.services.slack.auth_test()).get("team_id") or "") or None
        except SLACK_FAILURES as exc:
            log.info("auth.test failed (%s): answers are posted, not streamed", slack_error(exc))
            return None

    async def stopped(self, request: ResearchRequestMsg) -> str:
        state = await self.state(request)
        if self.payload.kind != FOLLOWUP:
            state.status = "stopped"
            await self.services.store.save_checkpoint(state)
            await self.final_plan(request, state)
        note, blocks = msgs.stopped_message(state, request, self.payload.job_id)
        await msgs.post_once(self.services.slack, self.services.store, request, note, blocks)
        after = STOPPED if self.payload.kind != FOLLOWUP else await self.status_before(request)
        await self.status(request, after)
        await self.services.requests.clear_stop(request.key)
        return f"stopped at step {state.step}"

    async def failed(self, request: ResearchRequestMsg, why: str) -> None:
        """A research that cannot go on fails the request; a follow-up only itself."""
        followup = self.payload.kind in (FOLLOWUP, WATCH)  # a failed cycle fails only itself
        note, blocks = msgs.failed_message(self.payload.run_id, self.payload.job_id, why,
                                           followup, words_of(request))
        await msgs.post_once(self.services.slack, self.services.store, request, note, blocks)
        if not followup:
            await self._failed_plan(request)
        await self.status(request, await self.status_before(request) if followup else FAILED)

    async def final_plan(self, request: ResearchRequestMsg, state: RunState) -> None:
        """The plan redrawn once more for a run that ended without finishing (stopped or
        failed), and the run's line on the Home tab."""
        try:
            publisher = await self.publisher(request)
            if publisher.progress_ts is not None:
                follow_plan(state, publisher)
                await publisher.close()
            await self.home(request, state)
        except SLACK_FAILURES as exc:  # best effort
            log.warning("final plan of %s not drawn: %s", request.key, slack_error(exc))

    async def _failed_plan(self, request: ResearchRequestMsg) -> None:
        try:
            state = await load_state(self.services.store, self.payload.run_id,
                                     self.services.settings)
        except RunNotFound:
            return
        state.status = "failed"
        await self.final_plan(request, state)

    async def status(self, request: ResearchRequestMsg, status: str) -> None:
        updated = await self.services.requests.set_status(request.key, status)
        await msgs.show_status(self.services.slack, updated or request, status)


class RunSteers(ThreadSteers):
    """A research's steers as its run reads them: each writer is told, to them only, what
    their steer changed; once no step is left, the steers no step read are queued as
    follow-ups (a job id per message: one the bot queued already, a question, is not queued
    twice) and their writers told so."""

    def __init__(self, services: Services, request: ResearchRequestMsg) -> None:
        super().__init__(services.redis, request.key)
        self.services = services
        self.request = request

    async def tell(self, steer: Steer, text: str) -> None:
        await self._ephemeral(steer.who, escape(text))

    async def close(self, read: int) -> list[Steer]:
        late = await super().close(read)
        w = words_of(self.request)
        for steer in late:
            if steer.text.strip() and steer.who and steer.ts:
                await self.services.queue.followup(self.request, steer.ts, steer.who,
                                                   steer.text)
                await self._ephemeral(steer.who, w(LATE_READ))
        return late

    async def _ephemeral(self, user: str, text: str) -> None:
        """Best effort: a writer who is not told still sees the plan."""
        try:
            await self.services.slack.chat_postEphemeral(
                channel=self.request.channel, user=user, thread_ts=self.request.thread_ts,
                text=text)
        except SLACK_FAILURES as exc:
            log.info("could not tell %s what their steer did: %s", user, slack_error(exc))


def _count_run(state: RunState) -> None:
    """A finished run's steps and active time (across resumes: the budget's checkpoint)."""
    RUN_STEPS.labels(state.mode).observe(state.step)
    active_s = active_time_s(state)
    if active_s is not None:
        RUN_SECONDS.labels(state.mode).observe(active_s)


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value
