"""The worker's own messages in a request's thread: the status message (the former picker)
and the closing message (finished, stopped or failed). Closing messages go through the
store's outbox, so a retried or resumed job never posts one twice. What they quote from
sources, the report or an error is escaped for mrkdwn."""

from __future__ import annotations

import logging

from slack_sdk.web.async_client import AsyncWebClient

from contract.blocks import final_blocks, status_blocks, status_text
from contract.mrkdwn import NO_PARSE, escape, mention
from contract.requests import ResearchRequestMsg
from contract.slack_client import SLACK_FAILURES, slack_error
from contract.watch_blocks import watch_menu
from research_core.delivery.publications import Outbox, Publication
from research_core.loop.memory.state import RunState
from research_core.loop.report.reporter import Report
from research_core.wording import ENGLISH, ENGLISH_WORDS, Words, for_question
from workers.answer_blocks import post_options
from workers.slack_outbox import find_posted

log = logging.getLogger(__name__)

Blocks = list[dict[str, object]]


async def show_status(slack: AsyncWebClient, request: ResearchRequestMsg, status: str) -> None:
    """Edit the status message: best effort (a deleted or uneditable message, or Slack being
    away, never fails the research); no-op when the picker's ts was never recorded."""
    if not request.picker_ts:
        return
    try:
        await slack.chat_update(channel=request.channel, ts=request.picker_ts,
                                text=status_text(request, status),
                                blocks=status_blocks(request, status), **NO_PARSE)
    except SLACK_FAILURES as exc:
        log.warning("status message %s not updated to %s: %s", request.picker_ts, status,
                    slack_error(exc))


async def post_once(slack: AsyncWebClient, outbox: Outbox, request: ResearchRequestMsg,
                    note: Publication, blocks: Blocks) -> str | None:
    """Post `note` in the thread exactly once; returns its ts. The intent is recorded first
    and the message carries its key, so a post whose record was lost is found, not repeated."""
    sent = await outbox.sent_publication(note.key)
    if sent is not None:
        return sent.channel_id
    if await outbox.pending_publication(note.key) is not None:
        found = await find_posted(slack, request.channel, request.thread_ts, note.key)
        if found is not None:
            note.channel_id = found
            await outbox.record_publication(note)
            return found
    else:
        await outbox.record_intent(note)
    resp = await slack.chat_postMessage(channel=request.channel, thread_ts=request.thread_ts,
                                        text=note.text, blocks=blocks,
                                        **post_options(note.key))
    note.channel_id = str(resp["ts"])
    await outbox.record_publication(note)
    return note.channel_id


CAP_REACHED = "spending cap reached"


def finished_message(state: RunState, report: Report,
                     request_key: str = "") -> tuple[Publication, Blocks]:
    """The closing message, in the question's language: that the research finished, how many
    sources the answer cites and how many of its claims are flagged (the report above lists
    both), why it ended early when a spending cap ended it, and the Watch menu when the
    request is named. What it cost is the operator's (the Home tab, `redsearch usage`,
    `/metrics`), not the thread's."""
    w = for_question(state.question)
    cited = len({s.source_id for s in report.sources if s.number in report.cited})
    line = w.count(cited, "{n} source cited", "{n} sources cited")
    if report.flagged:
        line += " · " + w.count(len(report.flagged), "{n} claim flagged as unsupported, "
                                "listed under the report", "{n} claims flagged as "
                                "unsupported, listed under the report")
    sections = [("", line)]
    final = str(state.extra.budget.get("final_reason") or "")
    if final.startswith(CAP_REACHED):  # a spending cap ended the research (docs/teams.md)
        # the reason is kept in English (the run's checkpoint); the progress note above
        # names the cap in the thread's language
        why = final[0].upper() + final[1:] if w.language == ENGLISH else w(
            "A spending cap was reached (the progress note above names it)")
        sections.insert(0, (w("Ended early"), w(
            "{why}; the report was written from what was found until then.",
            why=escape(why))))
    title = w("Research finished")
    blocks = final_blocks(title, sections)
    if request_key:
        blocks.append(watch_menu(request_key, w))
    return Publication(state.run_id, "final", 1, "final", f"{title}: {line}."), blocks


def stopped_message(state: RunState, request: ResearchRequestMsg,
                    job_id: str) -> tuple[Publication, Blocks]:
    w = for_question(request.question)
    title = w("Research stopped")
    parts = len({p.part_key for p in state.publications if p.kind == "part"})
    kept = (w.count(parts, "The answer part published above is kept.",
                    "The {n} answer parts published above are kept.") if parts else
            w("Nothing had been published yet: no answer part was ready before it stopped."))
    body = w("{who} pressed Stop.", who=mention(request.user)) + " " + kept
    note = Publication(state.run_id, f"stopped-{job_id}", 1, "final", f"{title}. {body}")
    return note, final_blocks(title, [("", body)])


def failed_message(run_id: str, job_id: str, why: str, followup: bool = False,
                   w: Words = ENGLISH_WORDS) -> tuple[Publication, Blocks]:
    what = w("This follow-up could not be answered") if followup else w("Research failed")
    text = f"{what}: {escape(why)}"
    note = Publication(run_id, f"failed-{job_id}", 1, "final", text)
    return note, [{"type": "section", "text": {"type": "mrkdwn", "text": text[:3000]}}]
