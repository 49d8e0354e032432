"""Figures (numbers, percentages, dates) found in text, normalised so that the same figure
written differently compares equal: "1,860" = "1860" = "1.86千"; "0.5%" = "0.50%";
"8.62万" = "86,200"; "24亿" = "2,400,000,000"; "17.7k" = "17,700".

A number glued to a letter before it is a name, not a figure ("Q3", "MX450", "H2O",
"A320"). A sign is ignored (a claim says "fell 3.5%" where a source writes "-3.5%").
The numbers and dates of a text as written ("1,860", "2026-10-31": `number_strings`) are
what a summary must keep of it.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import lru_cache

from research_core.text.periods import MONTH_NAMES
from research_core.text.terms import TEXTS_CACHED

_MAGNITUDES: dict[str, int] = {
    "万亿": 10**12, "千万": 10**7, "百万": 10**6, "千": 10**3, "万": 10**4, "亿": 10**8,
    "k": 10**3, "thousand": 10**3, "million": 10**6, "mn": 10**6, "mln": 10**6,
    "billion": 10**9, "bn": 10**9,
}
_PERCENT = ("%", "％", "percent", "per cent")
_SUFFIX = "|".join(re.escape(s) for s in sorted([*_MAGNITUDES, *_PERCENT], key=len,
                                                   reverse=True))
NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"  # "4,210", "4.21", "86200"
_FIGURE = re.compile(
    rf"(?<![A-Za-z\d.,])({NUMBER})"
    rf"(?:\s?({_SUFFIX})(?![A-Za-z]))?"
    r"(?:(?<=万)(\d{1,4})(?![\d,.]))?"  # "6万7873": the ten-thousands, then the rest
    r"(?:\s?([A-Za-z]{3,}|[\u4e00-\u9fff](?:/[\u4e00-\u9fff])?))?", re.IGNORECASE)
_EMPTY_BRACKETS = re.compile(r"[(（\[]\s*[)）\]]")
_MONTHS = frozenset(MONTH_NAMES) | {m[:3] for m in MONTH_NAMES}  # "12 January" is a date
_NOT_UNITS = _MONTHS | frozenset({
    "and", "are", "but", "for", "from", "the", "was", "were", "with", "year", "years", "than",
    "that", "this", "年", "月", "日", "季", "起", "至", "到", "和", "与", "的", "同", "比", "为",
    "是"})


@dataclass(frozen=True)
class Figure:
    """One figure as written (`text`) and its normalised value: `key` compares figures."""

    text: str
    value: str
    percent: bool
    mantissa: str  # the number before a magnitude word ("8.62" of "8.62万"), else the value
    unit: str = ""  # the word after it ("units", "元/吨"), "" when none stands there

    @property
    def key(self) -> tuple[str, bool]:
        return self.value, self.percent

    @property
    def amount(self) -> float:
        """The value as a number (0.0 where it is none)."""
        try:
            return float(self.value)
        except ValueError:
            return 0.0


def figures_in(text: str) -> list[Figure]:
    """Every figure of `text`, in order."""
    return list(_figures_in(text))


@lru_cache(maxsize=TEXTS_CACHED)
def _figures_in(text: str) -> tuple[Figure, ...]:
    """`figures_in`, once per text: the picker and the revision check read every sentence's
    figures against every other's."""
    found = []
    for match in _FIGURE.finditer(text):
        number, suffix, unit = match.group(1), (match.group(2) or "").lower(), match.group(4)
        end = match.end(3) if match.group(3) else match.end(2) if suffix else match.end(1)
        figure = _figure(text[match.start():end], number, suffix, _unit(unit), match.group(3))
        if figure is not None:
            found.append(figure)
    return tuple(found)


# A count's noun (`counted`): English writes what a count counts right after it, as a noun
# phrase whose head, the last of its words, is plural ("248,000 residential heat pumps sold",
# "2.61 million passengers"); these words end the phrase before its head is found.
_PHRASE_END_TEXT = """a an the and or but nor of in on at by for from to with than as per via
    each every were was are is be been being had has have do did does that which who whom whose
    this these those its their his her our your up down over under into onto off out between
    during since until till through about after before against among around"""
_PHRASE_ENDS = frozenset(_PHRASE_END_TEXT.split())
_IRREGULAR_PLURAL_TEXT = "people men women children staff personnel cattle sheep fish deer"
_IRREGULAR_PLURALS = frozenset(_IRREGULAR_PLURAL_TEXT.split())
_PHRASE_WORD = re.compile(r"\s*([A-Za-z][A-Za-z'’-]*)")
COUNT_NOUN_WORDS = 4  # a count's noun phrase, as written, holds at most this many words


def counted(text: str, end: int) -> str:
    """What a count written just before `end` counts: the head of the noun phrase right after
    it, casefolded ("pumps" of "248,000 residential heat pumps sold", "passengers" of "2.61
    million passengers", "units" of "474,000 units from …"); "" where no plural noun follows
    within a few words, before a function word, a unit's symbol or a mark ("189,000 in
    December", "8 kW units")."""
    at = end
    for _ in range(COUNT_NOUN_WORDS):
        word = _PHRASE_WORD.match(text, at)
        if word is None:
            return ""
        written = word.group(1)
        low = written.casefold()
        if low in _PHRASE_ENDS or _symbol(written):
            return ""
        if _plural(low):
            return low
        at = word.end()
    return ""


def _symbol(word: str) -> bool:
    """A unit's symbol, no word of a noun phrase: "kW", "MWh", "kg" (a capital after the first
    letter, or two letters or fewer)."""
    return len(word) <= 2 or any(c.isupper() for c in word[1:])


def _plural(word: str) -> bool:
    """A plural English noun as a count's head is written: "pumps", "units", "people"."""
    return word in _IRREGULAR_PLURALS or (
        len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")))


def without_figures(text: str) -> str:
    """The text with its numbers (and their magnitude words and percent signs) taken out, the
    unit words kept: what a sentence is about, for an embedder that a run of figures throws
    off (a sentence stating a quarter's exports in thousands and in millions and their change
    scored 0.15 against a question on that country's export volume, 0.34 without its
    figures)."""
    kept = _FIGURE.sub(lambda m: f" {m.group(4) or ''} ", text)
    return " ".join(_EMPTY_BRACKETS.sub(" ", kept).split())


def figure_keys(text: str) -> set[tuple[str, bool]]:
    """What a text states, for matching claims against it: each figure's value, and for a
    figure with a magnitude word also the number as written before it."""
    keys: set[tuple[str, bool]] = set()
    for f in figures_in(text):
        keys.add(f.key)
        keys.add((f.mantissa, f.percent))
    return keys


def date_keys(day: dt.date | None) -> set[tuple[str, bool]]:
    """A publish date's year, month and day, as figures a text about it may state."""
    if day is None:
        return set()
    return {(str(n), False) for n in (day.year, day.month, day.day)}


def _figure(text: str, number: str, suffix: str, unit: str,
            rest: str | None = None) -> Figure | None:
    """`rest`: the digits after 万 in a figure written "6万7873" (67,873)."""
    try:
        mantissa = Decimal(number.replace(",", ""))
    except InvalidOperation:
        return None
    percent = suffix in _PERCENT
    value = mantissa * _MAGNITUDES.get(suffix, 1) + Decimal(rest or 0)
    return Figure(text.strip(), _plain(value), percent,
                  _plain(value if rest else mantissa), "%" if percent else unit)


def _unit(word: str | None) -> str:
    unit = (word or "").lower()
    return "" if unit in _NOT_UNITS else unit


def _plain(value: Decimal) -> str:
    """A decimal without exponent or trailing zeros: 86200, 0.5, 1.86."""
    text = format(value.normalize(), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


ROUND_ZEROS = 2  # trailing zeros that mark a rounded whole number ("11,600"; "120" may be exact)


def rounding_of(a: Figure, b: Figure) -> bool:
    """Whether one figure is the other rounded to the places it is written with: "11,600"
    of 11,637, "1.16万" of 11,637 (a source that rounds does not disagree)."""
    coarse = max(_precision(a), _precision(b))
    return coarse > 1 and abs(a.amount - b.amount) < coarse / 2


def _precision(figure: Figure) -> float:
    """The place a figure is written to: 100 for "11,600", 100 for "1.16万", 1 for "11,637"
    and for "120"."""
    mantissa = figure.mantissa
    if figure.value != mantissa or "." in mantissa:
        scale = float(figure.value) / float(mantissa) if float(mantissa) else 1.0
        places = len(mantissa.partition(".")[2])
        return float(scale * 10 ** -places)
    zeros = len(mantissa) - len(mantissa.rstrip("0"))
    return float(10 ** zeros) if zeros >= ROUND_ZEROS else 1.0


def measured(text: str, least: int = 1) -> bool:
    """Whether the text states at least `least` figures with a unit or a percent sign ("8.62万元/
    吨", "+12.4%"; not "9月" or "2026")."""
    return sum(1 for f in figures_in(text) if f.unit or f.percent) >= least


def telling(text: str) -> set[tuple[str, bool]]:
    """The figures that identify a statement: percentages and numbers of 100 or more that
    are not years ("474,000 units", "8.0%"), not "14 markets" or "2026"."""
    return {f.key for f in figures_in(text) if f.percent or (
        f.amount >= 100 and not (f.value.isdigit() and 1900 <= int(f.value) <= 2100
                                 and not f.unit))}


def telling_figures(text: str) -> list[Figure]:
    """The text's figures whose value is one of its telling ones (`telling`), in order."""
    keys = telling(text)
    return [f for f in figures_in(text) if f.key in keys]


def states_measure(text: str) -> bool:
    """Whether a sentence states a measure: a telling figure, or a figure with its unit
    ("9.8小时", "31.5 hours"); a date ("12 January 2027", "9月") or a year is none."""
    return bool(telling(text)) or measured(text)


WAN = 10_000  # the Chinese magnitude word 万: ten thousand


def written_for(figure: Figure, zh: bool) -> str:
    """A figure of ten thousand or more as the other language writes it: 86,200 as "8.62万"
    for Chinese text, 8.62万 as "86,200" for English (a figure is the one thing two
    languages write alike once its magnitude is spelled their way); "" below that."""
    amount = figure.amount
    if figure.percent or amount < WAN:
        return ""
    if zh:
        return f"{amount / WAN:.2f}".rstrip("0").rstrip(".") + "万"
    return f"{amount:,.0f}" if amount.is_integer() else f"{amount:,.2f}"


TABLE_FIGURE_LEAST = 100  # a bare number matched by its digits alone, from this size


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


# A run of digits with the separators of numbers and dates between them: "1,860", "3.5",
# "2026-10-31", "10:30", "9/30".
_DIGITS = re.compile(r"\d+(?:[.,:/-]\d+)*")


def number_strings(text: str) -> list[str]:
    """Every number or date of the text as written ("1,860", "2026-10-31"), in order."""
    return _DIGITS.findall(text)


def is_number_string(text: str) -> bool:
    """Whether the text is one number or date and nothing else ("1860", "2026-10-31")."""
    return _DIGITS.fullmatch(text) is not None
