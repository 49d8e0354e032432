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
import re
import sys
from collections.abc import Callable
from typing import Any

from redsearch.harness.evaluate import add_arguments, evaluate
from redsearch.terminal import report_error
from research_core.errors import RunError
from research_core.text.terms import has_cjk

Patch = tuple[str, str, Callable[..., Any]]

_PLAIN_SPLIT = re.compile(r"[,，;；:：?？。!！、]+|\s+[—–-]+\s+|\s+(?:and|or|but)\s+"
                          r"|以及|并且|还有")
_MENTION = re.compile(r"@\S+\s*")
MIN_CLAUSE, MIN_CJK_CLAUSE = 8, 4


def plain_clauses(question: str) -> list[str]:
    """The question's clauses split at punctuation and plain coordinators only."""
    pieces = (p.strip() for p in _PLAIN_SPLIT.split(_MENTION.sub("", question)))
    return [p for p in pieces if len(p) >= (MIN_CJK_CLAUSE if has_cjk(p) else MIN_CLAUSE)]


async def _plain_split(similarity: Any, question: str, hits: list[Any], limit: int,
                       cfg: Any, as_of: Any) -> list[Any]:
    """The root's split without the clause grammar: the plain clauses the sources speak to,
    then the facets of the evidence."""
    from research_core.loop.planning import decomposition, subquestions

    texts = [f"{h.title}. {h.snippet}" for h in hits]
    clauses = plain_clauses(question)
    spoken = await decomposition.spoken_to(similarity, clauses, texts, cfg) if clauses else set()
    own = [c for c in clauses if c in spoken][:limit]
    room = max(limit - len(own), 1 if hits else 0)
    facets = await decomposition.facets_of(similarity, question, hits, own, room, cfg, as_of)
    return subquestions.as_subquestions([*own[: limit - min(room, len(facets))], *facets],
                                        limit)


async def _false_async(*_: Any, **__: Any) -> bool:
    return False


FAMILIES: dict[str, list[Patch]] = {
    "clause-grammar": [("research_core.loop.planning.decomposition", "split", _plain_split)],
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
