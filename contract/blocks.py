"""The Block Kit messages of a request's thread, shared by the bot and the workers.

The picker (question, Auto/Standard/Deep, what each costs) becomes the request's status message
once a depth is chosen: "Depth: Deep — queued/researching/finished/stopped", with a Stop button
while the research may still be stopped.
"""

from __future__ import annotations

import re
from typing import Any

from contract.mrkdwn import escape, mention, one_line
from contract.requests import (
    FAILED,
    FINISHED,
    PLANNING,
    PREVIEW,
    QUEUED,
    RUNNING,
    STOPPED,
    ResearchRequestMsg,
)
from research_core.wording import ENGLISH_WORDS, N_, Words, for_question

Block = dict[str, Any]

SECTION_TEXT_LIMIT = 3000
QUESTION_SHOWN_CHARS = 2500
STOP_ACTION = "stop_research"

DEPTHS: dict[str, str] = {"auto": N_("Auto"), "standard": N_("Standard"), "deep": N_("Deep")}
DEPTH_ACTIONS: dict[str, str] = {f"depth_{depth}": depth for depth in DEPTHS}
STATUS_WORDS = {QUEUED: N_("queued"), RUNNING: N_("researching…"), FINISHED: N_("finished"),
                STOPPED: N_("stopped"), FAILED: N_("failed"), PLANNING: N_("planning…"),
                PREVIEW: N_("plan previewed"), "stopping…": N_("stopping…")}
STOPPABLE = (QUEUED, RUNNING)
PREVIEW_ACTION = "depth_preview"  # the picker's fourth choice (contract/plan_blocks.py)
PREVIEW_LABEL = N_("Preview plan")


def shown(question: str) -> str:
    """The question as the thread quotes it: one line (a newline cannot start a line of the
    bot's own), at most QUESTION_SHOWN_CHARS, escaped (nothing in it is a live mention)."""
    line = one_line(question)
    if len(line) > QUESTION_SHOWN_CHARS:
        line = line[:QUESTION_SHOWN_CHARS] + "…"
    return escape(line)


def _mrkdwn(text: str) -> Block:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text[:SECTION_TEXT_LIMIT]}}


def _context(text: str) -> Block:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text[:SECTION_TEXT_LIMIT]}]}


def button(action_id: str, label: str, value: str, style: str | None = None) -> Block:
    button: Block = {"type": "button", "action_id": action_id, "value": value,
                     "text": {"type": "plain_text", "text": label}}
    if style:
        button["style"] = style
    return button


DEPTHS_LINE = N_("*Auto*: starts at Standard and goes Deep when the question needs it · "
                 "*Standard*: a quick answer from the best sources · *Deep*: more sources, "
                 "each part checked before it is shown, slower")


def words_of(request: ResearchRequestMsg) -> Words:
    """The words of a request's thread: its question's language."""
    return for_question(request.question)


def request_line(request: ResearchRequestMsg) -> str:
    w = words_of(request)
    return w("*Research request from {who}:*", who=mention(request.user)) + \
        f"\n>{shown(request.question)}"


def picker_blocks(request: ResearchRequestMsg, estimate: str = "") -> list[Block]:
    """The question, the three depth buttons and "Preview plan" (their value is the request
    key), what each depth does, and how long recent runs took (`estimate`, if any), in the
    question's language."""
    w = words_of(request)
    buttons = [button(f"depth_{depth}", w(label), request.key)
               for depth, label in DEPTHS.items()]
    buttons[0]["style"] = "primary"
    buttons.append(button(PREVIEW_ACTION, w(PREVIEW_LABEL), request.key))
    text = request_line(request) + "\n" + w("How deep should I go?")
    blocks = [_mrkdwn(text), {"type": "actions", "block_id": "depth_picker",
                              "elements": buttons}, _context(w(DEPTHS_LINE))]
    return blocks + ([_context(estimate)] if estimate else [])


def picker_text(request: ResearchRequestMsg) -> str:
    w = words_of(request)
    choices = " / ".join(w(label) for label in (*DEPTHS.values(), PREVIEW_LABEL))
    return w("How deep should I research this?") + " " + choices


def status_text(request: ResearchRequestMsg, status: str) -> str:
    """"Depth: Deep — researching…" in the request's language."""
    w, depth = words_of(request), request.depth or "auto"
    return w("Depth: {depth} — {status}", depth=w(DEPTHS.get(depth, depth)),
             status=w(STATUS_WORDS.get(status, status)))


def status_blocks(request: ResearchRequestMsg, status: str) -> list[Block]:
    """The chosen request: its question, depth and state, and Stop while it can stop."""
    blocks = [_mrkdwn(request_line(request)), _context(status_text(request, status))]
    if status in STOPPABLE:
        blocks.append({"type": "actions", "block_id": "research_control", "elements": [
            button(STOP_ACTION, words_of(request)("Stop"), request.key, style="danger")]})
    return blocks


def final_blocks(title: str, sections: list[tuple[str, str]]) -> list[Block]:
    """The closing message: a header, then its sections, titled where a heading is given."""
    blocks: list[Block] = [{"type": "header", "text": {"type": "plain_text",
                                                       "text": title[:150]}}]
    for heading, body in sections:
        blocks.append(_mrkdwn(f"*{heading}*\n{body}" if heading else body))
    return blocks


FEEDBACK_ACTION = "answer_feedback"
VERDICTS = ("positive", "negative")
_FEEDBACK_VALUE = re.compile(r"(positive|negative):(s[0-9a-f]{11}):([A-Za-z0-9._-]{1,80})")


def feedback_row(run_id: str, part_key: str, w: Words = ENGLISH_WORDS) -> Block:
    """Thumbs up / down under an AI answer (the report, a follow-up answer): each button's
    value names the verdict, the run and the answer part."""
    def button(verdict: str, label: str, hint: str) -> Block:
        return {"text": {"type": "plain_text", "text": label}, "accessibility_label": hint,
                "value": f"{verdict}:{run_id}:{part_key}"}

    return {"type": "context_actions", "elements": [{
        "type": "feedback_buttons", "action_id": FEEDBACK_ACTION,
        "positive_button": button("positive", w("Good answer"), w("Mark this answer as good")),
        "negative_button": button("negative", w("Bad answer"), w("Mark this answer as bad"))}]}


def parse_feedback(value: object) -> tuple[str, str, str] | None:
    """(verdict, run id, part key) of a feedback button's value; None for anything else."""
    if not isinstance(value, str):
        return None
    found = _FEEDBACK_VALUE.fullmatch(value)
    return (found.group(1), found.group(2), found.group(3)) if found else None
