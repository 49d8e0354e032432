"""The plan preview in the thread and its Edit modal (docs/teams.md), shared by the bot and
the workers: the sub-questions with Start and Edit (each button's value is the request key),
and a modal with the sub-questions as editable lines and the depth to run at; all in the
question's language."""

from __future__ import annotations

from typing import Any

from contract.blocks import DEPTHS, button, shown, words_of
from contract.mrkdwn import escape, mention, one_line
from contract.requests import ResearchRequestMsg

Block = dict[str, Any]

PLAN_START_ACTION = "plan_start"
PLAN_EDIT_ACTION = "plan_edit"
PLAN_MODAL = "plan_modal"
PLAN_BLOCK, PLAN_INPUT = "plan_lines", "lines"
DEPTH_BLOCK, DEPTH_INPUT = "plan_depth", "depth"


def preview_text(request: ResearchRequestMsg) -> str:
    w = words_of(request)
    return w("Plan preview: {questions}",
             questions=w("; ").join(one_line(q) for q in request.plan or []))


def preview_blocks(request: ResearchRequestMsg, cost_line: str = "") -> list[Block]:
    """The previewed plan: numbered sub-questions, the depth it would run at, Start and Edit."""
    w = words_of(request)
    lines = "\n".join(f"{i}. {escape(one_line(q))}"
                      for i, q in enumerate(request.plan or [], 1))
    depth = w(DEPTHS.get(request.depth or "auto", DEPTHS["auto"]))
    blocks: list[Block] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": (
            w("*Plan for {who}:*", who=mention(request.user))
            + f"\n>{shown(request.question)}\n{lines}")[:3000]}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": (
            w("Depth: {depth} · Start runs this plan; Edit changes the sub-questions or the "
              "depth · the preview expires after a day", depth=depth)
            + (f" · {cost_line}" if cost_line else ""))[:3000]}]},
        {"type": "actions", "block_id": "plan_control", "elements": [
            button(PLAN_START_ACTION, w("Start"), request.key, "primary"),
            button(PLAN_EDIT_ACTION, w("Edit"), request.key)]},
    ]
    return blocks


def started_blocks(request: ResearchRequestMsg) -> list[Block]:
    """The preview once started: the plan stays, the buttons go."""
    w = words_of(request)
    done: Block = {"type": "context", "elements": [{"type": "mrkdwn",
                                                    "text": w("Started with this plan.")}]}
    return [*preview_blocks(request)[:1], done]


def plan_modal(request: ResearchRequestMsg, limit: int) -> Block:
    """The Edit modal: one sub-question per line (at most `limit`), and the depth."""
    w = words_of(request)
    options = [{"text": {"type": "plain_text", "text": w(label)}, "value": depth}
               for depth, label in DEPTHS.items()]
    current = next(o for o in options if o["value"] == (request.depth or "auto"))
    return {
        "type": "modal", "callback_id": PLAN_MODAL, "private_metadata": request.key,
        "title": {"type": "plain_text", "text": w("Edit the plan")},
        "submit": {"type": "plain_text", "text": w("Save")},
        "close": {"type": "plain_text", "text": w("Cancel")},
        "blocks": [
            {"type": "input", "block_id": PLAN_BLOCK,
             "label": {"type": "plain_text", "text": w(
                 "Sub-questions, one per line (at most {n})", n=limit)},
             "element": {"type": "plain_text_input", "action_id": PLAN_INPUT,
                         "multiline": True, "initial_value": "\n".join(request.plan or [])}},
            {"type": "input", "block_id": DEPTH_BLOCK,
             "label": {"type": "plain_text", "text": w("Depth")},
             "element": {"type": "static_select", "action_id": DEPTH_INPUT,
                         "options": options, "initial_option": current}},
        ],
    }


def submitted(view: Block) -> tuple[str, str]:
    """(the lines' text, the depth) of a submitted Edit modal ("" for what is missing)."""
    values = view.get("state", {}).get("values", {}) if isinstance(view, dict) else {}
    lines = values.get(PLAN_BLOCK, {}).get(PLAN_INPUT, {}).get("value") or ""
    option = values.get(DEPTH_BLOCK, {}).get(DEPTH_INPUT, {}).get("selected_option") or {}
    depth = option.get("value") if isinstance(option, dict) else ""
    return (lines if isinstance(lines, str) else "",
            depth if isinstance(depth, str) and depth in DEPTHS else "")
