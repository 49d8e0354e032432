"""The team policy as a worker applies it (docs/teams.md): a new run is admitted against the
spending caps (or refused with a reply naming the cap), each run's spending is charged to its
requester and channel, Deep follows the channel's rule, and the plan preview is made here
(one planner call, charged like any other)."""

from __future__ import annotations

import dataclasses
import logging
import time

from contract.blocks import words_of
from contract.estimates import record_run
from contract.mrkdwn import NO_PARSE
from contract.plan_blocks import preview_blocks, preview_text
from contract.queue import JobPayload
from contract.requests import CHOOSING, FAILED, PLANNING, PREVIEW, ResearchRequestMsg
from research_core.budget.caps import CapBreach
from research_core.loop.memory.state import RunState
from research_core.loop.planning.plan_preview import preview_plan
from research_core.settings import Settings
from research_core.store.usage import RunCaps, UsageStore
from research_core.wording import ENGLISH_WORDS, Words
from workers import thread_messages as msgs
from workers.services import Services

log = logging.getLogger(__name__)


def job_settings(settings: Settings, channel: str) -> Settings:
    """The settings a run in `channel` works under: Deep allowed as the policy says there."""
    allowed = settings.policy.deep_allowed(channel, settings.budget.deep_allowed)
    return dataclasses.replace(settings, budget=dataclasses.replace(settings.budget,
                                                                    deep_allowed=allowed))


def run_caps(services: Services, run_id: str, request: ResearchRequestMsg) -> RunCaps:
    return RunCaps(UsageStore(services.store), run_id, request.user, request.channel,
                   services.settings.policy.caps)


def refusal_text(breach: CapBreach, preview: bool = False, w: Words = ENGLISH_WORDS) -> str:
    """Why a run (or a plan preview) is refused: the cap reached, in the language of `w`."""
    text = breach.message(w)
    why = f"{text[0].upper()}{text[1:]}"
    return w("Sorry, I cannot preview a plan: {why}.", why=why) if preview \
        else w("Sorry, I cannot start this research: {why}.", why=why)


async def admit(services: Services, request: ResearchRequestMsg, run_id: str) -> str | None:
    """Count a new run against its caps; the refusal posted in the thread when one is
    reached (the request then fails), else None."""
    breach = await UsageStore(services.store).admit_run(
        run_id, request.user, request.channel, services.settings.policy.caps)
    if breach is None:
        return None
    reply = refusal_text(breach, w=words_of(request))
    await services.slack.chat_postMessage(channel=request.channel, thread_ts=request.thread_ts,
                                          text=reply)
    updated = await services.requests.set_status(request.key, FAILED)
    await msgs.show_status(services.slack, updated or request, FAILED)
    log.info("run %s refused: %s", run_id, breach.message())
    return reply


async def remember_time(services: Services, request: ResearchRequestMsg,
                        state: RunState) -> None:
    """How long the finished run worked, for the picker's line (best effort)."""
    took_s = active_time_s(state)
    if took_s is not None:
        deep = state.extra.budget.get("deep_state") == "deep"
        await record_run(services.redis, request.team, deep, took_s)


def active_time_s(state: RunState) -> float | None:
    """The run's active time across resumes, as its budget's checkpoint keeps it."""
    active_s = state.extra.budget.get("active_time_used_s")
    return float(active_s) if isinstance(active_s, int | float) else None


async def preview_job(services: Services, payload: JobPayload) -> str:
    """The plan preview of a request: one decomposition, shown with Start and Edit."""
    request = await services.requests.load(payload.request_key)
    if request is None or request.status != PLANNING:
        return "no preview wanted"
    usage, caps = UsageStore(services.store), services.settings.policy.caps
    breach = await usage.check(request.user, request.channel, caps)
    if breach is not None:
        await services.slack.chat_postMessage(
            channel=request.channel, thread_ts=request.thread_ts,
            text=refusal_text(breach, preview=True, w=words_of(request)))
        updated = await services.requests.set_status(request.key, FAILED)
        await msgs.show_status(services.slack, updated or request, FAILED)
        return f"preview refused: {breach.message()}"
    preview = await preview_plan(services.settings, services.tiers, request.question)
    await usage.charge(f"preview-{payload.run_id}", request.user, request.channel,
                       preview.tokens, preview.cost_usd, caps)
    shown = await services.requests.update(request.key, lambda r: r.with_(
        status=PREVIEW, plan=preview.subquestions, preview_at=time.time())
        if r.status == PLANNING else None)
    if shown is None:
        return "preview no longer wanted"
    try:
        posted = await services.slack.chat_postMessage(
            channel=shown.channel, thread_ts=shown.thread_ts, text=preview_text(shown),
            blocks=preview_blocks(shown), **NO_PARSE)
    except BaseException:  # not shown: the requester can pick again
        await services.requests.update(request.key, lambda r: r.with_(status=CHOOSING))
        raise
    await services.requests.update(request.key, lambda r: r.with_(
        preview_ts=str(posted.get("ts") or "") or None))
    return f"plan previewed: {len(preview.subquestions)} sub-questions"
