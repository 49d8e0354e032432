"""Web results in the engine's common hit shape: a stable id, a 200-character snippet, a
publish date when the service gives one, and a guess of the source type from the address."""

from __future__ import annotations

import datetime as dt
import email.utils
import hashlib
import html
import re

from yarl import URL

from research_core.protocols import SearchHit
from research_core.search import snippets

SNIPPET_CHARS = 200
WEB_ID_PREFIX = "web-"
_TAG = re.compile(r"<[^>]{0,200}>")
_ISO_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")

# (pattern on host or path, source type), first match wins; unknown types score 0.4.
_TYPE_RULES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), kind) for pattern, kind in (
        (r"(^|\.)(gov|gouv|gob|go)\.|\.gov$|\.gov\.|stat(istic)?s?\.|eurostat|\.int$",
         "official_statistics"),
        (r"(^|\.)(reddit|forum|bbs|tieba|zhihu|quora|stackexchange)\.|/forum|/thread",
         "forum"),
        (r"(^|\.)(medium|substack|blogspot|wordpress)\.|blog", "blog"),
        (r"/press|/newsroom|/investor|prnewswire|businesswire|globenewswire", "company_pr"),
        (r"exchange|\.lme\.|shfe|cme(group)?\.", "exchange_data"),
        (r"association|federation|council|institute|\.org$", "industry_association"),
        (r"/research|/report|/insights|/analysis", "research_report"),
        (r"news|times|daily|post|journal|reuters|bloomberg|herald|tribune|gazette|/article",
         "news"),
    ))


def source_id_for(url: str) -> str:
    return WEB_ID_PREFIX + hashlib.sha256(url.encode("utf-8")).hexdigest()[:12]


def clean_text(raw: str) -> str:
    """Tags dropped, entities decoded, whitespace collapsed."""
    return " ".join(html.unescape(_TAG.sub("", raw)).split())


def guess_source_type(url: str) -> str:
    parsed = URL(url)
    target = f"{(parsed.host or '').lower()}{parsed.path.lower()}"
    return next((kind for pattern, kind in _TYPE_RULES if pattern.search(target)), "web")


def parse_date(raw: object) -> dt.date | None:
    """An ISO date or datetime, or an RFC 2822 date; None when absent or unreadable."""
    if not isinstance(raw, str) or not raw.strip():
        return None
    match = _ISO_DATE.search(raw)
    if match:
        try:
            return dt.date(*(int(g) for g in match.groups()))
        except ValueError:
            return None
    try:
        return email.utils.parsedate_to_datetime(raw).date()
    except (TypeError, ValueError):
        return None


def web_hit(url: str, title: str, snippet: str, published: dt.date | None,
            lang: str = "", publisher: str = "") -> SearchHit:
    return SearchHit(
        source_id=source_id_for(url),
        title=clean_text(title)[:300],
        snippet=snippets.cut(clean_text(snippet), SNIPPET_CHARS),
        url=url,
        published=published,
        source_type=guess_source_type(url),
        publisher=publisher or (URL(url).host or ""),
        lang=lang,
    )
