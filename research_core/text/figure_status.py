"""Whether a dated figure is final: the words a statistical release marks a figure with that is
not final yet (a flash or advance estimate, a provisional figure, 初值, 快报) or was changed after
it was first published (revised, restated, 修正, 下修), in English and Chinese, and which figure
of a sentence such a word marks (issue 44: a chart marks preliminary and revised points)."""

from __future__ import annotations

import re

from research_core.text.figures import Figure, figures_in

# The words a statistical release marks a figure with that is not final (a flash or an
# advance estimate, a provisional figure, 初值, 快报) or was changed after it was first
# published (revised, restated, 修正, 下修), in English and Chinese.
_STATUS = {
    "preliminary": re.compile(r"\b(?:preliminary|provisional|flash|advance estimates?|first "
                              r"estimates?)\b|初步|初值|快报", re.I),
    "revised": re.compile(r"\b(?:revised|restated|corrected)\b|修正|修订|更正|下修|上修", re.I)}
_CLAUSE_END = re.compile(r"[;；，。]|,(?!\d{3})")  # not the comma in "222,000"


def statuses(text: str, dated: list[tuple[str, Figure, int]]) -> dict[int, str]:
    """Where a figure is written -> "preliminary" or "revised", for each figure of `dated`
    (`dated_figures` of `text`) that its clause says is one: the figure nearest the word. A
    revision's clause names the old figure before the new one ("revised from 214,000 to
    209,000"): a figure another figure follows in the clause is not the revised one."""
    out: dict[int, str] = {}
    for status, cue in _STATUS.items():
        for said in cue.finditer(text):
            low, high = _clause(text, said.start())
            near = sorted((abs(at - said.start()), at) for _, _, at in dated if low <= at < high)
            if near and not (status == "revised" and _followed(text, near[0][1], high)):
                out[near[0][1]] = status
    return out


def _clause(text: str, at: int) -> tuple[int, int]:
    """Where the clause holding `at` starts and ends."""
    ends = [m.start() for m in _CLAUSE_END.finditer(text)]
    return max((e + 1 for e in ends if e < at), default=0), min(
        (e for e in ends if e >= at), default=len(text))


def _followed(text: str, at: int, high: int) -> bool:
    """Another figure (not a percentage) is written after the one at `at`, before `high`."""
    rest = text[at:high]
    return len([f for f in figures_in(rest) if not f.percent]) > 1
