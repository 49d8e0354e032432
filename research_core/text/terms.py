"""Word-level terms of English and Chinese text (jieba segments Chinese), for lexical matching."""

from __future__ import annotations

import logging
import re
import warnings
from functools import cache, lru_cache

with warnings.catch_warnings():
    # jieba 0.42 imports pkg_resources, which warns on newer setuptools.
    warnings.simplefilter("ignore")
    import jieba

import stopwordsiso

NOUNS_CACHED = 4096
# How many texts (sentences, mostly) each per-text cache of the text grammar holds: bounded
# in a long-lived worker. The one size for all of them (`_terms`, `sentence_key`,
# `figures_in`, BM25's words, the CJK share …).
TEXTS_CACHED = 32768
_WORD = re.compile(r"[\w.%-]+", re.UNICODE)
CJK = re.compile(r"[\u3400-\u9fff]")
_NUMBER = re.compile(r"[\d.,%-]+")
_STOPWORD_TEXT = """
a an and are as at be by did do does for from has have how in is it its of on or the this
that to was were what when where which who why will with over between
的 了 和 是 在 与 及 或 等 一 个 中 对 为 吗 呢 把 被 也 都 有 就 这 那 请 帮忙
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


@cache
def function_words() -> frozenset[str]:
    """The words of English and Chinese that name nothing (pronouns, particles, auxiliaries,
    "really", "each", "though", "怎么样"): the stopwords-iso collection's lists."""
    return frozenset(w.casefold() for w in stopwordsiso.stopwords(["en", "zh"]))


def content_terms(text: str) -> list[str]:
    """The terms of a text that say something: not function words, not bare numbers."""
    skip = function_words()
    return [t for t in terms(text)
            if t not in skip and len(t.strip(".-%")) >= 2 and not _NUMBER.fullmatch(t)]


@cache
def _jieba_ready() -> bool:
    """Load jieba's dictionary once, without its startup log lines."""
    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    return True


def has_cjk(text: str) -> bool:
    return CJK.search(text) is not None


@cache
def names_a_thing(word: str) -> bool:
    """Whether a Chinese word is a noun (a thing, a place, a company: "铜箔", "匈牙利"), not a
    pronoun, a verb or a quantity ("这块", "深挖", "一个月"), by jieba's part-of-speech tags."""
    _jieba_ready()
    import jieba.posseg  # its tables take 0.2 s to load: only where a not-found line is built

    tags = [pair.flag for pair in jieba.posseg.lcut(word)]
    return bool(tags) and all(t.startswith("n") or t == "eng" for t in tags)


@lru_cache(maxsize=NOUNS_CACHED)
def pos_tags(text: str) -> tuple[tuple[str, str], ...]:
    """jieba's words of a Chinese text with their part-of-speech tags."""
    _jieba_ready()
    import jieba.posseg

    return tuple((p.word, p.flag) for p in jieba.posseg.lcut(text))


@lru_cache(maxsize=NOUNS_CACHED)  # sentences, not words: bounded in a long-lived worker
def nouns(text: str) -> frozenset[str]:
    """The Chinese nouns of a text of two characters or more ("石墨", "铜箔", "加工费"), by
    jieba's part-of-speech tags."""
    _jieba_ready()
    import jieba.posseg

    return frozenset(p.word for p in jieba.posseg.lcut(text)
                     if p.flag.startswith("n") and len(p.word) >= 2 and has_cjk(p.word))


def segment(text: str, *, search_mode: bool = True) -> list[str]:
    """jieba's words of a text: search mode adds the shorter words inside long ones."""
    _jieba_ready()
    words: list[str] = jieba.lcut_for_search(text) if search_mode else jieba.lcut(text)
    return words


def terms(text: str) -> list[str]:
    """Lowercased content words; Chinese runs are segmented into words."""
    return list(_terms(text))


@lru_cache(maxsize=TEXTS_CACHED)
def _terms(text: str) -> tuple[str, ...]:
    """`terms`, once per text: the conflict detector and the sentence picker compare every
    sentence with many others, and jieba's segmentation is the cost."""
    out: list[str] = []
    for chunk in _WORD.findall(text.lower()):
        pieces = [w for w in segment(chunk) if w.strip()] if has_cjk(chunk) else [chunk]
        out.extend(p for p in pieces if p.strip(".-%") and p not in STOPWORDS)
    return tuple(out)


def ask_apart(a: str, b: str) -> bool:
    """Each text has a content word the other lacks ("heat pump sales" / "heat pump prices",
    "… in Germany" / "… in France"): two queries that ask about different things, however
    close their embeddings (short queries that differ in one key word score 0.85–0.9)."""
    left, right = set(terms(a)), set(terms(b))
    return bool(left - right) and bool(right - left)


def speaks_to(text: str, question: str, others: list[str]) -> bool:
    """Whether `text` is about what sets `question` apart from the `others` (its root and its
    siblings): it names every word of the question that the root lacks or that its siblings
    do not all share ("Germany" and "sales" in "sales in Germany" beside "prices in Germany"
    under "sales and prices across Europe"). A plural matches its singular."""
    own = set(terms(question)) - set(terms(others[0])) if others else set()
    siblings = [set(terms(o)) for o in others[1:]]
    if siblings:
        shared = set(siblings[0]).intersection(*siblings[1:])
        own |= set(terms(question)) - shared
    found = {stem(t) for t in terms(text)}
    return all(stem(t) in found for t in own)


def stem(term: str) -> str:
    """A term as its singular is written, for matching: "pumps" → "pump" ("sales" → "sale";
    a short word is kept: "gas")."""
    return term[:-1] if len(term) > 4 and term.endswith("s") else term


def overlap(query: str, text: str) -> float:
    """The share of the query's distinct terms that occur in the text (0..1)."""
    wanted = _term_set(query)
    if not wanted:
        return 0.0
    return len(wanted & _term_set(text)) / len(wanted)


@lru_cache(maxsize=TEXTS_CACHED)
def _term_set(text: str) -> frozenset[str]:
    return frozenset(_terms(text))
