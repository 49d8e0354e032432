"""Cutting a text to a snippet's length at a boundary (seed 000 §2.2 keeps the cap of 200
characters): the cut falls after the last sentence end (。！？.!?) within the cap; without one,
at the last word boundary, marked with "…"; never inside a word or a number. A Chinese run has
no spaces, so its word boundaries are jieba's; a number ("8.62万", "1,860", "Q2") is one word.
"""

from __future__ import annotations

import re

from research_core.text.terms import has_cjk, segment

ELLIPSIS = "…"
# A sentence end: a Chinese one anywhere; an English one where a space or the text's end follows
# (so that the point of "8.62" or of "e.g" inside a word ends nothing), closing quotes included.
_SENTENCE_END = re.compile(r"[。！？][”’」』)）]*|[.!?][\"'”’)\]]*(?=\s|$)")
_WORD_CHAR = re.compile(r"[\w.,%‰+\-/]")


def cut(text: str, limit: int) -> str:
    """`text` (whitespace collapsed) within `limit` characters, cut at a boundary."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    sentence = _last_sentence_end(flat, limit)
    if sentence:
        return flat[:sentence].rstrip()
    word = _last_word_boundary(flat, limit - len(ELLIPSIS))
    head = flat[:word].rstrip(" ,;:，；：、-—(（") if word else ""
    return head + ELLIPSIS if head else flat[: limit - len(ELLIPSIS)] + ELLIPSIS


def around(text: str, at: int, limit: int) -> str:
    """A snippet of a cleaned text holding position `at` (a query match): from the start of
    its sentence (or, in a long sentence, from a word boundary before it, marked "…")."""
    if len(text) <= limit:
        return text
    start = _sentence_start(text, at)
    prefix = ""
    if at - start > limit // 2:
        start = next(iter(_boundaries(text, max(1, at - limit // 3))), start)
        prefix = ELLIPSIS
    return prefix + cut(text[start:], limit - len(prefix))


def is_cut(text: str) -> bool:
    """Whether a snippet was cut short of its sentence (it ends or starts with "…")."""
    stripped = text.strip()
    return stripped.endswith(ELLIPSIS) or stripped.startswith(ELLIPSIS)


def _last_sentence_end(text: str, limit: int) -> int:
    """The end of the last sentence that fits in `limit` characters (0: none does)."""
    best = 0
    for match in _SENTENCE_END.finditer(text, 0, limit + 1):
        if match.end() <= limit:
            best = match.end()
    return best


def _sentence_start(text: str, at: int) -> int:
    """Where the sentence holding position `at` starts."""
    start = 0
    for match in _SENTENCE_END.finditer(text, 0, at):
        start = match.end()
    while start < len(text) and text[start].isspace():
        start += 1
    return start


def _last_word_boundary(text: str, limit: int) -> int:
    """The last position within `limit` where a word (or number) ends and the next begins."""
    if limit <= 0:
        return 0
    for at in _boundaries(text, limit):
        return at
    return 0


def _boundaries(text: str, limit: int) -> list[int]:
    """Word boundaries at or before `limit`, latest first."""
    window = text[: limit + 1]
    found = {m.start() for m in re.finditer(r"\s", window)}
    if has_cjk(window):
        at = 0
        for word in segment(text[: limit + 20], search_mode=False):
            at += len(word)
            found.add(at)
    return sorted((i for i in found if 0 < i <= limit and _between_words(text, i)),
                  reverse=True)


def _between_words(text: str, at: int) -> bool:
    """A cut before `text[at]` splits no word or number."""
    before, after = text[at - 1], text[at] if at < len(text) else " "
    if before.isspace() or after.isspace():
        return True
    if not (_WORD_CHAR.match(before) and _WORD_CHAR.match(after)):
        return True  # punctuation such as "，" or "（" stands between them
    joiners = "0123456789.,%‰+-/"
    return has_cjk(before + after) and before not in joiners and after not in joiners
