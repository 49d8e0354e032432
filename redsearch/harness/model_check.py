"""`redsearch models check`: a local GGUF model's capability profile, measured (issue 43).

The suite runs once on the code path (the model takes no call) and once per call kind with the
model taking that kind alone; for each kind the table gives how many of the model's replies
were accepted, the groups passed with it against the code path's, and the time. A kind
belongs in a model's profile (research_core/models/profile.yaml) only where it passed more
groups than the code path, on suites the code was not written against.

    redsearch models check --suite eval/measles [--model FILE.gguf] [--calls decompose,…]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from redsearch.harness.evaluate import TaskResult, run_suite, split_list
from redsearch.terminal import say as stderr_line
from research_core.evaluation.suite import Suite, load_suite
from research_core.models.routed import RoutedTier
from research_core.models.tier_factory import aclose_tiers, build_tiers
from research_core.protocols import ModelTier
from research_core.settings import TIERS, Settings, TierSettings
from research_core.settings.values import CALL_KINDS

CHECKED = ("decompose", "plan_query", "score_hits", "summarise", "reflect", "report")
CODE_PATH = "code path"


@dataclass(frozen=True)
class KindRun:
    """One kind's runs over the suite: the model's calls of that kind and their outcome."""

    kind: str
    made: int
    accepted: int
    groups: int
    time_s: float


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--suite", required=True, help="suite folder (tasks.yaml, corpus/ …)")
    parser.add_argument("--model", default="", help="a GGUF file (default: the embedded one)")
    parser.add_argument("--calls", default=",".join(CHECKED),
                        help=f"call kinds to check (default: {','.join(CHECKED)})")
    parser.add_argument("--modes", default="standard", help="modes (default: standard)")
    parser.add_argument("--tasks", default="", help="comma-separated task ids (default: all)")


async def check(args: argparse.Namespace, settings: Settings | None = None) -> int:
    settings = settings or Settings.from_env()
    kinds = split_list(args.calls)
    unknown = sorted(set(kinds) - set(CALL_KINDS))
    if unknown:
        stderr_line(f"redsearch models check: unknown call kinds {', '.join(unknown)}")
        return 2
    suite = load_suite(Path(args.suite))
    model = _model_settings(settings, args.model)
    tiers = build_tiers(model)
    try:
        rows = [await _run(suite, args, model, _routed(tiers, frozenset()), CODE_PATH)]
        for kind in kinds:
            rows.append(await _run(suite, args, model, _routed(tiers, frozenset({kind})), kind))
    finally:
        await aclose_tiers(tiers)
    print(render(rows, tiers["planner"].model))
    return 0


def _model_settings(settings: Settings, path: str) -> Settings:
    """Every tier on the model (`path`, or the embedded default taking every call)."""
    if not path:
        return replace(settings, embedded_calls=frozenset(CALL_KINDS))
    return replace(settings, tiers={t: TierSettings(model=path) for t in TIERS})


def _routed(tiers: Mapping[str, ModelTier], calls: frozenset[str]) -> dict[str, ModelTier]:
    return {name: RoutedTier(tier, calls) for name, tier in tiers.items()}


async def _run(suite: Suite, args: argparse.Namespace, settings: Settings,
               tiers: dict[str, ModelTier], kind: str) -> KindRun:
    started = time.monotonic()
    results = await run_suite(suite, split_list(args.modes), split_list(args.tasks), settings,
                              tiers=tiers)
    made, accepted = _calls(results, kind)
    row = KindRun(kind, made, accepted, sum(r.groups_passed for r in results),
                  time.monotonic() - started)
    stderr_line(f"{kind}: {row.groups} groups, {accepted}/{made} replies accepted, "
                f"{row.time_s:.0f} s")
    return row


def _calls(results: Sequence[TaskResult], kind: str) -> tuple[int, int]:
    counts = [r.calls.get(kind, (0, 0)) for r in results]
    return sum(c[0] for c in counts), sum(c[1] for c in counts)


def render(rows: Sequence[KindRun], model: str) -> str:
    base = rows[0]
    lines = [f"model: {model}", f"{'call kind':<16}{'accepted':<12}{'groups':<10}"
             f"{'vs code path':<14}{'time':<10}verdict"]
    for row in rows:
        share = f"{row.accepted}/{row.made}" if row.made else "—"
        gain = row.groups - base.groups
        verdict = "" if row is base else ("better: profile" if gain > 0 else "not better")
        lines.append(f"{row.kind:<16}{share:<12}{row.groups:<10}{f'{gain:+d}':<14}"
                     f"{f'{row.time_s:.0f} s':<10}{verdict}".rstrip())
    return "\n".join(lines)
