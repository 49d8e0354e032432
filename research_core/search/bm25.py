"""Okapi BM25 over small texts held in memory (Robertson & Zaragoza, "The Probabilistic
Relevance Framework: BM25 and Beyond", 2009; k1 = 1.2, b = 0.75): the paragraphs the BM25
quoter ranks and the sentences the extractive answer ranks. Words are jieba's (Chinese) or
the lower-cased runs of letters and digits."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

from research_core.text.terms import TEXTS_CACHED, segment

K1, B = 1.2, 0.75
_WORD = re.compile(r"\w")


def words(text: str) -> list[str]:
    """Lower-cased jieba words that hold a letter or a digit."""
    return list(_words(text))


@lru_cache(maxsize=TEXTS_CACHED)
def _words(text: str) -> tuple[str, ...]:
    """`words`, once per text: the extractive answer ranks the same sentences at every
    step, and jieba's segmentation is the cost."""
    return tuple(w for w in (p.strip() for p in segment(text.lower(), search_mode=False))
                 if w and _WORD.search(w))


def scores(query: Counter[str], docs: Sequence[Counter[str]]) -> list[float]:
    """Each document's BM25 score for the query (0.0 for one that shares none of its words);
    IDF and the average length are the collection's own."""
    if not docs:
        return []
    n = len(docs)
    average = sum(sum(c.values()) for c in docs) / n or 1.0
    df = Counter(w for c in docs for w in c)
    return [_score(query, c, n, average, df) for c in docs]


def _score(query: Counter[str], doc: Counter[str], n: int, average: float,
           df: Counter[str]) -> float:
    length = sum(doc.values())
    return sum(math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5)) * doc[w] * (K1 + 1)
               / (doc[w] + K1 * (1 - B + B * length / average))
               for w in query if w in doc)
