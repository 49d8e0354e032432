"""Keeping a research (issue 46): "Save as canvas" and "Export as Markdown" under a report, and
`/research canvas [RUN_ID]` / `/research export [RUN_ID]`. The bot finds which research is
meant and queues one job for a worker (`contract.keeping`), which makes the canvas or the file
and answers in the research's thread; the person is told at once, to themselves, that it is
under way.

A button names its run; the research is the thread's request (or, after Redis forgot the
request, the request that started the thread, when its run is the one named). The command
takes the person's own recent research: the run named, or the newest that ended.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack_fields import channel_of, clicker_of, object_of, slack_id
from bot.start import Starter
from contract.blocks import words_of
from contract.home import recent_runs
from contract.keeping import (
    CANVAS,
    KIND_OF_ACTION,
    keep_payload,
    parse_keep_command,
    queue_keep,
    run_of,
)
from contract.keys import request_key
from contract.queue import JobQueue
from contract.requests import ENDED, run_id_for
from contract.slack_client import SLACK_FAILURES, slack_error
from research_core.wording import ENGLISH_WORDS, N_, Words

JSON = dict[str, Any]
log = logging.getLogger(__name__)

SAVING = N_("Saving this research as a canvas; its link will follow in the thread.")
EXPORTING = N_("Exporting this research as a Markdown file into the thread.")
UNKNOWN = N_("I no longer know which research this thread holds, so I cannot keep it.")
NO_QUEUE = N_("Keeping research is not available here: no worker queue is configured.")

def register(app: AsyncApp, starter: Starter) -> None:
    keeping = Keeping(starter)
    for action in KIND_OF_ACTION:
        app.action(action)(keeping.on_click)


class Keeping:
    def __init__(self, starter: Starter) -> None:
        self.starter = starter

    async def on_click(self, ack: AsyncAck, body: JSON, action: JSON,
                       client: AsyncWebClient) -> None:
        """Save as canvas / Export as Markdown: queued, and the clicker told so."""
        await ack()
        kind, run_id = KIND_OF_ACTION.get(str(action.get("action_id"))), run_of(
            action.get("value"))
        user, channel, thread_ts = clicker_of(body), channel_of(body), _thread_of(body)
        if kind is None or run_id is None or user is None or channel is None \
                or thread_ts is None:
            log.warning("ignored a keep click without a usable run, user or thread")
            return
        found = await self._request(channel, thread_ts, run_id)
        text = ENGLISH_WORDS(UNKNOWN) if found is None else await queued(
            self.starter, kind, found[0], thread_ts, user, _team(body),
            str(action.get("action_ts") or ""), found[1])
        try:
            await client.chat_postEphemeral(channel=channel, user=user, thread_ts=thread_ts,
                                            text=text)
        except SLACK_FAILURES as exc:
            log.info("keep note not shown: %s", slack_error(exc))

    async def _request(self, channel: str, thread_ts: str,
                       run_id: str) -> tuple[str, Words] | None:
        """The key of the thread's request and its words, or (forgotten by Redis) the key of
        the request that started the thread when it is the named run's; None when neither
        is."""
        request = await self.starter.requests.for_thread(channel, thread_ts)
        if request is not None and request.run_id == run_id:
            return request.key, words_of(request)
        key = request_key(channel, thread_ts)
        return (key, ENGLISH_WORDS) if run_id_for(key) == run_id else None


async def queued(starter: Starter, kind: str, key: str, thread_ts: str, user: str,
                 team: str | None, click: str, w: Words) -> str:
    """Queue the job; what the person is told."""
    if not isinstance(starter.queue, JobQueue):
        return w(NO_QUEUE)
    await queue_keep(starter.queue.pool, keep_payload(kind, key, thread_ts, user, team, click))
    return w(SAVING if kind == CANVAS else EXPORTING)


async def from_command(starter: Starter, text: str, user: str, team: str | None) -> str | None:
    """`/research canvas|export [RUN_ID]` queued for the person's own research; the command's
    answer (None: the text asks a question instead)."""
    keep = parse_keep_command(text)
    if keep is None:
        return None
    kind, run_id = keep
    ended = [r for r, _ in await recent_runs(starter.requests.redis, user) if r.status in ENDED]
    request = next((r for r in ended if run_id in (None, r.run_id)), None)
    if request is None:
        w = ENGLISH_WORDS
        if run_id is None:
            return w("You have no recent research that has ended; the buttons under a report "
                     "keep any research.")
        return w("I find no research {run} among your recent research that has ended; the "
                 "buttons under a report keep any research.", run=run_id)
    return await queued(starter, kind, request.key, request.thread_ts, user, team, "",
                        words_of(request))


def _thread_of(body: JSON) -> str | None:
    """The thread of the clicked message (a report is a reply in its thread)."""
    return slack_id(object_of(body, "container").get("thread_ts")) or slack_id(
        object_of(body, "message").get("thread_ts"))


def _team(body: JSON) -> str | None:
    team = body.get("team")
    return slack_id(team.get("id") if isinstance(team, dict) else body.get("team_id"))
