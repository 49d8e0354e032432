"""Tables read as sentences. Sources put their figures in tables ("| 碳酸锂 | 电池级 | 万元/吨 |
8.34 | 7.33 | +13.8% |"); a row is no sentence, so an extractive answer, a snippet or a
paragraph chosen for a model could never carry it. Each row of a markdown table becomes one
sentence that names its row, every value with its column and a unit column's unit:
"碳酸锂（电池级）：2026年三季度均价8.34万元/吨，2025年三季度均价7.33万元/吨，同比+13.8%。"
"""

from __future__ import annotations

import re

from research_core.text.terms import has_cjk

_RULE = re.compile(r"^\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?$")
_NUMERIC = re.compile(r"^[+\-−~≈约]?\d[\d,.]*\s*%?$")
_UNIT_HEADER = re.compile(r"^(?:单位|计量单位|units?)$", re.I)
_PERIOD = re.compile(
    r"^(?:\d{4}[-/.]\d{1,2}|\d{4}年\d{1,2}月|\d{4}年?(?:Q[1-4]|H[12]|[一二三四]季度|[上下]半年)|"
    r"(?:Q[1-4]|H[12])\s*\d{4}|[A-Z][a-z]{2,8}\.?\s+\d{4}|\d{1,2}月)$")
_TABLE_BLOCK = re.compile(r"(?:^[ \t]*\|.*\|[ \t]*(?:\n|$)){3,}", re.M)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def is_table(lines: list[str]) -> bool:
    """A header row, a rule row ("|---|---|") and at least one data row."""
    return len(lines) >= 3 and all(ln.strip().startswith("|") for ln in lines) \
        and bool(_RULE.match(lines[1].strip()))


def _numeric(cell: str) -> bool:
    return bool(_NUMERIC.match(cell))


def _is_unit(head: str, cell: str) -> bool:
    """A unit column's cell ("万元/吨"); a "Units" column of numbers is a count."""
    return bool(_UNIT_HEADER.match(head)) and not _numeric(cell)


def row_sentence(header: list[str], row: list[str]) -> str:
    """One data row as a sentence, in the table's language."""
    zh = has_cjk(" ".join(header + row))
    unit = next((c for h, c in zip(header, row, strict=False) if _is_unit(h, c)), "")
    label, extras, values = row[0], [], []
    for head, cell in list(zip(header, row, strict=False))[1:]:
        if not cell or _is_unit(head, cell):
            continue
        if _numeric(cell):
            shown = cell if cell.endswith("%") or not unit else f"{cell}{'' if zh else ' '}{unit}"
            values.append(f"{head}{_gap(head, zh)}{shown}")
        else:
            extras.append(cell)
    if extras:
        label += f"（{'，'.join(extras)}）" if zh else f" ({', '.join(extras)})"
    if not values:
        return label + ("。" if zh else ".")
    return label + ("：" if zh else ": ") + ("，" if zh else ", ").join(values) + (
        "。" if zh else ".")


def _gap(head: str, zh: bool) -> str:
    """What goes between a column's name and its value: nothing after Chinese
    ("三季度均价8.34"), a space in English and after a name that ends in a digit or a
    Latin letter, whose value would otherwise run into it ("2025-11 0.82", not "2025-110.82")."""
    return "" if zh and not head[-1:].isascii() else " "


def series_sentence(header: list[str], rows: list[list[str]], column: int) -> str:
    """One column of a table of periods as a sentence: the series, period by period."""
    zh = has_cjk(" ".join(header))
    points = [f"{r[0]} {r[column]}" for r in rows if column < len(r) and r[column]]
    return header[column] + ("：" if zh else ": ") + ("，" if zh else ", ").join(points) + (
        "。" if zh else ".")


def table_sentences(block: str) -> str:
    """A markdown table as sentences (lines): one a row, or where its rows are periods (a
    month a row) one a column, so that a year of one measure is one sentence, not twelve."""
    lines = [ln for ln in block.strip().splitlines() if ln.strip()]
    if not is_table(lines):
        return block
    header = _cells(lines[0])
    rows = [r for r in (_cells(ln) for ln in lines[2:]) if any(r)]
    if len(rows) >= 3 and all(_PERIOD.match(r[0]) for r in rows):
        return "\n".join(series_sentence(header, rows, c) for c in range(1, len(header)))
    return "\n".join(row_sentence(header, r) for r in rows)


def with_tables_as_sentences(body: str) -> str:
    """`body` with every markdown table in it turned into sentences."""
    return _TABLE_BLOCK.sub(lambda m: table_sentences(m.group(0)) + "\n", body)
