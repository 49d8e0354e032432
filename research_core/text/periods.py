"""The periods a sentence speaks of, as comparable keys: "2026-Q2" ("Q2 2026", "the second
quarter of 2026", "2026年二季度"), "2026-H1", "2026-09" ("September 2026", "2026年9月"; "9月"
or "September" in a text published in late 2026), "2026". They decide whether two figures are
about the same period, and the time order of an answer's lead."""

from __future__ import annotations

import datetime as dt
import re

MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august",
               "september", "october", "november", "december")
_MONTHS = tuple(m[:3] for m in MONTH_NAMES)
_ORDINAL = {"first": 1, "second": 2, "third": 3, "fourth": 4, "一": 1, "二": 2, "三": 3, "四": 4,
            "1": 1, "2": 2, "3": 3, "4": 4, "上": 1, "下": 2}
_QUARTER = re.compile(r"\bq([1-4])\s*(?:of\s+)?(\d{4})\b|\b(first|second|third|fourth)[\s-]quarter "
                      r"(?:of\s+)?(\d{4})|(\d{4})\s*年?\s*第?([一二三四1-4])季度", re.I)
_HALF = re.compile(r"\bh([12])\s*(\d{4})\b|\b(first|second)[\s-]half (?:of\s+)?(\d{4})|"
                   r"(\d{4})\s*年?\s*([上下])半年", re.I)
_MONTH_EN = re.compile(r"\b(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|"
                       r"aug(?:ust)?|sep(?:t|tember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
                       r"\.?(?:\s+\d{1,2},?)?\s+(\d{4})\b", re.I)
# A month named without its year ("in October", "Oct 21", "Oct. 30"; a short form only with
# its day or a full stop: "Lei Jun said" names no June): the latest such month by the time it
# was published.
_MONTH_EN_ALONE = re.compile(
    r"\b(?:(january|february|march|april|june|july|august|september|october|november|december)"
    r"|(jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)(?=\.|\s+\d{1,2}\b))"
    r"\b(?!\.?(?:\s+\d{1,2},?)?\s+\d{4})", re.I)
_MONTH_ZH = re.compile(r"(?:(\d{2,4})\s*年\s*)?(\d{1,2})\s*月")
_YEAR = re.compile(r"(?<!\d)(20\d{2})(?!\d)")


def periods_in(text: str, published: dt.date | None = None) -> list[str]:
    """The period keys of a text, in order of appearance, each once."""
    return list(dict.fromkeys(k for _, k in spans(text, published)))


def spans(text: str, published: dt.date | None = None) -> list[tuple[int, str]]:
    """Each period the text names, with where it is named, in order."""
    found: list[tuple[int, str]] = []
    for m in _QUARTER.finditer(text):
        n, year = _pick(m.groups())
        found.append((m.start(), f"{year}-Q{_ORDINAL[n.lower()]}"))
    for m in _HALF.finditer(text):
        n, year = _pick(m.groups())
        found.append((m.start(), f"{year}-H{_ORDINAL[n.lower()]}"))
    for m in _MONTH_EN.finditer(text):
        month_year = int(m.group(2)) if m.group(2) else None
        if month_year and m.group(1).lower()[:3] in _MONTHS:
            month = _MONTHS.index(m.group(1).lower()[:3]) + 1
            found.append((m.start(), f"{month_year}-{month:02d}"))
    for m in _MONTH_EN_ALONE.finditer(text):
        name = m.group(1) or m.group(2)
        if published and name[0].isupper():  # "March", not "to march"
            month = _MONTHS.index(name.lower()[:3]) + 1
            found.append((m.start(), f"{_year_of(month, published)}-{month:02d}"))
    for m in _MONTH_ZH.finditer(text):
        month = int(m.group(2))
        zh_year = _full_year(m.group(1)) or (_year_of(month, published) if published else None)
        if zh_year and 1 <= month <= 12:
            found.append((m.start(), f"{zh_year}-{month:02d}"))
    if not found:
        found = [(m.start(), m.group(1)) for m in _YEAR.finditer(text)]
    return sorted(found)


def _year_of(month: int, published: dt.date) -> int:
    """The year of a month named without one: the publishing year, or the year before for a
    month still to come ("12月" in a January article is last December)."""
    return published.year if month <= published.month else published.year - 1


def latest_stated(text: str, published: dt.date | None) -> str:
    """The latest month, quarter or half the text gives ("2026-09" for "9月" or "Q3 2026"),
    not after it was published (a forecast is no figure of the latest period) and not a bare
    year; "" when it gives none."""
    limit = f"{published.year}-{published.month:02d}" if published else "9999"
    keys = [_sortable(k) for k in periods_in(text, published) if "-" in k]
    return max((k for k in keys if k <= limit), default="")


def time_key(text: str, published: dt.date | None) -> str:
    """When a sentence is about: its first period, else its publish date (undated: last)."""
    keys = periods_in(text, published)
    if keys:
        return _sortable(keys[0])
    return published.isoformat()[:7] if published else "9999"


def _sortable(period: str) -> str:
    """"2026-Q2" → "2026-06", "2026-H1" → "2026-06", "2026" → "2026-12": the period's end."""
    year, _, part = period.partition("-")
    if not part:
        return f"{year}-12"
    if part[0] in "QH":
        return f"{year}-{int(part[1]) * (3 if part[0] == 'Q' else 6):02d}"
    return period


def _pick(groups: tuple[str | None, ...]) -> tuple[str, str]:
    """The (ordinal, year) of whichever alternative of a pattern matched."""
    present = [g for g in groups if g]
    if present[0].isdigit() and len(present[0]) == 4:  # "2026年二季度": year first
        return present[1], present[0]
    return present[0], present[1]


def _full_year(text: str | None) -> int | None:
    if not text:
        return None
    year = int(text)
    return year + 2000 if year < 100 else year


_PAST_YEAR = re.compile(r"\b(?:past|last)\s+(?:year|12\s+months|twelve\s+months)\b|"
                        r"近一年|过去一年|最近一年|近12个月|过去12个月|近一年来", re.I)
PAST_YEAR_GRACE_DAYS = 456  # a year and a quarter: last year's closing figures still count


def asks_past_year(question: str) -> bool:
    """Whether the question asks about the past year ("近一年", "over the past year")."""
    return _PAST_YEAR.search(question) is not None


def past_year_start(question: str, published: list[dt.date | None]) -> dt.date | None:
    """For a question about the past year, the oldest publish date that can still speak to
    it, counted back from the newest source; None when the question names no such span."""
    dates = [d for d in published if d is not None]
    if not dates or not _PAST_YEAR.search(question):
        return None
    return max(dates) - dt.timedelta(days=PAST_YEAR_GRACE_DAYS)
