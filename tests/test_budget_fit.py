"""An answer fitted to the reading budget: blocks in order, bullets given out round by round,
the item list two rows a round. Lines from a field no evaluation suite uses (orchards)."""

from __future__ import annotations

from research_core.loop.answering.budget_fit import Block, fit


def _rows(name: str, n: int) -> list[str]:
    return [f"• {name} row {i}: 1,{i}00 t" for i in range(1, n + 1)]


def test_every_section_gets_its_first_line_before_any_gets_a_second() -> None:
    blocks = [Block("*Apples*", _rows("apple", 3)), Block("*Pears*", _rows("pear", 3))]
    budget = len("*Apples*\n• apple row 1: 1,100 t\n*Pears*\n• pear row 1: 1,100 t\n") + 4
    text = fit(blocks, budget)
    assert "apple row 1" in text and "pear row 1" in text and "row 2" not in text


def test_the_item_list_gives_two_rows_a_round() -> None:
    """What was asked item by item is answered by the list's rows: with room for five lines
    after the headers, the list takes four and the section beside it one."""
    items = Block("*Item by item*", _rows("plum", 6), per_round=2)
    other = Block("*Why*", _rows("note", 6))
    line = len(_rows("plum", 1)[0]) + 1
    budget = len("*Item by item*") + 2 + len("*Why*") + 2 + 5 * line
    text = fit([items, other], budget)
    assert [f"plum row {i}" in text for i in range(1, 6)] == [True] * 4 + [False]
    assert "note row 1" in text and "note row 2" not in text
    assert fit([Block("", ["lead one", "lead two"], whole=True, per_round=2)], 100) \
        == "lead one\nlead two"
