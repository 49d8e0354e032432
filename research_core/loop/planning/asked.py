"""What the question asked that the evidence does not cover, for the answer's closing "not
found in the sources" line: a sub-question no sentence answers, a named thing (a place, a
product, a company …) that no kept evidence mentions, and the reasons when the question asks
why and no chosen sentence gives one. It takes the question as read once
(`research_core.text.asking`: its names, whether it asks why); the names the sources know
also guide the facets the planner reads off the evidence (`decomposition`)."""

from __future__ import annotations

from collections.abc import Iterable

from research_core.text.asking import Asked
from research_core.text.causes import gives_cause
from research_core.text.names import is_proper
from research_core.text.terms import has_cjk

__all__ = ["known_names", "names_any", "not_found"]

MAX_TERMS = 5


def not_found(asked: Asked, unanswered: list[str], evidence_text: str,
              chosen_text: str) -> list[str]:
    """What to list as not found: unanswered sub-questions, the names the question gives (a
    place, a firm, a product written as a name) that no kept evidence states, and "the
    reasons" when why was asked and nothing chosen says why. A name in one script is not
    looked for in evidence written in another (a Chinese source may name it in Chinese)."""
    missing = list(unanswered)
    have = evidence_text.casefold()
    absent = [t for t in asked.names if t.casefold() not in have
              and has_cjk(t) == has_cjk(evidence_text)]
    if absent:
        quoted = ", ".join(f"“{t}”" for t in absent[:MAX_TERMS])
        missing.append(("问题中的 " if asked.chinese else "the question's ") + quoted)
    if asked.reasons and not gives_cause(chosen_text):
        missing.append("原因（为什么）" if asked.chinese else "the reasons (why)")
    return missing


def known_names(asked: Asked, texts: Iterable[str], enough: int) -> list[str]:
    """The question's names (casefolded) that at least `enough` of the texts state: names
    the run's sources know, which tell a source about another place apart. Where some of
    them are proper names (no text writes them in lower case: "Ostvale"), only those: a
    region's "North", "Central" or "South" is a word any other country's table uses too."""
    texts = list(texts)
    lowered = [t.casefold() for t in texts]
    names = [n.casefold() for n in asked.names]
    known = [n for n in names if sum(n in t for t in lowered) >= enough]
    opening = [w for w in asked.openings if w not in known
               and sum(w in t for t in lowered) >= enough and is_proper(w, texts)]
    return [n for n in known if is_proper(n, texts)] + opening or known


def names_any(text: str, known: list[str]) -> bool:
    """Whether a lowercased text names one of the `known` names, or cannot be told: it is
    written in another script than one of them (a Chinese page may say a Latin name in
    Chinese)."""
    return any(n in text for n in known) or any(has_cjk(n) != has_cjk(text) for n in known)

