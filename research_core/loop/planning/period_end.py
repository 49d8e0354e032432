"""The last month a question's span reaches, as a facet of its own: a question on "25年11月到
26年10月" or on the past year (as of the end of October) asks for October's figures, and
findings whose newest figures are September's leave that month uncovered; the month becomes a
sub-question ("2026年10月动力电池上游材料价格的数据是多少？") that searches for the newest
report."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from research_core.loop.planning import subquestions
from research_core.text.asking import Asked
from research_core.text.figures import measured
from research_core.text.periods import latest_stated, month_label
from research_core.text.sentences import sentences

MONTH_DONE_DAY = 20  # from this day of the as-of month on, that month's figures are asked for


def last_month(asked: Asked, as_of: dt.date) -> str | None:
    """"2026-10": the month the question's span ends in (named, or the as-of month for a span
    up to now); None when it names no span that ends now or on a named month."""
    if asked.span_end:
        return asked.span_end
    if not asked.up_to_now:
        return None
    month = as_of if as_of.day >= MONTH_DONE_DAY else as_of.replace(day=1) - dt.timedelta(1)
    return f"{month.year}-{month.month:02d}"


def newest_stated(texts: Sequence[str], published: Sequence[dt.date | None]) -> str:
    """The newest period a sentence of the texts gives a figure for (a figure with a unit or
    a percent sign: "协会将于10月底发布快报" gives none); "" when none does."""
    return max((latest_stated(s, day) for text, day in zip(texts, published, strict=True)
                for s in sentences(text) if measured(s)), default="")


def facet(asked: Asked, as_of: dt.date, texts: Sequence[str],
          published: Sequence[dt.date | None]) -> tuple[str, bool] | None:
    """The sub-question for the span's last month and whether the findings reach it."""
    month = last_month(asked, as_of)
    newest = newest_stated(texts, published)
    if month is None or not newest:
        return None  # findings that state no period's figure were asked for none
    label = month_label(month, asked.chinese)
    return subquestions.for_period(asked, label), newest >= month
