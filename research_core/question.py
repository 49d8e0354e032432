"""What counts as a question's text: something visible, and text that UTF-8 can carry.

A question of only spaces, zero-width characters or other format and control characters is
blank. Text read from a command line in a non-UTF-8 locale or from a JSON `\\ud800` escape can
hold lone surrogates, which no database, Redis or JSON encoder accepts as UTF-8.
"""

from __future__ import annotations

import unicodedata

from research_core.errors import InvalidQuestion

INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp"})


def is_blank(text: str) -> bool:
    """True when no character of `text` would show (whitespace, zero-width, control)."""
    return all(unicodedata.category(ch) in INVISIBLE_CATEGORIES for ch in text)


def has_surrogates(text: str) -> bool:
    return any("\ud800" <= ch <= "\udfff" for ch in text)


def scrub_surrogates(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD (text from outside, kept usable)."""
    if not has_surrogates(text):
        return text
    return "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in text)


def validate_question(question: str, max_chars: int) -> str:
    """The question stripped; InvalidQuestion when it is blank, not UTF-8 text or too long."""
    cleaned = question.strip()
    if is_blank(cleaned):
        raise InvalidQuestion("the question is empty")
    if has_surrogates(cleaned):
        raise InvalidQuestion("the question is not valid UTF-8 text")
    if len(cleaned) > max_chars:
        raise InvalidQuestion(f"the question has {len(cleaned)} characters; "
                              f"the limit is {max_chars}")
    return cleaned
