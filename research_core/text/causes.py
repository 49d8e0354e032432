"""Causes in English and Chinese: whether a question asks why ("why", "reasons", "为什么",
"原因"), and whether a text gives a reason ("because", "driven by", "由于", "受…影响").

Two readings of asking why: the plain one (`asks_reasons`, `asks_why`), with which the
answer's "not found" line and admission's deep reads decide, and a wider one
(`asks_explanation`: also "explain…" and 驱动) with which coverage reads the facets of a
question."""

from __future__ import annotations

import re

_CAUSAL = re.compile(r"\b(?:because|due to|driven by|owing to|as a result|reflects?|reflecting|"
                     r"led by|supported by|caused|after|amid|thanks to|explain\w*|helped by|"
                     r"hit by|held back|weigh\w*|boost\w*|kept|lifted|drove|driven)\b|由于|因为|"
                     r"受.{0,12}影响|导致|推动|带动|拖累|主要是|原因", re.I)
_WHY = re.compile(r"\b(?:why|reasons?|causes?|drivers?)\b|为什么|为何|原因", re.I)
_WHY_OR_EXPLAIN = re.compile(
    r"\b(?:why|reasons?|causes?|drivers?|explain\w*)\b|为什么|为何|原因|驱动", re.I)


def asks_reasons(text: str) -> bool:
    """Whether the text asks for reasons: "why", "reasons", "causes", "drivers", 为什么, 为何,
    原因."""
    return _WHY.search(text) is not None


def asks_why(question: str) -> bool:
    """Whether the question asks why: it asks for reasons (`asks_reasons`) or opens with
    "what caused"."""
    return asks_reasons(question) or question.casefold().startswith("what caused")


def asks_explanation(text: str) -> bool:
    """Whether the text asks for reasons or an explanation: `asks_reasons`' words, and
    "explain…" and 驱动 (drives) too."""
    return _WHY_OR_EXPLAIN.search(text) is not None


def gives_cause(text: str) -> bool:
    """Whether the text gives a reason: "because", "due to", "driven by", "amid", "boosted",
    由于, 导致, "受…影响" and the like."""
    return _CAUSAL.search(text) is not None
