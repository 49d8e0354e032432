"""Standard Markdown at the edge, for Slack's `markdown` block (and streamed `markdown_text`).

A `markdown` block renders CommonMark, where a page or a model could write a live link under a
false name (`[your bank](https://evil.example)`), an image, an autolink (`<https://…>`), raw
HTML, an entity or a mention (`<@U123>`, `<!channel>`). `escape` backslash-escapes the
characters those need (`\\`, `` ` ``, `[`, `]`, `<`, `>`, `&`, `@`, `|`), which CommonMark then
shows as themselves; emphasis, lists and headings the model wrote still render. It works
character by character, so a text streamed in pieces can be escaped piece by piece. The only
live link is one the bot builds (`link`) from a URL it validated.
"""

from __future__ import annotations

import re

from contract.mrkdwn import link as mrkdwn_link
from contract.mrkdwn import link_label

# Characters that start or end a link, image, autolink, HTML, entity, mention or code span.
_SPECIAL = re.compile(r"([\\`\[\]<>&@|])")
_URL_PARENS = str.maketrans({"(": "%28", ")": "%29"})


def escape(text: str) -> str:
    """Text that the markdown block shows as written (emphasis and lists aside): no link,
    image, mention, HTML or entity in it is live."""
    return _SPECIAL.sub(r"\\\1", text)


def link(url: str, label: str) -> str | None:
    """A live link the bot built: `[label](url)` for an http(s) URL that passes the same checks
    as a mrkdwn link, the label escaped (and replaced by the link's host when it looks like an
    address); None when the URL is not one to link to."""
    if mrkdwn_link(url) is None:
        return None
    return f"[{escape(link_label(url, label))}]({url.translate(_URL_PARENS)})"


def clip(escaped: str, limit: int) -> str:
    """At most `limit` characters of escaped text, never ending in the middle of an escape."""
    cut = escaped[:limit]
    trailing = len(cut) - len(cut.rstrip("\\"))
    return cut[:-1] if trailing % 2 else cut
