"""Superlatives and the grain of a period, in English and Chinese: whether a question asks
for the highest or the lowest ("which month had the highest sales?", "哪个月销量最低？") and
whether it asks by month, quarter or half year. The languages' own words, not any
question's."""

from __future__ import annotations

import re

_HIGH = re.compile(r"\b(?:highest|most|biggest|largest|greatest|peak(?:ed)?|strongest|best|"
                   r"busiest|top)\b|最高|最多|最大|最强|峰值|高峰", re.I)
_LOW = re.compile(r"\b(?:lowest|least|fewest|smallest|weakest|worst|quietest|bottom)\b|"
                  r"最低|最少|最小|最弱|低谷|谷底", re.I)
_GRAINS = {"month": re.compile(r"\bmonths?\b|月份|哪个月|哪一个月|几月", re.I),
           "quarter": re.compile(r"\bquarters?\b|季度", re.I),
           "half year": re.compile(r"\bhalf\b|\bhalves\b|半年", re.I)}


def asked_extreme(question: str) -> str | None:
    """"high" or "low" where the question asks for an extreme (the first named), else
    None."""
    high, low = _HIGH.search(question), _LOW.search(question)
    if high and (not low or high.start() < low.start()):
        return "high"
    return "low" if low else None


def asked_grain(question: str) -> str | None:
    """"month", "quarter" or "half year": the grain of period the question names (the first
    of these that it names), else None."""
    return next((g for g, words in _GRAINS.items() if words.search(question)), None)
