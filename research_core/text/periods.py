"""The one period grammar, in English and Chinese.

The periods a sentence speaks of, as comparable keys: "2026-Q2" ("Q2 2026", "the second
quarter of 2026", "2026年二季度"), "2026-H1", "2026-09" ("September 2026", "2026年9月"; "9月"
or "September" in a text published in late 2026), "2026". They decide whether two figures are
about the same period, and the time order of an answer's lead. A question's period phrases
("in Q3 2026", "between 2025 and 2026", "over the past year", "2025年11月到2026年10月", "近一年")
are found and taken out of a clause (`names_period`, `without_periods`), and the month a span
ends in is read (`span_end`: "… to October 2026", "…到26年10月").
"""

from __future__ import annotations

import datetime as dt
import re

MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august",
               "september", "october", "november", "december")
_MONTHS = tuple(m[:3] for m in MONTH_NAMES)
# An English month, whole or short ("sep", "sept", "september"; "may", "jun", "june").
MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
         r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")
_ORDINALS = "first|second|third|fourth"  # of a quarter
_ZH_QUARTER_NO = "[一二三四1-4]"  # 第三季度, 三季度, 3季度
_ZH_TO = "(?:到|至|—|-|~)"  # between a span's two ends
_ORDINAL = {"first": 1, "second": 2, "third": 3, "fourth": 4, "一": 1, "二": 2, "三": 3, "四": 4,
            "1": 1, "2": 2, "3": 3, "4": 4, "上": 1, "下": 2}
_QUARTER = re.compile(rf"\bq([1-4])\s*(?:of\s+)?(\d{{4}})\b|\b({_ORDINALS})[\s-]quarter "
                      rf"(?:of\s+)?(\d{{4}})|(\d{{4}})\s*年?\s*第?({_ZH_QUARTER_NO})季度", re.I)
_HALF = re.compile(r"\bh([12])\s*(\d{4})\b|\b(first|second)[\s-]half (?:of\s+)?(\d{4})|"
                   r"(\d{4})\s*年?\s*([上下])半年", re.I)
_MONTH_EN = re.compile(rf"\b({MONTH})\.?(?:\s+\d{{1,2}},?)?\s+(\d{{4}})\b", re.I)
# A month named without its year ("in October", "Oct 21", "Oct. 30"; a short form only with
# its day or a full stop: "Lei Jun said" names no June): the latest such month by the time it
# was published.
_MONTH_EN_ALONE = re.compile(
    rf"\b(?:({'|'.join(m for m in MONTH_NAMES if m != 'may')})"
    r"|(jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)(?=\.|\s+\d{1,2}\b))"
    r"\b(?!\.?(?:\s+\d{1,2},?)?\s+\d{4})", re.I)
_MONTH_ZH = re.compile(r"(?:(\d{2,4})\s*年\s*)?(\d{1,2})\s*月")
_YEAR = re.compile(r"(?<!\d)(20\d{2})(?!\d)")
# A period as a question's phrase names it: a year, optionally with its quarter, half or month
# ("Q3 2026", "H1 2026", "October 2026", "the third quarter of 2026", "2026").
_WHEN = rf"(?:(?:q[1-4]|h[12]|{MONTH}|the (?:{_ORDINALS}) quarter of)\s+)?\d{{4}}"
_EN_PHRASE = re.compile(
    rf"\b(?:between\s+{_WHEN}\s+and\s+{_WHEN}|from\s+{_WHEN}\s+to\s+{_WHEN}|"
    rf"(?:in|during|since|for|through)\s+{_WHEN}|"
    r"(?:over|in|during)\s+the\s+(?:past|last)\s+(?:year|\d+\s+(?:months|years|quarters)|"
    r"(?:twelve|six|three)\s+months|quarter)|this\s+year|last\s+year)\b", re.I)
_ZH_PHRASE = re.compile(
    rf"[（(]?\d{{2,4}}年\d{{1,2}}月(?:份)?{_ZH_TO}\d{{2,4}}年\d{{1,2}}月(?:份)?[）)]?|"
    r"(?:近|最近|过去)(?:一|1|两|2|三|3|半)?年|近\d+个月|"
    rf"\d{{4}}年(?:第?{_ZH_QUARTER_NO}季度|[上下]半年|\d{{1,2}}月)?")
# The end of a span: "… to October 2026", "… until December 2025"; "…到26年10月", "…至2026年9月".
_EN_END = re.compile(
    rf"\b(?:and|to|through|until|till)\s+({'|'.join(MONTH_NAMES)})\s+(\d{{4}})\b", re.I)
_ZH_END = re.compile(rf"{_ZH_TO}\s*(\d{{2,4}})\s*年\s*(\d{{1,2}})\s*月")


def periods_in(text: str, published: dt.date | None = None) -> list[str]:
    """The period keys of a text, in order of appearance, each once."""
    return list(dict.fromkeys(k for _, k in spans(text, published)))


def spans(text: str, published: dt.date | None = None) -> list[tuple[int, str]]:
    """Each period the text names, with where it is named, in order."""
    return [(start, key) for start, _, key in named(text, published)]


def named(text: str, published: dt.date | None = None) -> list[tuple[int, int, str]]:
    """Each period the text names, with where its name starts and ends, in order."""
    found: list[tuple[int, int, str]] = []
    for m in _QUARTER.finditer(text):
        n, year = _pick(m.groups())
        found.append((m.start(), m.end(), f"{year}-Q{_ORDINAL[n.lower()]}"))
    for m in _HALF.finditer(text):
        n, year = _pick(m.groups())
        found.append((m.start(), m.end(), f"{year}-H{_ORDINAL[n.lower()]}"))
    for m in _MONTH_EN.finditer(text):
        month_year = int(m.group(2)) if m.group(2) else None
        if month_year and m.group(1).lower()[:3] in _MONTHS:
            month = _MONTHS.index(m.group(1).lower()[:3]) + 1
            found.append((m.start(), m.end(), f"{month_year}-{month:02d}"))
    for m in _MONTH_EN_ALONE.finditer(text):
        name = m.group(1) or m.group(2)
        if published and name[0].isupper():  # "March", not "to march"
            month = _MONTHS.index(name.lower()[:3]) + 1
            found.append((m.start(), m.end(), f"{_year_of(month, published)}-{month:02d}"))
    for m in _MONTH_ZH.finditer(text):
        month = int(m.group(2))
        zh_year = _full_year(m.group(1)) or (_year_of(month, published) if published else None)
        if zh_year and 1 <= month <= 12:
            found.append((m.start(), m.end(), f"{zh_year}-{month:02d}"))
    if not found:
        found = [(m.start(), m.end(), m.group(1)) for m in _YEAR.finditer(text)]
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


def years_in(text: str) -> frozenset[int]:
    """The years (20xx) a text names."""
    return frozenset(int(y) for y in _YEAR.findall(text))


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


_LATEST = re.compile(
    r"\b(?:latest|current|currently|now|most recent)\b|最新|目前|当前|现在|最近一个月", re.I)


def asks_latest(question: str) -> bool:
    """Whether the question asks for the latest figures ("latest", "now", "目前")."""
    return _LATEST.search(question) is not None


def asks_past_year(question: str) -> bool:
    """Whether the question asks about the past year ("近一年", "over the past year")."""
    return _PAST_YEAR.search(question) is not None


_DAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_CODE = re.compile(rf"(?:q[1-4]|h[12])(?:\s*\d{{4}})?|(?:fy|cy)\d{{2,4}}|(?:{MONTH}|{_DAY})\.*",
                   re.I)


def is_period_code(word: str) -> bool:
    """Whether a word is a period's short code ("Q3", "H1", "Q3 2026", "FY2026") or a day's or
    a month's name ("Thursday", "Sept"), which a capital letter does not make a name."""
    return _CODE.fullmatch(word.strip()) is not None


def names_period(text: str) -> bool:
    """Whether the text has a period phrase ("in Q3 2026", "since 2025", "this year",
    "2025年11月到2026年10月", "近一年", "2026年三季度")."""
    return _EN_PHRASE.search(text) is not None or _ZH_PHRASE.search(text) is not None


def without_periods(text: str) -> str:
    """The text with its period phrases taken out (spacing left as it falls)."""
    for pattern in (_EN_PHRASE, _ZH_PHRASE):
        text = pattern.sub("", text)
    return text


def span_end(text: str) -> str | None:
    """"2026-10": the month a span the text names ends in ("… to October 2026", "…到26年10月");
    None when it names no such end."""
    zh = _ZH_END.search(text)
    if zh:
        return f"{_full_year(zh.group(1))}-{int(zh.group(2)):02d}"
    en = _EN_END.search(text)
    if en:
        return f"{en.group(2)}-{MONTH_NAMES.index(en.group(1).lower()) + 1:02d}"
    return None


def month_label(month: str, zh: bool) -> str:
    """A month key ("2026-10") as a reader writes it: "2026年10月", "October 2026"."""
    year, number = (int(p) for p in month.split("-"))
    return f"{year}年{number}月" if zh else f"{MONTH_NAMES[number - 1].capitalize()} {year}"


# A sentence that states a total over a span ("November 2025 to October 2026", "the twelve
# months", "1—9月") gives no value of one period, whatever periods it names.
_SPAN = re.compile(
    rf"{MONTH}\.?(?:\s+\d{{4}})?\s*(?:to|through|until|till|and|[–—-])\s*{MONTH}|"
    r"\b(?:twelve|12|nine|six|three|9|6|3)[\s-]months?\b|year[\s-]to[\s-]date|\bytd\b|"
    r"\d{1,2}\s*[—–~-]\s*\d{1,2}\s*月|前[一二三四五六七八九十]+个?(?:季度|月)", re.I)


def states_span(text: str) -> bool:
    """Whether the text states a total over a span of months or quarters ("November 2025 to
    October 2026", "the twelve months", "year to date", "1—9月", "前三季度"), which gives no
    value of one period."""
    return _SPAN.search(text) is not None
