"""Save as canvas (issue 46): the run's document becomes a Slack canvas, once per run.

The first click creates it (`canvases.create`, markdown), lets the channel read it
(`canvases.access.set`; a free workspace, which allows no standalone canvas, gets it as a tab
of the channel instead) and posts its link in the thread. The canvas's id is recorded in the
run's outbox the moment Slack gives it, so a click that comes again (or a job that runs again)
finds it: then the canvas is brought up to date when the parts were revised since
(`canvases.edit`, the whole document replaced) and the person is shown its link. A click that
Slack fails is answered in the thread (`workers.kept_research.why_failed`); Slack's client
does not repeat a `canvases.create` that failed with a 5xx, which may have created one.
"""

from __future__ import annotations

import hashlib
import logging

from slack_sdk.errors import SlackApiError

from contract.mrkdwn import escape, link, mention
from contract.research_document import ResearchDocument
from contract.slack_client import slack_error
from research_core.delivery.publications import Publication
from research_core.loop.memory.state import RunState
from research_core.wording import Words, for_question
from workers.kept_research import KEEP_FAILURES, Keeper, KeepJob, why_failed
from workers.thread_messages import post_once

log = logging.getLogger(__name__)

CANVAS = "canvas"  # the outbox's record of a run's canvas: its id, digest and how it is shared
STANDALONE_REFUSED = frozenset({"free_teams_cannot_create_non_tabbed_canvases",
                                "free_teams_cannot_create_standalone_canvases"})
GONE = frozenset({"canvas_not_found", "canvas_deleted", "file_not_found", "file_deleted"})
SHARED, TABBED = "shared", "tabbed"


async def save_canvas(keeper: Keeper, job: KeepJob) -> str:
    """The job: the run's canvas made or brought up to date; a one-line outcome."""
    async with keeper.run_lock(job.run_id):
        loaded = await keeper.document(job)
        if loaded is None:
            return "canvas not saved: no report"
        state, document = loaded
        w = for_question(state.question)
        try:
            return await Canvas(keeper, job, w).keep(state, document)
        except KEEP_FAILURES as exc:
            log.warning("canvas of %s not saved: %s", job.run_id, slack_error(exc))
            await keeper.reply(job, w("I could not save this research as a canvas: {why}.",
                                      why=why_failed(exc, w)))
            return f"canvas not saved: {slack_error(exc)}"


def kept_canvas(state: RunState) -> Publication | None:
    """The run's canvas as last recorded (None: none was made)."""
    found = [p for p in state.publications if p.kind == CANVAS and p.channel_id]
    return max(found, key=lambda p: p.version) if found else None


def digest(document: ResearchDocument) -> str:
    return hashlib.sha256(document.body.encode()).hexdigest()[:16]


class Canvas:
    def __init__(self, keeper: Keeper, job: KeepJob, w: Words) -> None:
        self.keeper = keeper
        self.slack = keeper.slack
        self.job = job
        self.w = w

    async def keep(self, state: RunState, document: ResearchDocument) -> str:
        kept = kept_canvas(state)
        again = kept is not None and await self._refreshed(kept, document)
        if kept is None or not again:
            kept = await self._create(state.run_id, kept.version + 1 if kept else 1, document)
        await self._shared(kept)
        link = await self._link(kept, document)
        text = self.w("{who} saved this research as a canvas: {link}",
                      who=mention(self.job.user), link=link)
        note = Publication(state.run_id, f"canvas-{kept.channel_id}", 1, "final", text)
        await post_once(self.slack, self.keeper.store, self.job.thread(state.question), note,
                        [{"type": "section", "text": {"type": "mrkdwn", "text": text}}])
        if not again:
            return f"canvas {kept.channel_id} saved"
        await self.keeper.tell(self.job, self.w(
            "This research is already saved as a canvas: {link}. It shows the latest version "
            "of every answer part.", link=link))
        return f"canvas {kept.channel_id} kept up to date"

    async def _refreshed(self, kept: Publication, document: ResearchDocument) -> bool:
        """The kept canvas showing `document` (replaced when it changed); False when it is
        gone (deleted in Slack), so a new one is made."""
        if kept.text == digest(document):
            return True
        change = {"operation": "replace",
                  "document_content": {"type": "markdown", "markdown": document.body}}
        try:
            await self.slack.canvases_edit(canvas_id=str(kept.channel_id), changes=[change])
        except SlackApiError as exc:
            if slack_error(exc) in GONE:
                return False
            raise
        kept.version, kept.text = kept.version + 1, digest(document)
        await self.keeper.store.record_publication(kept)
        return True

    async def _create(self, run_id: str, version: int,
                      document: ResearchDocument) -> Publication:
        """A new canvas, recorded before anything else can fail: standalone, or where the
        workspace allows none (a free one), a tab of the channel."""
        content = {"type": "markdown", "markdown": document.body}
        try:
            resp = await self.slack.canvases_create(title=document.title,
                                                    document_content=content)
            how = ""
        except SlackApiError as exc:
            if slack_error(exc) not in STANDALONE_REFUSED:
                raise
            resp = await self.slack.canvases_create(title=document.title,
                                                    document_content=content,
                                                    channel_id=self.job.channel)
            how = TABBED
        made = Publication(run_id, CANVAS, version, CANVAS, digest(document), reason=how,
                           channel_id=str(resp["canvas_id"]))
        await self.keeper.store.record_publication(made)
        return made

    async def _shared(self, kept: Publication) -> None:
        """The channel may read the canvas (once; a tab of the channel is already its)."""
        if kept.reason in (SHARED, TABBED):
            return
        await self.slack.canvases_access_set(canvas_id=str(kept.channel_id),
                                             access_level="read",
                                             channel_ids=[self.job.channel])
        kept.reason = SHARED
        await self.keeper.store.record_publication(kept)

    async def _link(self, kept: Publication, document: ResearchDocument) -> str:
        """The canvas as a link in mrkdwn (its title in bold when Slack gives no link)."""
        try:
            info = await self.slack.files_info(file=str(kept.channel_id))
            permalink = str((info.get("file") or {}).get("permalink") or "")
        except KEEP_FAILURES as exc:
            log.info("no link for canvas %s: %s", kept.channel_id, slack_error(exc))
            permalink = ""
        return link(permalink, document.title) or f"*{escape(document.title)}*"
