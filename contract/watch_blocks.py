"""The "Watch" menu under a finished research, and the "What changed" message of a watch
cycle (docs/watch.md). Shared by the bot (the menu's choices) and the workers (the blocks)."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

from contract.keys import REQUEST_KEY
from contract.mrkdwn import escape, link
from research_core.wording import ENGLISH_WORDS, N_, Words

Block = dict[str, Any]

WATCH_ACTION = "watch_thread"
WATCH_CHOICES: dict[str, str] = {"daily": N_("Watch daily"), "weekly": N_("Watch weekly"),
                                 "monthly": N_("Watch monthly"), "stop": N_("Stop watching")}
CHANGES_SHOWN = 10
_VALUE = re.compile(r"(daily|weekly|monthly|stop)\|(.+)")


@dataclass(frozen=True)
class WatchChoice:
    cadence: str  # daily, weekly, monthly, or stop
    request_key: str


def parse_choice(value: object) -> WatchChoice | None:
    """The menu option's value ("weekly|red:req:C1:1.2"), or None for anything else."""
    match = _VALUE.fullmatch(value) if isinstance(value, str) else None
    if match is None or not REQUEST_KEY.fullmatch(match.group(2)):
        return None
    return WatchChoice(match.group(1), match.group(2))


def watch_menu(request_key: str, w: Words = ENGLISH_WORDS) -> Block:
    """An actions block with the Watch menu; each option's value names the request."""
    options = [{"text": {"type": "plain_text", "text": w(label)},
                "value": f"{cadence}|{request_key}"} for cadence, label in WATCH_CHOICES.items()]
    return {"type": "actions", "block_id": "watch", "elements": [
        {"type": "static_select", "action_id": WATCH_ACTION, "options": options,
         "placeholder": {"type": "plain_text", "text": w("Watch")}}]}


CONFIRMATIONS: dict[str, str] = {
    "daily": N_("Watching this thread daily: I will research it again and post what changed "
                "(nothing when nothing did)."),
    "weekly": N_("Watching this thread weekly: I will research it again and post what changed "
                 "(nothing when nothing did)."),
    "monthly": N_("Watching this thread monthly: I will research it again and post what "
                  "changed (nothing when nothing did)."),
    "stop": N_("This thread is no longer watched.")}


def watch_confirmation(choice: WatchChoice, w: Words = ENGLISH_WORDS) -> str:
    return w(CONFIRMATIONS[choice.cadence])


@dataclass(frozen=True)
class Change:
    """A part a watch cycle revised: its question, its new text and what sourced it."""

    question: str
    reason: str
    sources: list[tuple[str, str]]  # (url, title) of the sources that changed it


def changes_text(since: dt.date, changes: list[Change], w: Words = ENGLISH_WORDS) -> str:
    return w.count(len(changes), "What changed since {since}: {n} finding updated.",
                   "What changed since {since}: {n} findings updated.", since=since.isoformat())


def changes_blocks(since: dt.date, changes: list[Change],
                   w: Words = ENGLISH_WORDS) -> list[Block]:
    """One short message: each revised finding's question, why, and its sources."""
    lines = [f"• *{escape(c.question[:200])}* — {escape(c.reason[:300])}"
             + (" " + w("(sources: {links})", links=w(", ").join(
                 _link(u, t) for u, t in c.sources[:5])) if c.sources else "")
             for c in changes[:CHANGES_SHOWN]]
    return [{"type": "header", "text": {"type": "plain_text", "text": w(
                "What changed since {since}", since=since.isoformat())}},
            {"type": "section", "text": {"type": "mrkdwn", "text": "\n".join(lines)[:3000]}},
            {"type": "context", "elements": [{"type": "mrkdwn", "text":
                w("The findings above were revised in place.")}]}]


def _link(url: str, title: str) -> str:
    """A source as a link the bot built (`contract.mrkdwn.link`: a title that looks like an
    address shows the link's own host), else its title as escaped text."""
    shown = title[:120].replace("|", "¦")
    return link(url, shown) or escape(shown)
