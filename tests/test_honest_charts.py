"""Honest charts (issue 44, item 4), drawn for real with matplotlib's Agg backend and read back
from the figure and its pixels: time at its true spacing; no line across a missing period
(September 2025 → September 2026 is a gap, not a slope hiding the winter); the measure and
unit as the title, not the question; a preliminary or revised point marked; the sources
under the chart whole; fewer than three points no chart. The series come from the evidence
as the sample corpus words it, through the real figure and period grammar."""

from __future__ import annotations

import datetime as dt
import io
import json
import math

import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.text import Text
from PIL import Image

from contract.slack_client import make_client
from playground.fake_slack import FakeSlack
from research_core.loop.memory.evidence import Evidence
from research_core.loop.publishing.series import Point, Series, series_of
from tests.conftest import SLACK_TOKEN
from workers.chart_image import LINE_COLOUR, LINE_KEY, figure_of, render
from workers.slack_charts import PartCharts

ABOUT = "How did heat pump sales move in 2026?"
SEPTEMBER = ("Residential heat pump sales in the 14 European markets tracked by the Continental "
             "Heat Pump Association (CHPA) rose to 214,000 units in September 2026, up 12.4% "
             "from 190,400 units a year earlier.")
OCTOBER = ("The October 2026 figure of 222,000 units (+11.0%) is preliminary and based on the "
           "CHPA distributor panel for the first 26 days of the month.")


def item(source_id: str, title: str, text: str, published: dt.date) -> Evidence:
    return Evidence(f"E-{source_id}", "N1", "q1", source_id, title, f"https://{source_id}.example/",
                    published, "news", title, text, 0.9, 0.65, 1.0, 0.9, "", True)


def months() -> Series:
    """September 2025, September 2026 and a preliminary October 2026, as the sources say."""
    found = series_of([
        item("weekly", "European heat pump sales jump 12.4% in September", SEPTEMBER,
             dt.date(2026, 10, 14)),
        item("chpa", "European Heat Pump Market Report, Autumn 2026", OCTOBER,
             dt.date(2026, 10, 29))], ABOUT)
    assert found is not None
    return found


def quarters(*values: float) -> Series:
    return Series(ABOUT, "units", "quarter", tuple(
        Point(f"2026-Q{i}", v, f"{v:,.0f}", "chpa") for i, v in enumerate(values, 1)))


def axes_of(figure: Figure) -> Axes:
    [axes] = figure.axes
    return axes


def line_of(axes: Axes) -> Line2D:
    """The drawn line (the marker-only series have no line style)."""
    [line] = [ln for ln in axes.get_lines() if ln.get_linestyle() != "None"]
    return line


def segments(line: Line2D) -> list[list[float]]:
    """The runs of points the line joins: a NaN breaks it."""
    runs: list[list[float]] = [[]]
    for x in np.asarray(line.get_xdata(), dtype=float):
        if math.isnan(x):
            runs.append([])
        else:
            runs[-1].append(float(x))
    return [r for r in runs if r]


def coloured(figure: Figure, axes: Axes, x: float, y: float) -> bool:
    """Whether the drawn chart shows the line's colour within two pixels of (x, y)."""
    raw = io.BytesIO()
    figure.savefig(raw, format="rgba")  # the Agg canvas's pixels, as render() writes them
    width, height = figure.canvas.get_width_height()
    pixels = np.frombuffer(raw.getvalue(), np.uint8).reshape(height, width, 4)[:, :, :3] / 255
    px, py = axes.transData.transform((x, y))
    row, column = pixels.shape[0] - round(py), round(px)
    near = pixels[row - 2:row + 3, column - 2:column + 3]
    return bool((np.abs(near - np.array(to_rgb(LINE_COLOUR))).sum(axis=2) < 0.15).any())


def test_no_line_is_drawn_across_missing_months() -> None:
    series = months()
    assert [(p.label, p.written) for p in series.points] == [
        ("Sep 2025", "190,400"), ("Sep 2026", "214,000"), ("Oct 2026", "222,000")]
    figure = figure_of(series, {})
    axes = axes_of(figure)
    sep25, sep26, oct26 = (p.value for p in series.points)
    [x0, x1, x2] = sorted({x for run in segments(line_of(axes)) for x in run})
    assert segments(line_of(axes)) == [[x0], [x1, x2]]  # September 2025 stands alone
    mid = (x0 + x1) / 2
    assert not coloured(figure, axes, mid, (sep25 + sep26) / 2)  # no slope across the gap
    assert coloured(figure, axes, (x1 + x2) / 2, (sep26 + oct26) / 2)  # next months: joined
    joined = axes_of(figure_of(quarters(515_000, 474_000, 571_000, 548_000), {}))
    assert len(segments(line_of(joined))) == 1  # four quarters in a row: one line


def test_time_is_at_its_true_spacing() -> None:
    axes = axes_of(figure_of(months(), {}))
    xs = sorted(x for ln in axes.get_lines() if ln.get_linestyle() == "None"
                for x in np.asarray(ln.get_xdata(), dtype=float))
    assert (xs[1] - xs[0]) / (xs[2] - xs[1]) == pytest.approx(12)  # 12 months, then 1
    labels = [t.get_text() for t in axes.get_xticklabels()]
    assert labels == ["Sep 2025", "Sep 2026", "Oct 2026"]


def test_the_title_is_the_measure_and_its_unit_not_the_question() -> None:
    series = months()
    assert series.title == "Heat pump sales (units, by month)"
    figure = figure_of(series, {})
    assert axes_of(figure).get_title() == "Heat pump sales (units, by month)"
    shown = [t.get_text() for t in figure.findobj(Text)]
    assert shown and not any("How did" in t for t in shown)
    assert quarters(1, 2, 3).title == "Units, by quarter"  # no measure named: the unit


def test_a_preliminary_point_is_marked_as_its_source_says() -> None:
    series = months()
    assert [p.status for p in series.points] == ["", "", "preliminary"]
    assert "Oct 2026: 222,000 (preliminary)" in series.describe({})
    axes = axes_of(figure_of(series, {}))
    hollow = [ln for ln in axes.get_lines() if ln.get_markerfacecolor() == "white"]
    assert [np.asarray(ln.get_ydata(), dtype=float).tolist() for ln in hollow] == [[222_000]]
    notes = [t.get_text() for t in axes.texts]
    assert notes == ["190,400", "214,000", "222,000\npreliminary"]


def test_a_revised_figure_is_marked_but_not_the_one_it_replaced() -> None:
    revised = item("board", "Heat pump statistics", "Heat pump sales for September 2026 were "
                   "revised to 209,000 units.", dt.date(2026, 11, 2))
    others = item("weekly", "Heat pump sales", "Heat pump sales were 190,400 units in "
                  "September 2025 and 222,000 units in October 2026.", dt.date(2026, 11, 2))
    found = series_of([revised, others], ABOUT)
    assert found is not None
    assert [(p.label, p.status) for p in found.points] == [
        ("Sep 2025", ""), ("Sep 2026", "revised"), ("Oct 2026", "")]
    old_and_new = item("board", "Heat pump statistics", "Heat pump sales for September 2026 "
                       "were revised from 214,000 units to 209,000 units.", dt.date(2026, 11, 2))
    found = series_of([old_and_new, others], ABOUT)
    assert found is not None  # the grammar dates the old figure only: it is not the revised one
    assert [p.status for p in found.points] == ["", "", ""]
    elsewhere = item("weekly", "Heat pump sales", "Heat pump sales were 190,400 units in "
                     "September 2025, and 214,000 units in September 2026, while provisional "
                     "panel data point to a rise in October 2026.", dt.date(2026, 11, 2))
    found = series_of([elsewhere, others], ABOUT)
    assert found is not None and all(p.status == "" for p in found.points)


def test_the_sources_are_under_the_chart_whole() -> None:
    titles = {"weekly": "European heat pump sales jump 12.4% in September, as installers report "
                        "the longest waits since records began after the December rush",
              "chpa": "European Heat Pump Market Report, Autumn 2026: firm data for November "
                      "2025 to September 2026 and a preliminary October from the panel"}
    figure = figure_of(months(), titles)
    [note] = [t for t in figure.texts if t.get_text().startswith("Sources:")]
    written = " ".join(note.get_text().split())
    assert written == "Sources: " + "; ".join(titles[s] for s in ("weekly", "chpa"))
    assert note.get_text().count("\n") >= 1  # wrapped, not cut
    figure.canvas.draw()
    inside = figure.bbox
    box = note.get_window_extent()
    assert inside.x0 <= box.x0 and box.x1 <= inside.x1 and inside.y0 <= box.y0
    chart = axes_of(figure).get_tightbbox()
    assert chart is not None and box.y1 < chart.y0  # under the chart, not over it
    short = figure_of(months(), {}).get_size_inches()[1]
    assert figure.get_size_inches()[1] > short  # the figure grew to hold it


def test_fewer_than_three_points_is_no_chart() -> None:
    two = quarters(474_000, 571_000)
    with pytest.raises(ValueError):
        render(two, {})
    assert render(quarters(474_000, 571_000, 548_000), {}).startswith(b"\x89PNG")
    one = item("weekly", "Heat pump sales", "Heat pump sales were 190,400 units in September "
               "2025 and 222,000 units in October 2026.", dt.date(2026, 11, 2))
    assert series_of([one], ABOUT) is None


async def test_a_part_gets_no_chart_of_two_points_and_a_titled_one_of_three(
        fake: FakeSlack) -> None:
    charts = {"N1": quarters(474_000, 571_000), "N2": months()}
    client = make_client(SLACK_TOKEN, fake.base_url)
    parts = PartCharts(client, lambda key, _: (charts[key], {}))
    assert await parts.block("N1", ["chpa"]) is None
    assert not fake.calls("files.getUploadURLExternal")  # nothing drawn, nothing uploaded
    block = await parts.block("N2", ["chpa", "weekly"])
    assert block is not None
    assert block["title"]["text"] == "Heat pump sales (units, by month)"
    [stored] = fake.files.live()
    assert stored.is_image and "222,000 (preliminary)" in block["alt_text"]


def test_a_chinese_caption_is_wrapped_between_characters_not_cut() -> None:
    title = "中国羊毛市场月报：细羊毛均价在九月回升，粗羊毛均价持平，进口量下降" * 4
    series = Series("细羊毛均价怎么样？", "万元/吨", "month", tuple(
        Point(f"2026-0{i}", 5 + i / 10, f"{5 + i / 10}万元/吨", "wool") for i in (1, 2, 3)),
        "细羊毛均价")
    figure = figure_of(series, {"wool": title})
    [note] = [t for t in figure.texts if t.get_text().startswith("Sources:")]
    assert note.get_text().replace("\n", "") == f"Sources: {title}"
    assert note.get_text().count("\n") >= 1
    assert axes_of(figure).get_title() == "细羊毛均价 (万元/吨, by month)"
    assert render(series, {"wool": title}).startswith(b"\x89PNG")


def test_the_png_says_which_periods_its_line_joins() -> None:
    png = Image.open(io.BytesIO(render(months(), {})))
    assert json.loads(png.info[LINE_KEY]) == [["2025-09"], ["2026-09", "2026-10"]]
    joined = Image.open(io.BytesIO(render(quarters(515_000, 474_000, 571_000), {})))
    assert json.loads(joined.info[LINE_KEY]) == [["2026-Q1", "2026-Q2", "2026-Q3"]]
