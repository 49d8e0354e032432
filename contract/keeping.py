"""Keeping a research after its thread scrolls away (issue 46): "Save as canvas" and "Export as
Markdown" under its report, and `/research canvas|export [RUN_ID]`, shared by the bot (which
acks and queues) and the workers (which build the document and call Slack).

Each click is one job whose id names the run and the click's `action_ts`, so a click Slack
delivers twice is queued once (ARQ drops a job id it already has). The jobs hold no run's
lease and are not tracked as active: a canvas is made at most once per run (its id is kept in
the run's outbox, `workers.canvas_export`), and a lost job is a click to click again.
"""

from __future__ import annotations

import re
import time
from typing import Any

from arq.connections import ArqRedis

from contract.blocks import button
from contract.metrics import JOBS_QUEUED
from contract.queue import JOB_FUNCTION, JobPayload
from contract.requests import run_id_for
from research_core.wording import ENGLISH_WORDS, N_, Words

Block = dict[str, Any]

CANVAS_ACTION = "save_canvas"
EXPORT_ACTION = "export_markdown"
CANVAS = "canvas"  # the job kinds (JobPayload.kind)
EXPORT = "export"
KEEP_KINDS = (CANVAS, EXPORT)
KIND_OF_ACTION = {CANVAS_ACTION: CANVAS, EXPORT_ACTION: EXPORT}
CANVAS_LABEL = N_("Save as canvas")
EXPORT_LABEL = N_("Export as Markdown")
RUN_ID = re.compile(r"s[0-9a-f]{11}")
_COMMAND = re.compile(r"^\s*(canvas|export)(?:\s+(s[0-9a-f]{11}))?\s*$", re.IGNORECASE)
_CLICK = re.compile(r"[0-9A-Za-z._-]{1,60}")


def keep_row(run_id: str, w: Words = ENGLISH_WORDS) -> Block:
    """The buttons under a report: each one's value is the run."""
    return {"type": "actions", "block_id": "keep_research", "elements": [
        button(CANVAS_ACTION, w(CANVAS_LABEL), run_id),
        button(EXPORT_ACTION, w(EXPORT_LABEL), run_id)]}


def run_of(value: object) -> str | None:
    """The run id a keep button's value names (None for anything else)."""
    return value if isinstance(value, str) and RUN_ID.fullmatch(value) else None


def parse_keep_command(text: str) -> tuple[str, str | None] | None:
    """(job kind, run id or None) of `/research canvas [RUN_ID]` or `/research export …`;
    None when the command asks a question instead."""
    found = _COMMAND.match(text)
    if found is None:
        return None
    return found.group(1).lower(), found.group(2)


def keep_payload(kind: str, request_key: str, thread_ts: str, user: str, team: str | None,
                 click: str = "") -> JobPayload:
    """A canvas or export job for the request's run, answered in `thread_ts`; `click` (the
    click's action_ts, or the command's trigger) names the job, so a redelivered click is
    one job. The run id in the job is the request's (`JobPayload.run_id`)."""
    now = f"{time.time():.6f}"
    click = click if _CLICK.fullmatch(click) else now
    job = f"{kind}:{run_id_for(request_key)}:{user}:{click}"
    return JobPayload(kind, job, request_key, message_ts=thread_ts, voter=user,
                      team=team or "", clicked_at=now)


async def queue_keep(pool: ArqRedis, payload: JobPayload) -> bool:
    """Queue the job (True when this call queued it; a redelivered click's is dropped)."""
    job = await pool.enqueue_job(JOB_FUNCTION, payload.to_dict(), _job_id=payload.job_id)
    if job is not None:
        JOBS_QUEUED.labels(payload.kind).inc()
    return job is not None
