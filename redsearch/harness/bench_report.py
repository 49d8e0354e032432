"""The benchmark's tables: per N the tokens of each side per tier, the ratio, the facts each
final answer states, the equal-answer ratio, the goal tree's tokens per phase, the largest
prompt per step, the stop reasons and modes, the equal-coverage figure, and the growth
exponents fitted over the sweep (tokens ∝ N^a)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from redsearch.harness.bench_run import RunMetrics
from research_core.models.ledger import TierTotals
from research_core.settings import TIERS

HIER, MONO = "hierarchical", "monolithic"
PROBE_STEP = 10
COL = 28


def fitted_exponent(points: Sequence[tuple[int, int]]) -> float | None:
    """The least-squares slope of log(tokens) over log(N); None with fewer than two Ns."""
    pts = [(math.log(n), math.log(t)) for n, t in points if n > 0 and t > 0]
    if len({x for x, _ in pts}) < 2:
        return None
    mean_x = sum(x for x, _ in pts) / len(pts)
    mean_y = sum(y for _, y in pts) / len(pts)
    num = sum((x - mean_x) * (y - mean_y) for x, y in pts)
    return num / sum((x - mean_x) ** 2 for x, _ in pts)


def _row(label: str, cells: Sequence[str]) -> str:
    return f"{label:<36}" + "".join(f"{c:>{COL}}" for c in cells)


def _tiers(totals: list[TierTotals]) -> str:
    by_name = {t.tier: t.total_tokens for t in totals}
    return " / ".join(f"{by_name.get(n, 0):,}" for n in TIERS)


def flatness(run: RunMetrics) -> str:
    """The largest research prompt of the last step over that of step 10 (or the first)."""
    steps = sorted(run.largest_research)
    if not steps:
        return "n/a"
    probe = PROBE_STEP if PROBE_STEP in run.largest_research else steps[0]
    base = run.largest_research[probe]
    last = run.largest_research[steps[-1]]
    return f"{last / base:.2f} (step {steps[-1]} / step {probe})" if base else "n/a"


def coverage(hier: RunMetrics, mono: RunMetrics) -> str:
    turn = mono.first_covering_turn(hier.cited)
    if not hier.cited:
        return "n/a (the goal tree cited nothing)"
    if turn is None:
        return f"not reached in {mono.steps} turns"
    return f"{mono.tokens_through(turn):,} tokens by turn {turn}"


def ratio(hier: RunMetrics, mono: RunMetrics) -> float | None:
    return hier.total_tokens / mono.total_tokens if mono.total_tokens else None


def answer_ratio(hier: RunMetrics, mono: RunMetrics) -> float | None:
    """The goal tree's tokens over the baseline's tokens to its first answer (answering at
    every turn) that states as many facts; None when no turn's answer does."""
    reached = mono.first_answering(hier.facets)
    return hier.total_tokens / reached[1] if reached and reached[1] else None


def equal_answer(hier: RunMetrics, mono: RunMetrics) -> str:
    reached = mono.first_answering(hier.facets)
    if reached is None:
        best = max((f for _, f in mono.answer_curve.values()), default=0)
        return (f"the baseline's answers state at most {best} facts in {mono.steps} turns: "
                f"the goal tree's {hier.facets} not reached")
    turn, cost = reached
    return (f"the baseline's answer first states {hier.facets} facts at turn {turn}, after "
            f"{cost:,} tokens (its answer at every turn); equal-answer ratio "
            f"{_fmt(answer_ratio(hier, mono))}")


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def phases(run: RunMetrics) -> str:
    return " · ".join(f"{p} {t:,}" for p, t in run.by_purpose.items())


def excluded(hier: RunMetrics, mono: RunMetrics) -> str | None:
    """Why a pair does not compare equal work (None when both used every step)."""
    short = [m for m in (hier, mono) if m.steps < m.n]
    if not short:
        return None
    return "; ".join(f"{m.strategy} stopped after {m.steps} of {m.n} steps ({m.stop})"
                     for m in short)


def n_table(hier: RunMetrics, mono: RunMetrics) -> list[str]:
    r = ratio(hier, mono)
    why = excluded(hier, mono)
    return [
        f"== N = {hier.n} steps",
        _row("", [HIER, MONO]),
        _row("steps (why it stopped)", [f"{m.steps} ({m.stop})" for m in (hier, mono)]),
        _row("mode applied", [hier.mode, mono.mode]),
        _row("tokens planner/executor/reporter", [_tiers(m.tiers) for m in (hier, mono)]),
        _row("total tokens", [f"{m.total_tokens:,}" for m in (hier, mono)]),
        _row("facts the final answer states", [str(m.facets) for m in (hier, mono)]),
        f"token ratio hierarchical/monolithic: {'n/a' if r is None else f'{r:.3f}'}"
        + (f" — not equal work, excluded: {why}" if why else ""),
        f"equal answer: {equal_answer(hier, mono)}",
        f"tokens by phase, {HIER}: {phases(hier)}",
        _row("largest prompt, first / last step", [
            f"{m.largest.get(1, 0):,} / {m.largest_research.get(m.steps, 0):,}"
            for m in (hier, mono)]),
        _row("last step / step 10 (research)", [flatness(m) for m in (hier, mono)]),
        f"equal coverage: the baseline reads the goal tree's {len(hier.cited)} cited "
        f"sources after {coverage(hier, mono)}",
        *[f"largest prompt per step, {m.strategy}: "
          + " ".join(f"{m.largest[s]:,}" for s in sorted(m.largest)) for m in (hier, mono)],
    ]


def sweep_table(pairs: list[tuple[RunMetrics, RunMetrics]]) -> list[str]:
    lines = ["== the sweep (facts: what each final answer states correctly, cited)",
             _row("N", ["hierarchical", "monolithic", "ratio", "facts hier / mono",
                        "equal-answer ratio"])]
    for hier, mono in pairs:
        if excluded(hier, mono):
            lines.append(f"{hier.n}: excluded ({excluded(hier, mono)})")
            continue
        lines.append(_row(str(hier.n), [f"{hier.total_tokens:,}", f"{mono.total_tokens:,}",
                                        _fmt(ratio(hier, mono)),
                                        f"{hier.facets} / {mono.facets}",
                                        _fmt(answer_ratio(hier, mono))]))
    equal = [p for p in pairs if not excluded(*p)]
    for strategy, side in ((HIER, 0), (MONO, 1)):
        a = fitted_exponent([(p[side].n, p[side].total_tokens) for p in equal])
        lines.append(f"growth exponent, {strategy}: tokens ∝ N^"
                     + ("n/a" if a is None else f"{a:.2f}"))
    return lines


def final_lines(pairs: list[tuple[RunMetrics, RunMetrics]]) -> list[str]:
    hier, mono = max(pairs, key=lambda p: p[0].n)
    return [f"token ratio at N={hier.n}: {_fmt(ratio(hier, mono))} (hierarchical/monolithic)",
            f"equal-answer ratio at N={hier.n}: {_fmt(answer_ratio(hier, mono))}"]
