"""A dated series (`research_core.loop.publishing.series`) drawn as a PNG with matplotlib's Agg
backend (headless: no display, no pyplot state shared between threads): one line with a marker and
its value at each period, the unit on the axis, the sources under it. Drawn off the event loop
(`draw`), since drawing takes a few hundred milliseconds of CPU."""

from __future__ import annotations

import asyncio
import io
import warnings

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from research_core.loop.publishing.series import Series

WIDTH_IN, HEIGHT_IN, DPI = 7.0, 3.6, 110
LINE_COLOUR = "#7a1f1f"  # the app's colour (manifest.yml)
TITLE_CHARS = 90
NOTE_CHARS = 160


async def draw(series: Series, titles: dict[str, str]) -> bytes:
    """The chart's PNG bytes (`titles`: source id -> title, for the note under it)."""
    return await asyncio.to_thread(render, series, titles)


def render(series: Series, titles: dict[str, str]) -> bytes:
    with warnings.catch_warnings():  # a glyph the bundled font lacks (Chinese) draws as a box
        warnings.simplefilter("ignore", UserWarning)
        return _render(series, titles)


def _render(series: Series, titles: dict[str, str]) -> bytes:
    figure = Figure(figsize=(WIDTH_IN, HEIGHT_IN), dpi=DPI)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    xs = [_position(p.period) for p in series.points]  # time apart as far as it is
    values = [p.value for p in series.points]
    axes.plot(xs, values, marker="o", color=LINE_COLOUR, linewidth=2)
    axes.set_xticks(xs, [p.label for p in series.points], rotation=40, ha="right")
    for x, point in zip(xs, series.points, strict=True):
        axes.annotate(point.written, (x, point.value), textcoords="offset points",
                      xytext=(0, 7), ha="center", fontsize=8)
    axes.set_title(_cut(series.about, TITLE_CHARS), fontsize=10)
    axes.set_ylabel(f"{series.unit_label}, by {series.grain}", fontsize=9)
    axes.margins(y=0.2)
    axes.grid(axis="y", alpha=0.3)
    axes.tick_params(labelsize=8)
    axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.6g}"
                                                 if value < 1000 else f"{value:,.0f}"))
    sources = "Sources: " + "; ".join(titles.get(s) or s for s in series.sources)
    figure.text(0.01, 0.01, _cut(sources, NOTE_CHARS), fontsize=7, color="#555555")
    figure.tight_layout(rect=(0, 0.05, 1, 1))
    out = io.BytesIO()
    figure.savefig(out, format="png")
    return out.getvalue()


def _position(period: str) -> float:
    """A period's place on the time axis, in years ("2026-Q3" → 2026.5, "2026-09" → 2026.67)."""
    year, part = period.split("-")
    if part[0] in "QH":
        per_year = 4 if part[0] == "Q" else 2
        return int(year) + (int(part[1:]) - 1) / per_year
    return int(year) + (int(part) - 1) / 12


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"
