"""A model's report sentence that states a figure but cites nothing is mended in code (issue
43, item 4): it gets the citation of the numbered source whose evidence states its figures,
or it goes. A small model drops citations more often than it invents figures; a report is
no longer thrown away for one uncited sentence, nor is a figure left without its source."""

from __future__ import annotations

import re
from collections.abc import Mapping

from research_core.text.figures import figure_keys, figures_in
from research_core.text.sentences import sentences

CITATION = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")  # "[3]", "[1, 4]"
ENDS = ".。!！?？"
EMPTY_BULLETS = ("-", "*", "•")  # a bullet whose sentence was taken out


def uncited(text: str) -> list[str]:
    """The sentences of `text` that state figures and cite nothing (a question is none)."""
    return [s for s in sentences(text, headings=False, clauses=False)
            if figures_in(s) and not CITATION.search(s) and not s.endswith(("?", "？"))]


def mend(text: str, stated: Mapping[int, str]) -> str:
    """`text` with each uncited sentence that states figures cited to the first source (by
    number, in `stated`: its evidence text) that states all of them, or taken out."""
    keys = {n: figure_keys(said) for n, said in stated.items()}
    for sentence in uncited(text):
        text = text.replace(sentence, _cited(sentence, keys), 1)
    return "\n".join(ln for ln in text.splitlines() if ln.strip() not in EMPTY_BULLETS).strip()


def _cited(sentence: str, keys: Mapping[int, set[tuple[str, bool]]]) -> str:
    wanted = {f.key for f in figures_in(sentence)}
    source = next((n for n, have in sorted(keys.items()) if wanted <= have), None)
    if source is None:
        return ""
    body = sentence.rstrip()
    said = body.rstrip(ENDS)
    return f"{said} [{source}]{body[len(said):]}"
