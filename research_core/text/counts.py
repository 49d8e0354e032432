"""Two bodies' counts of one thing: two different figures for one measure that a source sets
side by side, each given to the body it comes from, are two counts (two definitions, two
scopes: shipments and sales, with and without a kind of unit), not an error to settle and not
a correction. A body that quotes another body's figure beside its own and keeps its own, or a
third source that gives each body its figure in one sentence, says as much by where it writes
them; no cue word is read, so the measure holds in any language.

A figure is given to the body whose name is written nearest before it in its sentence (the
sentence's own publisher where none is): "EESB reported 612,000 …, higher than CHPA's 571,000"
gives 612,000 to EESB and 571,000 to CHPA, while "EESB revised 612,000 to 598,000" gives both
to one body, which is a revision. The bodies are the publishers of the sources at hand, named
as their sources name them: in full, the name before a bracket, or the short name inside it
("Continental Heat Pump Association (CHPA)")."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from research_core.text.figures import Figure, figures_in, same_figure
from research_core.text.terms import has_cjk

_BRACKET = re.compile(r"\s*[(（]([^()（）]+)[)）]\s*")
MIN_NAME = 2  # a shorter name (one letter) names nothing


class Sourced(Protocol):
    """What the measure reads of one sentence of a source."""

    @property
    def text(self) -> str: ...

    @property
    def source_id(self) -> str: ...

    @property
    def publisher(self) -> str: ...


S = TypeVar("S", bound=Sourced)


@dataclass(frozen=True)
class Counted(Generic[S]):
    """A sentence that gives two figures to two bodies: `bodies` in the order the figures
    are written."""

    passage: S
    bodies: tuple[str, str]  # the two bodies' publisher names, as the sources give them
    figures: tuple[Figure, Figure]  # each body's figure, in the same order


def name_forms(publisher: str) -> list[str]:
    """The ways a text names a body, longest first: its whole name, the name before a
    bracket and the short name inside it."""
    whole = publisher.strip()
    if not whole:
        return []
    forms = {whole, _BRACKET.sub(" ", whole).strip(), *(m.strip() for m in
                                                          _BRACKET.findall(whole))}
    return sorted((f for f in forms if len(f) >= MIN_NAME), key=len, reverse=True)


def short_name(publisher: str) -> str:
    """How an answer names a body: the short name in its bracket where it has one
    ("CHPA"), else its name."""
    inside = _BRACKET.findall(publisher)
    return inside[-1].strip() if inside else publisher.strip()


def _mentions(text: str, form: str) -> list[int]:
    """Where `text` writes the name `form` (a Latin name as a whole word, any case)."""
    if has_cjk(form):
        return [m.start() for m in re.finditer(re.escape(form), text)]
    pattern = re.compile(rf"(?<![\w]){re.escape(form)}(?![^\W_])", re.IGNORECASE)
    return [m.start() for m in pattern.finditer(text)]


def _named(text: str, bodies: Sequence[str]) -> list[tuple[int, int, str]]:
    """(start, end, body) of every name of a body in the text, longest names first where
    two overlap."""
    spans: list[tuple[int, int, str]] = []
    for body in bodies:
        for form in name_forms(body):
            for at in _mentions(text, form):
                end = at + len(form)
                if not any(s <= at < e or s < end <= e for s, e, _ in spans):
                    spans.append((at, end, body))
    return sorted(spans)


def given_to(text: str, at: int, bodies: Sequence[str], own: str) -> str:
    """The body the figure written at `at` is given to: the one named nearest before it in
    the sentence, else the sentence's own publisher."""
    before = [body for start, end, body in _named(text, bodies) if end <= at]
    return before[-1] if before else own


def _places(text: str, figure: Figure) -> list[int]:
    """Where the text writes `figure` (in any form it is written in)."""
    out, start = [], 0
    for found in figures_in(text):
        at = text.find(found.text, start)
        if at < 0:
            continue
        start = at + len(found.text)
        if same_figure(found, figure):
            out.append(at)
    return out


def counted_apart(x: Figure, y: Figure, lines: Sequence[S]) -> Counted[S] | None:
    """The first sentence of `lines` that gives `x` and `y` (two figures of one measure) to
    two different bodies among the lines' publishers; None where none does."""
    if x.key == y.key:
        return None
    bodies = sorted({ln.publisher.strip() for ln in lines if ln.publisher.strip()})
    if len(bodies) < 2:
        return None
    for line in lines:
        xs, ys = _places(line.text, x), _places(line.text, y)
        if not (xs and ys):
            continue
        own = line.publisher.strip()
        to_x = {given_to(line.text, at, bodies, own) for at in xs}
        to_y = {given_to(line.text, at, bodies, own) for at in ys}
        if len(to_x) == len(to_y) == 1 and to_x != to_y and "" not in to_x | to_y:
            (bx,), (by,) = to_x, to_y
            if xs[0] < ys[0]:
                return Counted(line, (bx, by), (x, y))
            return Counted(line, (by, bx), (y, x))
    return None


def two_counts(first: S, x: Figure, second: S, y: Figure, lines: Sequence[S]
               ) -> Counted[S] | None:
    """The sentence of `lines` that shows `x` (of `first`'s source) and `y` (of `second`'s)
    to be two bodies' counts; None where the two sources are one body's (its revision) or
    no sentence gives the figures to two bodies."""
    if first.publisher.strip() == second.publisher.strip():
        return None
    return counted_apart(x, y, lines)
