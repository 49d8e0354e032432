"""A dated series (`research_core.loop.publishing.series`) drawn as a PNG with matplotlib's Agg
backend (headless: no display, no pyplot state shared between threads). Drawn off the event
loop (`draw`), since drawing takes a few hundred milliseconds of CPU.

An honest chart (issue 44, item 4): time on the x axis at its true spacing; a line only
between periods next to each other, so a missing month is a gap in the line, not a slope
across it (a point with no neighbour is a marker alone); what the series measures and its
unit as the title; a preliminary or revised point drawn hollow and labelled so; the sources
under it whole, wrapped to the chart's width (the figure grows to hold them), never cut. A
series of fewer than three points is no chart.

The chart's own words (the title's "by month", the periods, "preliminary", "Sources:") are in
the thread's language (`research_core.wording`). Chinese is drawn with a CJK font where the
machine has one (matplotlib falls back to it glyph by glyph: DejaVu Sans, the bundled font,
has no Chinese); without one a Chinese glyph would draw as a box, so the chart's own words
stay English there."""

from __future__ import annotations

import asyncio
import io
import json
import math
import re
import warnings
from functools import cache

import numpy as np
from matplotlib import font_manager
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from research_core.loop.publishing.series import MIN_POINTS, Point, Series
from research_core.wording import ENGLISH, ENGLISH_WORDS, Words

WIDTH_IN, HEIGHT_IN, DPI = 7.0, 3.6, 110
LINE_KEY = "Line segments"  # the PNG text chunk naming the periods the line joins
LINE_COLOUR = "#7a1f1f"  # the app's colour (manifest.yml)
TITLE_SIZE, NOTE_SIZE, LINE_SPACING = 10, 7, 1.35
NOTE_COLOUR = "#555555"
MARGIN_IN = 0.1  # between the figure's edge and the caption
AXIS_IN = 1.2  # what the y axis's labels take of the width beside the title
# a wrapped line breaks after a space, or between two Chinese characters
_PIECE = re.compile(r"[\u3000-\u9fff\uff00-\uffef]|[^\s\u3000-\u9fff\uff00-\uffef]+\s*|\s+")
BASE_FONT = "DejaVu Sans"  # matplotlib's bundled font
CJK_FONTS = ("Noto Sans CJK SC", "Source Han Sans SC", "WenQuanYi Zen Hei",
             "WenQuanYi Micro Hei", "Droid Sans Fallback", "AR PL UMing CN")


@cache
def cjk_font() -> str | None:
    """The first CJK font of CJK_FONTS the machine has (None: none)."""
    installed = {f.name for f in font_manager.fontManager.ttflist}
    return next((name for name in CJK_FONTS if name in installed), None)


def fonts() -> list[str]:
    """The fonts every text of the chart is drawn in, tried glyph by glyph in this order."""
    cjk = cjk_font()
    return [BASE_FONT, cjk] if cjk else [BASE_FONT]


def words_drawn(w: Words) -> Words:
    """The language the chart's own words are drawn in: `w`'s, unless its glyphs would be
    boxes (no CJK font on this machine)."""
    return w if w.language == ENGLISH or cjk_font() is not None else ENGLISH_WORDS


async def draw(series: Series, titles: dict[str, str], w: Words = ENGLISH_WORDS) -> bytes:
    """The chart's PNG bytes (`titles`: source id -> title, for the note under it), its own
    words in the language of `w`."""
    return await asyncio.to_thread(render, series, titles, w)


def render(series: Series, titles: dict[str, str], w: Words = ENGLISH_WORDS) -> bytes:
    """The PNG; its `LINE_KEY` text chunk says which periods the line joins, read back from
    the drawn line itself (a reader, or a test, can check it crosses no gap)."""
    out = io.BytesIO()
    figure = figure_of(series, titles, w)
    with warnings.catch_warnings():  # a glyph no font has draws as a box
        warnings.simplefilter("ignore", UserWarning)
        figure.savefig(out, format="png", metadata={LINE_KEY: json.dumps(
            drawn_segments(figure, series.points))})
    return out.getvalue()


def drawn_segments(figure: Figure, points: tuple[Point, ...]) -> list[list[str]]:
    """The periods of each unbroken run of the figure's line (the first line drawn)."""
    at = {position(p.period): p.period for p in points}
    line = figure.axes[0].get_lines()[0]
    segments: list[list[str]] = [[]]
    for x in np.asarray(line.get_xdata(), dtype=float).tolist():
        if math.isnan(x):
            segments.append([])
        else:
            segments[-1].append(at[x])
    return [s for s in segments if s]


def figure_of(series: Series, titles: dict[str, str], w: Words = ENGLISH_WORDS) -> Figure:
    """The chart as a matplotlib figure, laid out (a series of fewer than three points is no
    chart: ValueError)."""
    if len(series.points) < MIN_POINTS:
        raise ValueError(f"a series of {len(series.points)} points is no chart")
    with warnings.catch_warnings():  # laying out measures the text: the same boxes
        warnings.simplefilter("ignore", UserWarning)
        return _figure(series, titles, words_drawn(w))


def _figure(series: Series, titles: dict[str, str], w: Words) -> Figure:
    figure = Figure(figsize=(WIDTH_IN, HEIGHT_IN), dpi=DPI)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    _plot(axes, series.points, w)
    axes.set_title(_wrapped(figure, series.title_in(w), TITLE_SIZE, WIDTH_IN - AXIS_IN),
                   fontsize=TITLE_SIZE, fontfamily=fonts())
    axes.set_ylabel(series.unit_in(w), fontsize=9, fontfamily=fonts())
    note = _wrapped(figure, _sources(series, titles, w), NOTE_SIZE,
                    WIDTH_IN - 2 * MARGIN_IN)
    note_in = (note.count("\n") + 1) * NOTE_SIZE * LINE_SPACING / 72 + 2 * MARGIN_IN
    figure.set_size_inches(WIDTH_IN, HEIGHT_IN + note_in)
    figure.text(MARGIN_IN / WIDTH_IN, MARGIN_IN / (HEIGHT_IN + note_in), note,
                fontsize=NOTE_SIZE, color=NOTE_COLOUR, va="bottom",
                linespacing=LINE_SPACING, fontfamily=fonts())
    figure.tight_layout(rect=(0, note_in / (HEIGHT_IN + note_in), 1, 1))
    return figure


def _plot(axes: Axes, points: tuple[Point, ...], w: Words) -> None:
    """The line, broken where periods are missing; a marker and the value at each point."""
    xs = [position(p.period) for p in points]
    line_x, line_y = _broken(points, xs)
    axes.plot(line_x, line_y, color=LINE_COLOUR, linewidth=2)
    for hollow in (False, True):
        at = [(x, p) for x, p in zip(xs, points, strict=True) if bool(p.status) == hollow]
        axes.plot([x for x, _ in at], [p.value for _, p in at], linestyle="none", marker="o",
                  color=LINE_COLOUR, markerfacecolor="white" if hollow else LINE_COLOUR)
    for x, point in zip(xs, points, strict=True):
        axes.annotate(point.written + (f"\n{w(point.status)}" if point.status else ""),
                      (x, point.value), textcoords="offset points", xytext=(0, 7),
                      ha="center", va="bottom", fontsize=8, fontfamily=fonts())
    axes.set_xticks(xs, [p.label_in(w) for p in points], rotation=40, ha="right",
                    fontfamily=fonts())
    _style(axes)


def _broken(points: tuple[Point, ...], xs: list[float]) -> tuple[list[float], list[float]]:
    """The line's coordinates, a NaN between two points with a period missing between them
    (matplotlib draws no line through a NaN)."""
    line_x, line_y = [xs[0]], [points[0].value]
    for before, point, x in zip(points, points[1:], xs[1:], strict=False):
        if point.step - before.step > 1:
            line_x.append(math.nan)
            line_y.append(math.nan)
        line_x.append(x)
        line_y.append(point.value)
    return line_x, line_y


def _style(axes: Axes) -> None:
    axes.margins(x=0.06, y=0.25)
    axes.grid(axis="y", alpha=0.3)
    axes.tick_params(labelsize=8)
    axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.6g}"
                                                 if value < 1000 else f"{value:,.0f}"))


def position(period: str) -> float:
    """A period's place on the time axis, in years, at its start ("2026-Q3" → 2026.5,
    "2026-09" → 2026.67): time apart as far as it is."""
    year, part = period.split("-")
    if part[0] in "QH":
        per_year = 4 if part[0] == "Q" else 2
        return int(year) + (int(part[1:]) - 1) / per_year
    return int(year) + (int(part) - 1) / 12


def _sources(series: Series, titles: dict[str, str], w: Words) -> str:
    return w("Sources:") + " " + w("; ").join(titles.get(s) or s for s in series.sources)


def _wrapped(figure: Figure, text: str, size: float, width_in: float) -> str:
    """`text` in lines no wider than `width_in` inches as `figure` draws them, every word
    kept."""
    probe = figure.text(0, 0, "", fontsize=size, fontfamily=fonts())
    lines, line = [], ""
    for piece in _PIECE.findall(text):
        probe.set_text(line + piece.rstrip())
        if line.strip() and probe.get_window_extent().width > width_in * figure.dpi:
            lines.append(line.rstrip())
            line = piece.lstrip()
        else:
            line += piece
    probe.remove()
    return "\n".join([*lines, line.rstrip()])
