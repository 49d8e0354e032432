"""The question is read once into one value (issue 42, item 6): `research_core.text.asking`
holds every reading of its wording the answer path uses, and no module outside
`research_core.text` reads the wording itself."""

from __future__ import annotations

import ast
import datetime as dt
from pathlib import Path

from research_core.loop.memory.state import RunState
from research_core.settings import Settings
from research_core.text.asking import read_question

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("research_core", "bot", "workers", "redsearch")
READERS = frozenset({"read", "asks", "names_in", "openings", "asks_reasons", "asks_why",
                     "asks_explanation", "asks_latest", "asks_past_year", "span_end",
                     "asked_extreme", "asked_grain"})
GRAMMAR = ("research_core.text.clauses", "research_core.text.names",
           "research_core.text.causes", "research_core.text.periods",
           "research_core.text.superlatives")
LOOP_PATTERNS_MOST = 10  # issue 42, item 5


def test_an_english_question_read_once() -> None:
    asked = read_question("<@U0BOT> How did Norland's ferry fares move over the past year, "
                          "and why? Which month was highest? numbers pls")
    assert not asked.chinese and asked.plain.startswith("How did Norland")
    assert "Norland" in asked.names and asked.reasons and asked.why and asked.explains
    assert asked.up_to_now and asked.span_end is None
    assert asked.extreme == "high" and asked.grain == "month"
    assert "Which month was highest" in asked.asking and "numbers pls" not in asked.asking
    assert "highest" not in asked.subject and "fares" in asked.subject
    assert asked.topic in asked.clauses


def test_a_chinese_question_read_once() -> None:
    asked = read_question("25年11月到26年10月渡轮票价怎么走的？哪个月最低？")
    assert asked.chinese and asked.span_end == "2026-10"
    assert asked.extreme == "low" and asked.grain == "month" and not asked.why
    assert len(asked.clauses) == 2 and asked.asking == frozenset(asked.clauses)


def test_the_run_reads_its_question_once_and_each_node_its_own() -> None:
    state = RunState.new("Why did ferry fares rise in 2026?", dt.date(2026, 11, 1), Settings())
    assert state.asked is state.asked is state.tree.root.asked and state.asked.why
    child = state.tree.add_child(state.tree.root_id, "How much did fares rise?", 0.9)
    assert child.asked.text == "How much did fares rise?" and not child.asked.why


def _readers_imported(source: str, label: str) -> list[str]:
    return [f"{label}: {alias.name}" for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.ImportFrom) and node.module in GRAMMAR
            for alias in node.names if alias.name in READERS]


def _modules() -> list[Path]:
    text = ROOT / "research_core" / "text"
    return [p for package in PACKAGES for p in (ROOT / package).rglob("*.py")
            if text not in p.parents]


def test_no_stage_reads_the_question_wording_itself() -> None:
    found = [hit for path in _modules() for hit in _readers_imported(
        path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))]
    assert found == [], "read the question through research_core.text.asking: " + \
        "; ".join(found)


def test_the_check_finds_a_stage_that_reads_the_wording() -> None:
    stray = "from research_core.text.causes import asks_why, gives_cause\n"
    assert _readers_imported(stray, "stage.py") == ["stage.py: asks_why"]
    assert len(_modules()) > 100  # the packages were found


def test_the_loop_compiles_few_patterns() -> None:
    loop = ROOT / "research_core" / "loop"
    count = sum(p.read_text(encoding="utf-8").count("re.compile(") for p in loop.rglob("*.py"))
    assert 0 < count <= LOOP_PATTERNS_MOST
