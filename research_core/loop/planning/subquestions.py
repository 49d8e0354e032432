"""Sub-questions read off the question's own clauses (`research_core.text.clauses`: cut at
punctuation and plain coordinators only), for when the planner cannot split it (issue 25,
issue 42 item 2). A clause that names nothing of the question's topic is completed with the
topic, so that it can be searched on its own; the question's words are kept as written, no
template is filled in, and the question itself is never its only sub-question.
`research_core.loop.planning.decomposition` keeps the clauses a retrieved passage is close to
(a request to the bot, a deadline or a greeting is close to none) and adds the facets the
evidence clusters into.
"""

from __future__ import annotations

from research_core.models.schemas import SUBQUESTION_MIN_CHARS, SubQuestion
from research_core.text.asking import Asked
from research_core.text.clauses import Reading
from research_core.text.periods import without_periods
from research_core.text.terms import content_terms, has_cjk

MAX_CHARS = 150
MIN_CHARS = SUBQUESTION_MIN_CHARS  # what the sub-question's own check accepts
OWN_TERMS = 4  # a clause naming this many things stands without the topic
VALUES = (0.9, 0.8, 0.7, 0.6)  # most valuable first


def derive(asked: Asked, limit: int = 4) -> list[SubQuestion]:
    """Up to `limit` sub-questions read off the question's clauses, in the question's order;
    [] when the question is one clause (it is then researched from the evidence)."""
    return as_subquestions(compose(asked.reading, asked), limit)


def as_subquestions(texts: list[str], limit: int) -> list[SubQuestion]:
    """The texts as sub-questions, most valuable first; a text too short to research (a
    source's short title, "蜂业快讯") is none."""
    usable = [t for t in texts if len(t.strip()) >= MIN_CHARS][:limit]
    return [SubQuestion(question=t, value=VALUES[min(i, len(VALUES) - 1)])
            for i, t in enumerate(usable)]


def compose(reading: Reading, asked: Asked) -> list[str]:
    """The sub-question texts of the `reading`'s clauses (all of the question's, or those
    kept), each completed with the topic where it names nothing of it; never the question
    itself, none repeated."""
    whole = _norm(asked.plain)
    texts = [_shorten(completed(c, reading.topic)) for c in reading.clauses]
    return list(dict.fromkeys(t for t in texts if len(t) >= MIN_CHARS and _norm(t) != whole))


def completed(clause: str, topic: str) -> str:
    """A clause that names little ("how big is the gap now") with the topic it is about; a
    clause that names something of the topic, or enough things, as written."""
    own = set(content_terms(clause))
    if len(own) >= OWN_TERMS or own & set(content_terms(topic)):
        return clause
    return f"{clause}（{topic}）" if has_cjk(clause) else f"{clause} ({topic})"


def is_part(clause: str, asked: Asked) -> bool:
    """Whether the clause is less than the whole question (a sub-question may be it)."""
    return _norm(clause) != _norm(asked.plain) and len(clause) >= MIN_CHARS


def as_question(text: str) -> str:
    return _shorten(text)


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    end = "？" if has_cjk(text) else "?"
    if len(text) > MAX_CHARS - 1:
        text = text[: MAX_CHARS - 2].rstrip(" ,;:—") + "…"
    return _capital(text if text.endswith(("?", "？")) else text + end)


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _norm(text: str) -> str:
    return "".join(ch for ch in text.casefold() if ch.isalnum())


def for_period(asked: Asked, period: str) -> str:
    """The question's topic asked for one period ("2026年10月…", "… in October 2026")."""
    about = " ".join(without_periods(asked.topic).split()).strip(" ,，、（）()")
    return f"{period}{about}？" if asked.chinese else f"{about} in {period}?"
