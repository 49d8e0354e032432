"""Ablation of the answer path's rule families (issue 42, item 5): each family is switched
off in turn and `redsearch eval` runs the suite as usual, so that only the families whose
removal costs groups on suites written after the code are kept.

    python -m redsearch.harness.ablation --family restating --suite DIR [eval options]

A family is switched off by replacing its functions, where the answer path calls them, with
the neutral choice: keep every line, split nothing, restate nothing. This is a measuring
tool, not a setting of the product; a family found to earn nothing is deleted from the code,
and its entry here with it.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import sys
from collections.abc import Callable
from typing import Any

from redsearch.harness.evaluate import add_arguments, evaluate
from redsearch.terminal import report_error
from research_core.errors import RunError

Patch = tuple[str, str, Callable[..., Any]]

async def _no_facets(*_: Any, **__: Any) -> list[str]:
    return []


async def _false_async(*_: Any, **__: Any) -> bool:
    return False


FAMILIES: dict[str, list[Patch]] = {
    "evidence-facets": [("research_core.loop.planning.decomposition", "facets_of", _no_facets)],
    "period-end": [("research_core.loop.planning.period_end", "facet", lambda *_: None)],
    "recheck": [("research_core.loop.engine", "_Research._recheck", _false_async)],
    "across-languages": [("research_core.loop.gathering.across", "figures_query",
                          lambda *_: "")],
}


def switch_off(family: str, replace: Callable[[Any, str, Any], None] = setattr) -> None:
    """Replace the family's functions where the answer path looks them up (`replace`: how,
    e.g. a test's monkeypatch)."""
    for module_name, attribute, replacement in FAMILIES[family]:
        owner: Any = importlib.import_module(module_name)
        *path, name = attribute.split(".")
        for part in path:
            owner = getattr(owner, part)
        getattr(owner, name)  # the function must exist: a renamed one fails loudly
        replace(owner, name, replacement)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ablation", description=__doc__.split("\n")[0])
    parser.add_argument("--family", required=True, choices=["none", *FAMILIES])
    add_arguments(parser)
    args = parser.parse_args(argv)
    if args.family != "none":
        switch_off(args.family)
    try:
        return asyncio.run(evaluate(args))
    except RunError as exc:  # a missing suite, a bad setting: one line, exit 2
        return report_error("ablation", exc)


if __name__ == "__main__":
    sys.exit(main())
