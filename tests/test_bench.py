"""The benchmark compares equal work: both strategies run exactly N steps on the generated
corpus with the deterministic tier, and the sweep's bookkeeping (ratios, stop reasons, modes,
growth exponents, coverage) is computed from the runs themselves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from redsearch.harness.bench import main as bench_main
from redsearch.harness.bench_corpus import corpus_facts, facets, write_corpus
from redsearch.harness.bench_facets import answered
from redsearch.harness.bench_report import fitted_exponent
from research_core.models.ledger import TierTotals


@pytest.mark.timeout(240)
def test_the_quick_sweep_runs_equal_work_and_reports_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_json = tmp_path / "bench.json"
    assert bench_main(["--quick", "--json", str(out_json)]) == 0
    printed = capsys.readouterr().out
    runs = json.loads(out_json.read_text("utf-8"))["runs"]
    assert sorted((r["strategy"], r["n"]) for r in runs) == [
        ("hierarchical", 2), ("hierarchical", 4), ("monolithic", 2), ("monolithic", 4)]
    for run in runs:
        assert run["steps"] == run["n"], run  # equal work: every step used on both sides
        assert run["stop"] == "step limit"
        assert run["total_tokens"] > 0
    assert {r["mode"] for r in runs if r["strategy"] == "hierarchical"} == {"standard"}
    assert "growth exponent, hierarchical: tokens ∝ N^" in printed
    assert "n/a" not in printed.split("== the sweep", 1)[1].split("bench wall time")[0]
    *_, tokens_line, answer_line = printed.rstrip().splitlines()
    assert tokens_line.startswith("token ratio at N=4: ")
    assert "(hierarchical/monolithic)" in tokens_line
    assert answer_line.startswith("equal-answer ratio at N=4: ")
    for run in runs:  # each final answer is scored on the corpus's facts
        assert run["facets"] > 0, run
    baseline = [r for r in runs if r["strategy"] == "monolithic"]
    for run in baseline:  # an answer at every turn, costing more each turn
        assert sorted(map(int, run["answer_curve"])) == list(range(1, run["n"] + 1))
        costs = [run["answer_curve"][str(t)][0] for t in range(1, run["n"] + 1)]
        assert costs == sorted(costs)
        assert costs[-1] == run["total_tokens"]  # turn N's answer is the final answer


def test_fitted_exponents() -> None:
    assert fitted_exponent([(4, 160), (8, 640), (16, 2560)]) == pytest.approx(2.0)
    assert fitted_exponent([(4, 100), (8, 200)]) == pytest.approx(1.0)
    assert fitted_exponent([(4, 100)]) is None


def test_the_generated_corpus_is_deterministic_and_large_enough(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    assert write_corpus(first, 160) == write_corpus(second, 160) == 160
    for doc in first.glob("*.md"):
        assert doc.read_text("utf-8") == (second / doc.name).read_text("utf-8")
    assert len(facets()) * 3 >= 5 * 32  # five documents a step at the largest N


def test_a_pair_that_did_not_use_every_step_is_excluded_and_says_why() -> None:
    from redsearch.harness.bench_report import excluded, sweep_table
    from redsearch.harness.bench_run import RunMetrics

    def run(strategy: str, n: int, steps: int, stop: str, tokens: int) -> RunMetrics:
        tiers = [TierTotals("reporter", 1, tokens, 0, 0.0)]
        return RunMetrics(strategy, n, "r", 1.0, steps, stop, "standard", tiers, {}, {}, {},
                          [], {}, False)

    short = (run("hierarchical", 8, 5, "tree exhausted", 100), run("monolithic", 8, 8,
                                                                     "step limit", 900))
    full = (run("hierarchical", 4, 4, "step limit", 80), run("monolithic", 4, 4,
                                                             "step limit", 300))
    assert excluded(*short) == "hierarchical stopped after 5 of 8 steps (tree exhausted)"
    assert excluded(*full) is None
    table = "\n".join(sweep_table([full, short]))
    assert "8: excluded (hierarchical stopped after 5 of 8 steps (tree exhausted))" in table
    assert "growth exponent, hierarchical: tokens ∝ N^n/a" in table  # one equal pair left


def test_an_answer_scores_the_facts_it_states_right_and_cites_to_their_document() -> None:
    first, second = corpus_facts(2)
    level = first.level.split()[0]
    sources = {1: first.source_id, 2: second.source_id}
    right = (f"Sales in {first.facet.country} reached {level} units in the "
             f"{first.period} of 2026 [1].")
    assert answered(right, sources, [first, second]) == {first.source_id}
    assert answered(right.replace("[1]", "[2]"), sources, [first, second]) == set()
    assert answered(right.replace(level, "1"), sources, [first, second]) == set()
    assert answered(right.replace(" [1]", ""), sources, [first, second]) == set()
    unseparated = right.replace(level, level.replace(",", ""))
    assert answered(unseparated, sources, [first, second]) == {first.source_id}


def test_a_turns_answer_that_took_a_retry_costs_both_calls() -> None:
    from redsearch.harness.bench_run import Answers, answer_curve
    from research_core.loop.report.reporter import Report
    from research_core.models.ledger import Ledger

    ledger = Ledger({})
    ledger.record("reporter", "m", "mono_decide", 1, (100, 10))
    ledger.record("reporter", "m", "mono_draft", 1, (200, 20))  # unusable, retried
    ledger.record("reporter", "m", "mono_draft", 1, (220, 30))
    ledger.record("reporter", "m", "mono_decide", 2, (300, 10))
    run = [e for e in ledger.entries if e.purpose != "mono_draft"]
    drafts = [e for e in ledger.entries if e.purpose == "mono_draft"]
    empty = Report("nothing", [], [], True)
    curve = answer_curve(run, drafts, Answers(empty, (), {1: empty, 2: empty}))
    assert curve == {1: (110 + 220 + 250, 0), 2: (110 + 310, 0)}  # turn 2: no call made
