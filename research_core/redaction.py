"""URLs as they may be shown: in messages, logs and start-up lines.

A URL from the settings can carry a credential in its user info (`redis://:pw@host`,
`https://token@host`) or in its query (`?password=…`, `?key=…`). `redact_url` masks both and
never raises, whatever the text: everything up to the last `@` of the authority is masked
(a password may itself hold `@`, `/`, `?` or `#`), every query value is masked, and the
fragment is dropped. Text that is not a URL at all (no scheme, not even `host:port`) may be a
pasted secret and is not shown.
"""

from __future__ import annotations

import re

MASK = "***"
NOT_A_URL = "(not a URL)"
_BARE_HOST = re.compile(r"(\*\*\*@)?[\w.-]+(:\d{1,6})?(/[\w./-]*)?")


def _mask_query(query: str) -> str:
    pairs = (part.split("=", 1)[0] for part in query.split("&") if part)
    return "&".join(f"{name}={MASK}" for name in pairs)


def redact_url(url: str) -> str:
    """`url` without the secrets it may hold (user info and query values)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    if "@" in rest:
        rest = MASK + "@" + rest.rsplit("@", 1)[1]
    rest = rest.split("#", 1)[0]
    location, qmark, query = rest.partition("?")
    shown = location + (qmark + _mask_query(query) if qmark else "")
    shown = "".join(ch if ch.isprintable() else "?" for ch in shown)
    if not sep and shown and not _BARE_HOST.fullmatch(shown):
        return NOT_A_URL
    return f"{scheme}{sep}{shown}" if sep else shown
