"""Slack mrkdwn at the edge: text from people, models and pages in, escaped text out.

Slack parses `<…>` in mrkdwn as control sequences: `<!channel>` pings a channel, `<@U…>` a
person, `<https://evil.example|your bank>` shows a link under a false name. So every text the
bot did not write itself is escaped (`&`, `<`, `>`; Slack shows `&lt;` as `<`), and the only
live markup is what the bot builds itself: a mention of the requester from a validated user id,
and links to sources from URLs validated here. Messages are posted with `parse: none` and
without `link_names`, so Slack does not turn names in the text into mentions either.

A question arrives the other way, as mrkdwn a Slack client wrote (`&lt;`, `<@U123>`,
`<!channel>`): `from_slack` turns it into plain text for the research and for display.
"""

from __future__ import annotations

import re
from typing import Any

from yarl import URL

# What posting without any parsing of names or links takes (chat.postMessage, chat.update).
NO_PARSE: dict[str, Any] = {"parse": "none", "link_names": False}

_CONTROL = re.compile(r"<([^<>]*)>")
_USER_ID = re.compile(r"^[UW][A-Z0-9]{1,30}$")
_URL_UNSAFE = re.compile(r"[\s<>|\"']")
# A host name (any script, dots of any width), with a port and a path or not: `slack.com`,
# `bank.example:443/login`, `ѕlack。com`.
_HOST = re.compile(r"(?:[\w-]+[.。．｡])+[^\W\d_]{2,}[.。．｡]?(?::\d*)?(?:[/?#].*)?$")


def escape(text: str) -> str:
    """Text that Slack shows as written: no mention, link or entity in it is live."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def clip(escaped: str, limit: int) -> str:
    """At most `limit` characters of escaped text, never ending inside an entity."""
    cut = escaped[:limit]
    amp = cut.rfind("&", max(0, limit - 5))
    return cut[:amp] if amp != -1 and len(escaped) > limit and ";" not in cut[amp:] else cut


def one_line(text: str) -> str:
    """All whitespace, newlines included, as single spaces (a quoted line stays one line)."""
    return " ".join(text.split())


def mention(user_id: str) -> str:
    """The bot's own mention of a person; a malformed id is shown as escaped text."""
    return f"<@{user_id}>" if _USER_ID.match(user_id) else escape(user_id)


def looks_like_address(label: str) -> bool:
    """Whether a label reads as a URL or a host name (`https://slack.com/signin`,
    `slack.com`, `www.x.y`, `bank.example/login`): shown as a link's text, it would name a
    site the link may not go to."""
    text = label.strip()
    first = text.split(maxsplit=1)[0] if text else ""
    return "://" in text or first.lower().startswith("www.") or bool(_HOST.match(first))


def link_label(url: str, label: str) -> str:
    """The text to show for a link to `url`: `label`, unless it looks like an address, then
    the link's own host (its ASCII form, so a look-alike host shows as `xn--…`)."""
    if label.strip() == url or not looks_like_address(label):
        return label  # the link's own URL is an honest label
    try:
        return URL(url).raw_host or url
    except ValueError:
        return url


def link(url: str, label: str | None = None) -> str | None:
    """A live link to an http(s) URL the bot validated, with an escaped label (one that looks
    like an address is replaced by the link's host, `link_label`); None when the URL is not
    one to link to."""
    if _URL_UNSAFE.search(url):
        return None
    try:
        parsed = URL(url)
    except ValueError:
        return None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        return None
    target = url.replace("&", "&amp;")
    return f"<{target}|{escape(link_label(url, label))}>" if label else f"<{target}>"


def from_slack(text: str) -> str:
    """A message as a Slack client wrote it, as plain text: mentions and links as their
    names (`@channel`, `@U123`, `#general`, `label (url)`), entities decoded."""
    return _unescape(_CONTROL.sub(lambda m: _plain_control(m.group(1)), text))


def _plain_control(inner: str) -> str:
    target, _, label = inner.partition("|")
    if target.startswith("@"):
        return "@" + (label or target[1:])
    if target.startswith("#"):
        return "#" + (label or target[1:])
    if target.startswith("!"):
        command = target[1:].split("^", 1)[0]
        return label or f"@{command}"
    return f"{label} ({target})" if label and label != target else target


def _unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
