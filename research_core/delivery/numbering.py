"""Citations as a reader sees them (issue 44): one style for every message, numbered [1], [2] …
in the order of first use within the message, whatever the text cites by.

A part cites its sources by id (`[chpa-autumn-report]`, an evidence line's `[id; publisher;
date]`, a conflict's `(id)`), a report and a follow-up by the number of their own source list
(`[3]`, `[1, 4]`); `number` reads them all and gives the message's
pieces: the text between citations, and each citation renumbered. A bracket whose every item
is no known source (`[sic]`, `[2025]`) stays text. The message's sources are then exactly the
cited ones, in their new order: no gaps, no source listed that the text does not cite.
"""

from __future__ import annotations

import re
from collections.abc import Container, Mapping
from dataclasses import dataclass

BRACKET = re.compile(r"\[([^\[\]\n]{1,200})\]|\(([^()\n]{1,200})\)")
ITEMS = re.compile(r"\s*[,，]\s*")
FIELDS = re.compile(r"\s*[;；]\s*")


@dataclass(frozen=True)
class Cite:
    """One citation: its number in the message and the source it names."""

    number: int
    source_id: str


Piece = str | Cite


@dataclass(frozen=True)
class Numbered:
    pieces: list[Piece]
    sources: list[str]  # the cited source ids, source k at index k - 1


def number(text: str, listed: Mapping[int, str], known: Container[str]) -> Numbered:
    """`text` with every citation renumbered by first use; `listed`: the source id of each
    number the text's own list gives, `known`: the ids it may cite by name."""
    order: dict[str, int] = {}
    pieces: list[Piece] = []
    at = 0
    for found in BRACKET.finditer(text):
        bracketed = found.group(1) is not None  # a parenthesis cites by name only
        ids = _resolve(found.group(1) if bracketed else found.group(2),
                       listed if bracketed else {}, known)
        if ids is None:
            continue
        pieces.append(text[at:found.start()])
        pieces.extend(Cite(order.setdefault(s, len(order) + 1), s) for s in ids)
        at = found.end()
    pieces.append(text[at:])
    return Numbered([p for p in pieces if p != ""], list(order))


def _resolve(inside: str, listed: Mapping[int, str], known: Container[str]) -> list[str] | None:
    """The source ids a bracket cites, each once, or None when one item names none; an
    evidence line's `[id; publisher; date]` cites its id (the fields after `;` are its)."""
    ids: list[str] = []
    for item in ITEMS.split(FIELDS.split(inside.strip())[0]):
        source = listed.get(int(item)) if item.isdigit() and item.isascii() else None
        source = source or (item if item in known else None)
        if source is None:
            return None
        ids.append(source)
    return list(dict.fromkeys(ids))


def plain(numbered: Numbered) -> str:
    """The numbered text without links (a notification, a terminal)."""
    return "".join(p if isinstance(p, str) else f"[{p.number}]" for p in numbered.pieces)
