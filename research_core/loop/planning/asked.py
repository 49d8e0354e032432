"""What the question asked that the evidence does not cover, for the answer's closing "not
found in the sources" line: a sub-question no sentence answers, a named thing (a place, a
product, a company …) that no kept evidence mentions, and the reasons when the question asks
why and no chosen sentence gives one. What it reads off the question (the things it names,
whether it asks why) also guides the planners (`decomposition`) and admission's deep reads."""

from __future__ import annotations

import re
from collections.abc import Iterable

from research_core.text.periods import is_period_code
from research_core.text.terms import function_words, has_cjk, pos_tags

MAX_TERMS = 5
_CAUSAL = re.compile(r"\b(?:because|due to|driven by|owing to|as a result|reflects?|reflecting|"
                     r"led by|supported by|caused|after|amid|thanks to|explain\w*|helped by|"
                     r"hit by|held back|weigh\w*|boost\w*|kept|lifted|drove|driven)\b|由于|因为|"
                     r"受.{0,12}影响|导致|推动|带动|拖累|主要是|原因", re.I)
_WHY = re.compile(r"\b(?:why|reasons?|causes?|drivers?)\b|为什么|为何|原因", re.I)
_NAME = re.compile(r"(?<![.?!:]\s)(?<!^)\b[A-Z][\w-]*[A-Z0-9][\w-]*\b|(?<![.?!:]\s)(?<!^)"
                   r"\b[A-Z][a-z][\w-]+\b")
_OPENING = re.compile(r"(?:^|(?<=[.?!:]\s))([A-Z][a-z][\w-]+)\b")
_ZH_NAME_TAGS = ("nr", "ns", "nt", "nz")  # jieba's tags of names: people, places, bodies, other


def not_found(question: str, unanswered: list[str], evidence_text: str,
              chosen_text: str) -> list[str]:
    """What to list as not found: unanswered sub-questions, the names the question gives (a
    place, a firm, a product written as a name) that no kept evidence states, and "the
    reasons" when why was asked and nothing chosen says why. A name in one script is not
    looked for in evidence written in another (a Chinese source may name it in Chinese)."""
    missing = list(unanswered)
    have = evidence_text.casefold()
    absent = [t for t in names_in(question) if t.casefold() not in have
              and has_cjk(t) == has_cjk(evidence_text)]
    if absent:
        quoted = ", ".join(f"“{t}”" for t in absent[:MAX_TERMS])
        missing.append(("问题中的 " if has_cjk(question) else "the question's ") + quoted)
    if _WHY.search(question) and not _CAUSAL.search(chosen_text):
        missing.append("原因（为什么）" if has_cjk(question) else "the reasons (why)")
    return missing


def known_names(question: str, texts: Iterable[str], enough: int) -> list[str]:
    """The question's names (casefolded) that at least `enough` of the texts state: names
    the run's sources know, which tell a source about another place apart. Where some of
    them are proper names (no text writes them in lower case: "Ostvale"), only those: a
    region's "North", "Central" or "South" is a word any other country's table uses too."""
    texts = list(texts)
    lowered = [t.casefold() for t in texts]
    names = [n.casefold() for n in names_in(question)]
    known = [n for n in names if sum(n in t for t in lowered) >= enough]
    opening = [w for w in _openings(question) if w not in known
               and sum(w in t for t in lowered) >= enough and _proper(w, texts)]
    return [n for n in known if _proper(n, texts)] + opening or known


def _openings(question: str) -> list[str]:
    """The capitalised words that open the question's sentences (casefolded), which may be
    names ("Calvera shipped more …") or not ("Could you …"): only the sources can tell."""
    text = " ".join(re.sub(r"<[@#!][^>]*>|@\S+", " ", question).split())
    found = _OPENING.findall(text)
    return [w.casefold() for w in found if w.casefold() not in function_words()
            and not is_period_code(w)]


def _proper(name: str, texts: list[str]) -> bool:
    """Whether no text writes the name in lower case at the start of a word ("north" of
    "northern", "central" of "central bank"); a Chinese name always is one."""
    if has_cjk(name):
        return True
    lower = re.compile(rf"(?<![\w]){re.escape(name)}")
    return not any(lower.search(t) for t in texts)


def names_any(text: str, known: list[str]) -> bool:
    """Whether a lowercased text names one of the `known` names, or cannot be told: it is
    written in another script than one of them (a Chinese page may say a Latin name in
    Chinese)."""
    return any(n in text for n in known) or any(has_cjk(n) != has_cjk(text) for n in known)


def names_in(question: str) -> list[str]:
    """The names a question gives: capitalised words inside an English sentence ("Hungary",
    "Firm A" is "Firm"), and Chinese words jieba tags as names."""
    text = " ".join(re.sub(r"<[@#!][^>]*>|@\S+", " ", question).split())
    english = [m.group() for m in _NAME.finditer(text) if m.group().casefold()
               not in function_words() and not is_period_code(m.group())]
    chinese = [w for w, flag in pos_tags(text) if flag in _ZH_NAME_TAGS and len(w) >= 2
               and has_cjk(w)] if has_cjk(text) else []
    return list(dict.fromkeys([*english, *chinese]))


def asks_why(question: str) -> bool:
    return _WHY.search(question) is not None or question.casefold().startswith("what caused")
