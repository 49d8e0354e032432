"""The extractive answer's own words, in English and Chinese: headings, the disagreement
sentence (also a summary's open doubt, `memory`) and the "not found" line. Everything else in
the answer is quoted evidence."""

from __future__ import annotations

from collections.abc import Callable

from research_core.loop.memory.evidence import Evidence
from research_core.loop.memory.pool import Line
from research_core.text.conflicts import Disagreement
from research_core.text.figures import figures_in

EN = {
    "nothing": "No evidence above the reliability threshold was found, so there is no answer "
               "to give from the sources.",
    "conflicts": "Where the sources disagree",
    "explained": "Explanation: ",
    "not_found": "Not found in the sources: ",
    "part_not_found": "Not found in the sources: no reliable evidence answers this yet.",
}
ZH = {
    "nothing": "没有找到可靠性达标的证据，无法根据资料作答。",
    "conflicts": "来源之间的分歧",
    "explained": "解释：",
    "not_found": "资料中未找到：",
    "part_not_found": "资料中未找到：暂无可靠证据回答这一问题。",
}


def has_figures(text: str) -> bool:
    """A figure other than a bare year."""
    return any(not (len(f.value) == 4 and f.value.startswith("20") and not f.unit)
               for f in figures_in(text))


def disagreement(d: Disagreement[Line], cite: Callable[[Evidence], str | None], zh: bool) -> str:
    (line1, fig1), (line2, fig2) = d.first, d.second
    e1, e2 = line1.evidence, line2.evidence
    c1, c2 = cite(e1) or "", cite(e2) or ""
    who1, who2 = e1.publisher or e1.source_id, e2.publisher or e2.source_id
    unit = f" {d.shown_unit}" if d.shown_unit else ""  # a magnitude stand-in: no unit
    what, other = f"{fig1.text}{unit}", f"{fig2.text}{unit}"
    if zh:
        head = f"{d.period}：{who1} 为 {what} {c1}，{who2} 为 {other} {c2}。"
        why = {"credibility": f"采用 {who1} 的数字：来源类型更可信（{e1.source_type} 高于 "
                              f"{e2.source_type}）。",
               "later": f"采用 {who1} 的数字：两者可信度相同，它发布更晚（{e1.published} {c1}）。",
               "": "两者可信度与时间相同，资料不足以判断哪个更准。"}[d.reason]
        return head + why
    head = f"{d.period}: {who1} gives {what} {c1}, while {who2} gives {other} {c2}."
    why = {"credibility": f" {who1}'s figure is preferred: a more credible source type "
                          f"({_kind(e1)} over {_kind(e2)}).",
           "later": f" {who1}'s figure is preferred: equally credible, and later "
                    f"({e1.published} {c1} vs {e2.published} {c2}).",
           "": " Both are equally credible and recent; the evidence does not settle it."
           }[d.reason]
    return head + why


def _kind(e: Evidence) -> str:
    return e.source_type.replace("_", " ")
