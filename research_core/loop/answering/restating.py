"""Lines that a later correction outvotes, restated rather than repeated. Where a body gives
another figure for what it published earlier (an erratum, a revised release: a disagreement of
`research_core.text.conflicts` that the body settles), a line of its earlier release that
states the old figure is given with the corrected one, the old one beside it and
the correction cited ("Q2 2026 4,150 (revised from 4,210 [2])"): a table row keeps the
quarters around it. A line that also states a percentage is left out instead: its rates were
computed from the old figure."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation

from research_core.loop.memory.evidence import Evidence
from research_core.loop.memory.pool import Line
from research_core.text import conflicts
from research_core.text.conflicts import Disagreement
from research_core.text.figures import NUMBER, Figure, figures_in

TABLE_FIGURE_LEAST = 100  # a bare number matched by its digits alone, from this size
_NUMBER = re.compile(NUMBER)
_WAS = {False: "revised from", True: "更正前为"}


@dataclass(frozen=True)
class Correction:
    old: Figure  # as the outvoted source states it
    new: Figure  # as the correcting source states it
    outvoted: str  # the source id whose lines state the old figure
    by: Evidence  # the correcting source


def corrections(found: Sequence[Disagreement[Line]], pool: Sequence[Line] = ()
                ) -> list[Correction]:
    """The disagreements where a body corrects its own earlier figure (the same publisher,
    later), or where the preferred line says it corrects the other's figure and names it,
    with a figure the earlier source states nowhere in `pool`: another source's
    figure, or one the earlier source gives for another month, is no correction of it."""
    stated: dict[str, set[str]] = {}
    for line in pool:
        stated.setdefault(line.source_id, set()).update(f.value for f in figures_in(line.text))
    out = []
    for d in found:
        (new_line, new), (old_line, old) = d.first, d.second
        if (_own_revision(d) or _names_it(d)) and old.amount > 0 and \
                new.value not in stated.get(old_line.source_id, set()):
            out.append(Correction(old, new, old_line.source_id, new_line.evidence))
    return [*out, *_quoting(found, out, stated)]


def correcting(found: Sequence[Disagreement[Line]]) -> list[Line]:
    """The lines that say they correct another's figure and name it (`_names_it`)."""
    return list({d.first[0].text: d.first[0] for d in found if _names_it(d)}.values())


def _own_revision(d: Disagreement[Line]) -> bool:
    """A body's later figure for what it published earlier."""
    return conflicts.settled(d) and d.reason == "later"


def _names_it(d: Disagreement[Line]) -> bool:
    """A preferred line that says it corrects the other's figure, and states it ("由原公布的
    1.86万元/吨更正为1.74万元/吨" against a news item that quotes 1.86)."""
    (new_line, _), (_, old) = d.first, d.second
    return bool(d.reason) and bool(conflicts.CUE.search(new_line.text)) and \
        states_figure(new_line.text, old)


def _quoting(found: Sequence[Disagreement[Line]], fixes: list[Correction],
             stated: dict[str, set[str]]) -> list[Correction]:
    """Sources that repeat a corrected figure (a news item quoting the first release) are
    outvoted by the correction too, where the correcting source outranks them and they state
    the corrected figure nowhere."""
    out = []
    for d in found:
        (new_line, new), (old_line, old) = d.first, d.second
        fix = next((c for c in fixes if c.by.source_id == new_line.source_id
                    and same_figure(old, c.old) and c.outvoted != old_line.source_id), None)
        if fix is not None and d.reason and new.value not in stated.get(old_line.source_id, set()):
            out.append(Correction(old, new, old_line.source_id, fix.by))
    return out


def restated(pool: list[Line], found: Sequence[Disagreement[Line]],
             cite: Callable[[Evidence], str | None], zh: bool) -> list[Line]:
    """The pool with each line a correction outvotes restated (or, stating a percentage,
    left out); every other line as it was."""
    fixes = corrections(found, pool)
    out = []
    for line in pool:
        figures = figures_in(line.text)
        mine = [c for c in fixes if c.outvoted == line.source_id and
                any(same_figure(f, c.old) for f in figures)]
        if not mine:
            out.append(line)
        elif not any(f.percent for f in figures):
            out.append(replace(line, text=_restate(line.text, mine, cite, zh)))
    return out


def same_figure(stated: Figure, figure: Figure) -> bool:
    """Whether `stated` is `figure` in any form: "4.21 million" for "4,210 thousand bales",
    or a table row's "4,210" under a "(thousand bales)" heading (a number of 100 or more: a
    small one is too common to be that figure)."""
    if stated.percent != figure.percent:
        return False
    return stated.value == figure.value or (
        float(figure.mantissa) >= TABLE_FIGURE_LEAST
        and figure.mantissa in (stated.value, stated.mantissa))


def states_figure(text: str, figure: Figure) -> bool:
    """Whether a text states the figure in any form (`same_figure`)."""
    return any(same_figure(f, figure) for f in figures_in(text))


def _restate(text: str, fixes: list[Correction], cite: Callable[[Evidence], str | None],
             zh: bool) -> str:
    """The text with each old figure replaced by the corrected one (written as the text
    writes it); the first replaced says what it was and cites the correction."""
    out, at, noted = [], 0, False
    for f in figures_in(text):
        fix = next((c for c in fixes if same_figure(f, c.old)), None)
        start = text.find(f.text, at)
        new = _scaled(f, fix) if fix else None
        if fix is None or new is None or start < 0:
            continue
        mark = f" {cite(fix.by)}" if cite(fix.by) else ""
        end = start + len(f.text)
        glued = zh and f.unit and text.startswith(f.unit, end)  # "6.40万元/吨": after the unit
        unit = f.unit if glued else ""
        note = "" if noted else f"（{_WAS[zh]}{f.text}{unit}{mark}）" if zh else \
            f" ({_WAS[zh]} {f.text}{mark})"
        out += [text[at:start], new, unit, note]
        at, noted = end + len(unit), True
    return "".join([*out, text[at:]])


def _scaled(stated: Figure, fix: Correction) -> str | None:
    """`stated` as the correction would write it: its number times new/old, with as many
    decimals and the same thousands separators ("4,210" → "4,150", "4.21 million" → "4.15
    million")."""
    number = _NUMBER.search(stated.text)
    ratio = _ratio(fix)
    if number is None or ratio is None:
        return None
    written = number.group(0)
    value = Decimal(written.replace(",", "")) * ratio
    decimals = len(written.split(".")[1]) if "." in written else 0
    shown = f"{value:,.{decimals}f}" if "," in written else f"{value:.{decimals}f}"
    return stated.text.replace(written, shown, 1)


def _ratio(fix: Correction) -> Decimal | None:
    """New over old, each read as a value or as its number before a magnitude word
    ("4,150 thousand" over a row's "4,210"), whichever pair is closest to one: a correction
    moves a figure a little, not by a thousandfold."""
    try:
        ratios = [Decimal(n) / Decimal(o) for n in (fix.new.value, fix.new.mantissa)
                  for o in (fix.old.value, fix.old.mantissa) if Decimal(o) != 0]
    except InvalidOperation:
        return None
    return min(ratios, key=lambda r: abs(r.ln()) if r > 0 else Decimal("Infinity"),
               default=None)
