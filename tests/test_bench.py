"""The benchmark compares equal work: both strategies run exactly N steps on the generated
corpus with the deterministic tier, and the sweep's bookkeeping (ratios, stop reasons, modes,
growth exponents, coverage) is computed from the runs themselves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from redsearch.bench import main as bench_main
from redsearch.bench_corpus import facets, write_corpus
from redsearch.bench_report import fitted_exponent


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
    assert printed.rstrip().splitlines()[-1].startswith("token ratio at N=4: ")
    assert "(hierarchical/monolithic)" in printed.rstrip().splitlines()[-1]


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
