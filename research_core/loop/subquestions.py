"""Sub-questions derived from the question itself, for when the planner cannot split it: its
subject, each measure it asks about (sales, prices, 价格 …) over the period it names, what
explains the change (the "why"), and any further question it asks, in the question's
language. No model is involved: the question's own words are rearranged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from research_core.models.schemas import SubQuestion
from research_core.terms import has_cjk

MAX_CHARS = 150
_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
          r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")
_WHEN = rf"(?:(?:q[1-4]|h[12]|{_MONTH}|the (?:first|second|third|fourth) quarter of)\s+)?\d{{4}}"
_EN_PERIOD = re.compile(
    rf"\b(?:between\s+{_WHEN}\s+and\s+{_WHEN}|from\s+{_WHEN}\s+to\s+{_WHEN}|"
    rf"(?:in|during|since|for|through)\s+{_WHEN}|"
    r"(?:over|in|during)\s+the\s+(?:past|last)\s+(?:year|\d+\s+(?:months|years|quarters)|"
    r"(?:twelve|six|three)\s+months|quarter)|this\s+year|last\s+year)\b", re.I)
_ZH_PERIOD = re.compile(
    r"[（(]?\d{2,4}年\d{1,2}月(?:份)?(?:到|至|—|-|~)\d{2,4}年\d{1,2}月(?:份)?[）)]?|"
    r"(?:近|最近|过去)(?:一|1|两|2|三|3|半)?年|近\d+个月|"
    r"\d{4}年(?:第?[一二三四1-4]季度|[上下]半年|\d{1,2}月)?")
_EN_MEASURES = ("sales", "prices", "price", "shipments", "exports", "imports", "output",
                "production", "capacity", "demand", "costs", "installations", "margins",
                "fees", "share", "volumes", "revenue", "investment", "supply", "gap", "spread")
_ZH_MEASURES = ("价格", "销量", "产能", "出货量", "出口", "进口", "产量", "需求", "供需", "加工费",
                "价差", "份额", "投资", "扩张", "扩产", "成本", "库存")
_EN_OPENER = re.compile(
    r"^(?:how\s+(?:did|do|does|have|has|had|were|was|are|is|much\s+did|big\s+(?:is|was))|"
    r"what\s+(?:happened\s+to|is|are|was|were|did)|why\s+(?:did|do|does|have|has|is|are)|"
    r"did|do|does|has|have|is|are|were|was|tell\s+me\s+about|summari[sz]e)\s+", re.I)
_EN_VERB = re.compile(
    r"\s+(?:move[ds]?|moving|change[ds]?|changing|develop(?:ed|s)?|evolve[ds]?|go|went|gone|"
    r"trend(?:ed)?|perform(?:ed)?|fare[ds]?|rose|rise[ns]?|fell|fall(?:en)?|diverge[ds]?|"
    r"grow|grew|shift(?:ed)?|compare[ds]?|look(?:ed)?)\b.*$", re.I)
_EN_WHY = re.compile(r"\b(?:why|reasons?|causes?|drivers?|explain\w*)\b", re.I)
_ZH_WHY = re.compile(r"为什么|为何|原因|驱动|影响")
_CHAT = re.compile(r"@\S+\s*|^\s*(?:hi|hey|hello|quick one|question)\b[^:：]*[:：]\s*", re.I)
_EN_REQUEST = re.compile(r"\b(?:pls|please|thanks|thank you|numbers?\s*\+|sources?\s+pls)\b",
                         re.I)
_ZH_CHAT = re.compile(r"帮忙|帮我|麻烦|请|梳理一下|梳理下|整理一下|整理下|看看|查一下|深挖|"
                      r"一下|这块")
_ZH_ASKING = re.compile(r"(?:情况)?(?:怎么样|如何|怎样|是?怎么走的?|是多少|有哪些|的?波动|的?变化|"
                        r"走势)$")
_ZH_REQUEST = re.compile(r"要有|出处|例会|周[一二三四五六日]|谢谢|都覆盖到|覆盖到|用$")


@dataclass(frozen=True)
class _Parsed:
    subject: str  # what the question is about ("European residential heat pump")
    measures: list[str]  # what it asks about the subject ("sales", "prices")
    period: str  # "between November 2025 and October 2026", "" when none is named
    why: bool
    others: list[str]  # further questions it asks, as written


def derive(question: str, limit: int = 4) -> list[SubQuestion]:
    """Up to `limit` sub-questions read off the question, most valuable first."""
    if has_cjk(question):
        texts = _zh_questions(_zh_parse(question))
    else:
        texts = _en_questions(_en_parse(question))
    unique = list(dict.fromkeys(" ".join(t.split())[:MAX_CHARS] for t in texts if t.strip()))
    values = (0.9, 0.8, 0.7, 0.6)
    return [SubQuestion(question=t, value=values[min(i, 3)])
            for i, t in enumerate(unique[:limit]) if len(t) >= 8]


_EN_WORD = re.compile(r"[a-z]+(?:-[a-z]+)*")  # "bike-share" is one word, no "share"
_LATEST = re.compile(
    r"\b(?:latest|current|currently|now|most recent)\b|最新|目前|当前|现在|最近一个月", re.I)


def asks_latest(question: str) -> bool:
    """Whether the question asks for the latest figures."""
    return _LATEST.search(question) is not None


# Measures that other words name too: a "gap" between two prices is also their "spread".
_SAME_MEASURE = {"gap": ("spread", "价差"), "spread": ("gap", "价差"), "价差": ("gap", "spread"),
                 "price": ("价格",), "价格": ("price",)}


def for_period(question: str, period: str) -> str:
    """The question's figures asked for one period ("2026年10月", "October 2026"): "2026年10月
    动力电池上游材料价格的数据是多少？"."""
    if has_cjk(question):
        p = _zh_parse(question)
        return f"{period}{p.subject}{''.join(p.measures[:1])}的数据是多少？"
    p = _en_parse(question)
    what = f"{p.subject} {' and '.join(p.measures[:2])}".strip()
    return f"What were the figures for {what} in {period}?"


def names_measure(text: str, measures: list[str]) -> bool:
    """Whether the text names one of the measures: an English one as a word ("gap", not
    "Singapore"; "price" also as "prices"), a Chinese one anywhere."""
    lowered = text.casefold()
    words = set(_EN_WORD.findall(lowered))
    return any(m in lowered if has_cjk(m) else (m in words or f"{m}s" in words)
               for m in measures)


def measures_in(question: str) -> list[str]:
    """The measures a question names ("sales", "价格"), lowercased; a plural also as singular;
    with the other words for the same measure."""
    lowered = question.casefold()
    found = [m for m in _ZH_MEASURES if m in lowered]
    words = set(_EN_WORD.findall(lowered))
    found += [m.rstrip("s") for m in _EN_MEASURES if m in words]
    found += [same for m in found for same in _SAME_MEASURE.get(m, ())]
    return list(dict.fromkeys(found))


def _en_parse(question: str) -> _Parsed:
    text = _CHAT.sub("", " ".join(question.split()))
    clauses = [c.strip(" ,.;:") for c in re.split(r"(?<=[.?!])\s+", text) if c.strip(" ,.;:")]
    clauses = [c for c in clauses if not _EN_REQUEST.search(c)] or clauses
    period_match = _EN_PERIOD.search(text)
    period = period_match.group(0) if period_match else ""
    main = clauses[0] if clauses else text
    core = _EN_OPENER.sub("", main.replace(period, " ") if period else main)
    core = re.sub(r",?\s+and\s+why\b.*$|\?$", "", core, flags=re.I)
    core = _EN_VERB.sub("", core).strip(" ,?")
    head, measures = _en_measures(core)
    others = [re.sub(r"^why,?\s*(?:and\s+)?", "", c, flags=re.I) for c in clauses[1:]
              if c.endswith("?") or _EN_OPENER.match(c)]
    return _Parsed(head or core, measures, period, bool(_EN_WHY.search(text)), others)


def _en_measures(core: str) -> tuple[str, list[str]]:
    """"European heat pump sales and prices" → ("European heat pump", ["sales", "prices"])."""
    words = core.split()
    found: list[str] = []
    while words and words[-1].lower().strip(",") in _EN_MEASURES:
        found.insert(0, words.pop().strip(","))
        if words and words[-1].lower() in ("and", "&", "or"):
            words.pop()
    return " ".join(words).strip(" ,"), found


def _en_questions(p: _Parsed) -> list[str]:
    when = f" {p.period}" if p.period else ""
    whole = f"{p.subject} {' and '.join(p.measures)}".strip()
    asks = [f"What were {p.subject} {m}{when}?"
            for m in p.measures[:2]]
    if not asks:
        asks = [f"What are the latest figures for {whole}{when}?"]
    because = f"What caused the changes in {whole}{when}?"
    others = [f"{_capital(o.rstrip('?'))} ({whole})?" for o in p.others]
    return [*asks, because, *others] if p.why else [*asks, *others, because]


def _zh_parse(question: str) -> _Parsed:
    text = "".join(_CHAT.sub("", question).split())
    lead, colon, rest = text.partition("：")
    if colon and _ZH_CHAT.search(lead) and len(rest) >= 6:  # "铜箔这块帮忙深挖一下：…"
        text = rest
    period_match = _ZH_PERIOD.search(text)
    period = period_match.group(0).strip("（）()") if period_match else ""
    clauses = [c for c in re.split(r"[，,。；;！!？?]", text) if c]
    asks = [c for c in clauses if not _ZH_REQUEST.search(c)] or clauses[:1]
    main = _ZH_CHAT.sub("", asks[0])
    main = _ZH_PERIOD.sub("", main)
    main = _ZH_ASKING.sub("", main)
    found = [main.find(m) for m in _ZH_MEASURES if m in main]
    subject, measures = main, []
    if found:
        subject = main[: min(found)].rstrip("的")
        measures = [m for m in re.split(r"[和与及、]", main[min(found):]) if m]
    others = [_ZH_CHAT.sub("", c) for c in asks[1:]]
    return _Parsed(subject or main, measures, period, bool(_ZH_WHY.search(text)),
                   [o for o in others if len(o) >= 4])


def _zh_questions(p: _Parsed) -> list[str]:
    when = p.period
    asks = [f"{when}{p.subject}{m}的具体数据和变化幅度是多少，分别是什么时间？"
            for m in p.measures[:2]]
    if not asks:
        asks = [f"{when}{p.subject}的最新数据是多少，分别是什么时间？"]
    whole = p.subject + "".join(p.measures[:1])
    because = f"{when}{whole}变化的原因是什么？"
    others = [f"{p.subject}：{o}？" for o in p.others]
    return [*asks, because, *others] if p.why else [*asks, *others, because]


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]
