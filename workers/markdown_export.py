"""Export as Markdown (issue 46): the run's document (`contract.research_document`, the one the
canvas shows) uploaded to the thread as a `.md` file with `files_upload_v2`. Each click is one
file: the upload is recorded in the run's outbox under the click's job, so a job that runs
again does not upload it twice. A click Slack fails is answered in the thread
(`workers.kept_research.why_failed`).
"""

from __future__ import annotations

import hashlib
import logging

from contract.mrkdwn import mention
from contract.research_document import ResearchDocument
from contract.slack_client import slack_error
from research_core.delivery.publications import Publication
from research_core.wording import Words, for_question
from workers.kept_research import KEEP_FAILURES, Keeper, KeepJob, why_failed

log = logging.getLogger(__name__)

FILE = "file"  # the outbox's record of an uploaded export: the file's id


async def export_markdown(keeper: Keeper, job: KeepJob, job_id: str) -> str:
    """The job: the document uploaded once to the thread; a one-line outcome."""
    async with keeper.run_lock(job.run_id):
        loaded = await keeper.document(job)
        if loaded is None:
            return "not exported: no report"
        state, document = loaded
        done = Publication(state.run_id, "export-" + hashlib.sha256(job_id.encode()).hexdigest(),
                           1, FILE, document.filename)
        if await keeper.store.sent_publication(done.key) is not None:
            return "already exported"
        w = for_question(state.question)
        try:
            done.channel_id = await _upload(keeper, job, document, w)
        except KEEP_FAILURES as exc:
            log.warning("export of %s not uploaded: %s", job.run_id, slack_error(exc))
            await keeper.reply(job, w("I could not export this research as a file: {why}.",
                                      why=why_failed(exc, w)))
            return f"not exported: {slack_error(exc)}"
        await keeper.store.record_publication(done)
        return f"exported as {done.channel_id}"


async def _upload(keeper: Keeper, job: KeepJob, document: ResearchDocument, w: Words) -> str:
    """The file shared in the thread with a line saying who asked; its id."""
    resp = await keeper.slack.files_upload_v2(
        channel=job.channel, thread_ts=job.thread_ts, filename=document.filename,
        content=document.markdown.encode(), title=document.title,
        initial_comment=w("{who} exported this research as Markdown.", who=mention(job.user)))
    return str((resp.get("file") or {}).get("id") or "")
