"""What the question asked that the evidence does not cover, for the answer's closing "not
found in the sources" line: a sub-question no sentence answers, a named thing (a place, a
product, a company …) that no kept evidence mentions, and the reasons when the question asks
why and no chosen sentence gives one."""

from __future__ import annotations

import re

from research_core.terms import has_cjk, names_a_thing, terms

MAX_TERMS = 5
NAMED_ENOUGH = 4  # naming this many of the things a long question names is naming enough
_CAUSAL = re.compile(r"\b(?:because|due to|driven by|owing to|as a result|reflects?|reflecting|"
                     r"led by|supported by|caused|after|amid|thanks to|explain\w*|helped by|"
                     r"hit by|held back|weigh\w*|boost\w*|kept|lifted|drove|driven)\b|由于|因为|"
                     r"受.{0,12}影响|导致|推动|带动|拖累|主要是|原因", re.I)
_WHY = re.compile(r"\b(?:why|reasons?|causes?|drivers?)\b|为什么|为何|原因", re.I)
# Words of a question that ask rather than name: never "missing" from evidence.
_ASKING_TEXT = (
    "how what why when which who whose much many big gap now move moved change "
    "changed changes figures figure numbers number sources source pls please quick "
    "one thanks past last year years month months quarter go went opposite directions "
    "direction latest recent trend trends explain data details summary overview main "
    "key all covered between and about tell me give channel team materials question "
    "answer help need look "
    "怎么 梳理 一下 帮忙 帮我 数字 出处 例会 周五 覆盖 覆盖到 主要 具体 要有 "
    "要 用 情况 怎么样 如何 整理 影响 最近 近一年 一年 研究 助手 研究助手 "
    "什么 哪些 多少 时间 原因 变化 波动 数据 一年 年 月 "
)
_ASKING = frozenset(_ASKING_TEXT.split())


def not_found(question: str, unanswered: list[str], evidence_text: str,
              chosen_text: str, reasons_given: bool = False) -> list[str]:
    """What to list as not found: unanswered sub-questions, the question's named things no
    evidence mentions, and "the reasons" when why was asked and nothing chosen says why
    (`reasons_given`: a section that asks why was answered)."""
    missing = list(unanswered)
    have = {t.casefold() for t in _words(evidence_text)}
    named = [t for t in dict.fromkeys(_words(question)) if _names_something(t)]
    absent = [t for t in named if t.casefold() not in have and t.rstrip("s") not in have]
    if absent:
        quoted = ", ".join(f"“{t}”" for t in absent[:MAX_TERMS])
        missing.append(("问题中的 " if has_cjk(question) else "the question's ") + quoted)
    if _WHY.search(question) and not reasons_given and not _CAUSAL.search(chosen_text):
        missing.append("原因（为什么）" if has_cjk(question) else "the reasons (why)")
    return missing


def causal(text: str) -> bool:
    """Whether a sentence gives a reason ("because", "driven by", "由于" …)."""
    return _CAUSAL.search(text) is not None


def asks_why(question: str) -> bool:
    return _WHY.search(question) is not None or question.casefold().startswith("what caused")


def named(question: str) -> list[str]:
    """The things a question names (not the words that ask), lowercased, each once."""
    return list(dict.fromkeys(t.casefold() for t in _words(question) if _names_something(t)))


def named_share(question: str, text: str) -> float:
    """The share of the things the question names that the text names too (1.0: all)."""
    asked = {t.rstrip("s") for t in named(question)}
    have = {t.rstrip("s") for t in _words(text)}
    return min(1.0, len(asked & have) / min(len(asked), NAMED_ENOUGH)) if asked else 1.0


def _words(text: str) -> list[str]:
    return [w for t in terms(text) if (w := t.strip(".-%"))]


def _names_something(term: str) -> bool:
    if term in _ASKING or term.strip("%").replace(".", "").isdigit():
        return False
    return len(term) >= 2 and names_a_thing(term) if has_cjk(term) else len(term) >= 4
