"""Tables read as sentences. Sources put their figures in tables ("| 碳酸锂 | 电池级 | 万元/吨 |
8.34 | 7.33 | +13.8% |"); a row is no sentence, so an extractive answer, a snippet or a
paragraph chosen for a model could never carry it. Each row of a markdown table becomes one
sentence that names its row, every value with its column and a unit column's unit:
"碳酸锂（电池级）：2026年三季度均价8.34万元/吨，2025年三季度均价7.33万元/吨，同比+13.8%。"
"""

from __future__ import annotations

import re

from research_core.terms import has_cjk

_RULE = re.compile(r"^\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?$")
_NUMERIC = re.compile(r"^[+\-−~≈约]?\d[\d,.]*\s*%?$")
_UNIT_HEADER = re.compile(r"^(?:单位|计量单位|units?)$", re.I)
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
            values.append(f"{head}{'' if zh else ' '}{shown}")
        else:
            extras.append(cell)
    if extras:
        label += f"（{'，'.join(extras)}）" if zh else f" ({', '.join(extras)})"
    if not values:
        return label + ("。" if zh else ".")
    return label + ("：" if zh else ": ") + ("，" if zh else ", ").join(values) + (
        "。" if zh else ".")


def table_sentences(block: str) -> str:
    """A markdown table as one sentence a row (lines), or the block unchanged if it is none."""
    lines = [ln for ln in block.strip().splitlines() if ln.strip()]
    if not is_table(lines):
        return block
    header = _cells(lines[0])
    rows = [_cells(ln) for ln in lines[2:]]
    return "\n".join(row_sentence(header, r) for r in rows if any(r))


def with_tables_as_sentences(body: str) -> str:
    """`body` with every markdown table in it turned into sentences."""
    return _TABLE_BLOCK.sub(lambda m: table_sentences(m.group(0)) + "\n", body)
