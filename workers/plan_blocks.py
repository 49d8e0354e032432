"""The run's plan (`research_core.plan`) as Slack's Block Kit: one `plan` block whose tasks are
`task_card`s (title, status, a one-line output and the details as rich text, sources as `url`
source elements), within Slack's limits: a large tree folds its finished branches so that the
plan stays at PLAN_TASKS cards (a message holds at most 50 blocks), and every text is cut to
its length. Rich text and plain-text titles are shown as written by Slack (no mention or link
in them is live; a steer's task names who asked with a rich-text `user` element); only URLs
that pass the bot's link checks become sources.
"""

from __future__ import annotations

import re
from typing import Any

from contract.mrkdwn import clip, escape, link, link_label
from research_core.plan import PlanSource, PlanTask, PlanView

Block = dict[str, Any]
_USER_ID = re.compile(r"[UW][A-Z0-9]{2,20}")

PLAN_TASKS = 40
TITLE_CHARS = 150
OUTPUT_CHARS = 500
DETAIL_CHARS = 300
SOURCE_TITLE_CHARS = 100
SOURCES_PER_TASK = 5
TEXT_LIMIT = 3_000


def plan_blocks(view: PlanView) -> list[Block]:
    tasks = [task_card(t) for t in view.folded(PLAN_TASKS).tasks]
    return [{"type": "plan", "title": _cut(view.title, TITLE_CHARS), "tasks": tasks}]


def task_card(task: PlanTask) -> Block:
    card: Block = {"type": "task_card", "task_id": task.task_id,
                   "title": _cut(task.title, TITLE_CHARS), "status": task.status}
    if task.output:
        card["output"] = rich_text([_cut(task.output, OUTPUT_CHARS)])
        if task.asked_by and _USER_ID.fullmatch(task.asked_by):  # who asked, as a mention
            card["output"]["elements"][0]["elements"] = [
                {"type": "user", "user_id": task.asked_by},
                {"type": "text", "text": " " + _cut(task.output, OUTPUT_CHARS - 1)}]
    if task.details:
        card["details"] = rich_text([_cut(d, DETAIL_CHARS) for d in task.details])
    sources = [s for s in map(url_source, task.sources) if s][:SOURCES_PER_TASK]
    if sources:
        card["sources"] = sources
    return card


def rich_text(lines: list[str]) -> Block:
    """Lines as one rich_text: a single section, or a bullet list of several."""
    sections = [{"type": "rich_text_section", "elements": [{"type": "text", "text": line}]}
                for line in lines]
    if len(sections) == 1:
        return {"type": "rich_text", "elements": sections}
    return {"type": "rich_text", "elements": [
        {"type": "rich_text_list", "style": "bullet", "elements": sections}]}


def url_source(source: PlanSource) -> Block | None:
    if link(source.url) is None:
        return None
    label = link_label(source.url, source.title or source.url)
    return {"type": "url", "url": source.url, "text": _cut(label, SOURCE_TITLE_CHARS)}


def plan_text(view: PlanView, notes: list[str]) -> str:
    """The plan message's `text` (notifications, clients without plan blocks): the run's
    latest progress notes, or the plan's title before there is one; escaped."""
    lines = [f"• {escape(n)}" for n in notes] or [escape(view.title)]
    return clip("\n".join(lines), TEXT_LIMIT)


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split()) if "\n" not in text else text.strip()
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"
