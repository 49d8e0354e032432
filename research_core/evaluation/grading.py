"""Grading an answer against a task's requirement groups: a group passes only if all its checks
pass. Text matching is case-insensitive (`str.casefold`) substring matching.

Check kinds:
  mentions_any [..]     at least one string occurs
  mentions_all [..]     every string occurs
  mentions_number [..]  at least one number string occurs, not inside a longer number
  not_mentions [..]     none of the strings occurs
  cites_any [ids]       at least one id is cited by the answer's text
  cites_none [ids]      no id is cited by the answer's text
  revised true|false    whether a published part was revised after the task's late documents
                        arrived, the revision citing one of them

Numbers are matched as written: "86,200" and "86200" are separate `any_of` entries, so no
thousands separators, units or Chinese magnitudes are normalised. The only rule added to plain
substring matching is the number boundary: "8.62" does not match in "18.62", "8.625" or "8.62.1",
and "200" does not match in "1,200" (a digit, or a '.'/',' joined to a digit, continues a
number). A needle that starts or ends with a non-digit ("4.9%", "24亿") is bounded on that side
by its own text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from research_core.evaluation.suite import Check, Requirement

_JOINERS = ".,"


@dataclass(frozen=True)
class Answer:
    """The answer as the user sees it at one moment (see `redsearch.harness.recording`).

    text: the answer's own text: the latest version of every published part and the report's
    body, without source titles or ids, within the reading budget; cited_ids: the source ids
    that text cites; revised: whether a part was revised after the late documents arrived,
    citing one of them.
    """

    text: str
    cited_ids: frozenset[str]
    revised: bool = False


@dataclass(frozen=True)
class CheckFailure:
    kind: str
    reason: str


@dataclass(frozen=True)
class GroupResult:
    id: str
    passed: bool
    failures: tuple[CheckFailure, ...]

    def first_reason(self) -> str:
        return f"{self.failures[0].kind}: {self.failures[0].reason}" if self.failures else ""


def grade(answer: Answer, requirements: Sequence[Requirement]) -> list[GroupResult]:
    """One result per requirement group, in order."""
    return [grade_group(answer, r) for r in requirements]


def grade_group(answer: Answer, requirement: Requirement) -> GroupResult:
    failures = [CheckFailure(c.kind, why) for c in requirement.checks
                if (why := failure(answer, c)) is not None]
    return GroupResult(requirement.id, not failures, tuple(failures))


def all_passed(results: Sequence[GroupResult]) -> bool:
    return bool(results) and all(r.passed for r in results)


def failure(answer: Answer, check: Check) -> str | None:
    """Why the check fails on this answer, or None when it passes."""
    if isinstance(check.arg, bool):
        return _revised(answer, check.arg)
    text = answer.text.casefold()
    args = check.arg
    if check.kind == "mentions_any":
        return None if _found(args, text) else f"mentions none of {_show(args)}"
    if check.kind == "mentions_all":
        missing = [a for a in args if a.casefold() not in text]
        return f"does not mention {_show(missing)}" if missing else None
    if check.kind == "not_mentions":
        present = _found(args, text)
        return f"mentions {_show(present)}" if present else None
    if check.kind == "mentions_number":
        hit = any(contains_number(a.casefold(), text) for a in args)
        return None if hit else f"states none of the numbers {_show(args)}"
    return _citations(check.kind, args, answer.cited_ids)


def _revised(answer: Answer, wanted: bool) -> str | None:
    if answer.revised == wanted:
        return None
    if wanted:
        return "no part was revised after the late documents arrived, citing one of them"
    return "a part was revised after the late documents arrived, citing one of them"


def _citations(kind: str, ids: Sequence[str], cited: frozenset[str]) -> str | None:
    if kind == "cites_any":
        return None if cited.intersection(ids) else f"cites none of {_show(ids)}"
    if kind == "cites_none":
        bad = [i for i in ids if i in cited]
        return f"cites {_show(bad)}" if bad else None
    raise ValueError(f"unknown check kind {kind!r}")


def _found(needles: Iterable[str], text: str) -> list[str]:
    return [n for n in needles if n.casefold() in text]


def contains_number(needle: str, text: str) -> bool:
    """Whether `needle` occurs in `text` (both already case-folded) not inside a longer number."""
    start = text.find(needle)
    while start != -1:
        if _bounded(needle, text, start):
            return True
        start = text.find(needle, start + 1)
    return False


def _bounded(needle: str, text: str, start: int) -> bool:
    end = start + len(needle)
    before_ok = not needle[0].isdecimal() or not _continues(text, start - 1, -1)
    after_ok = not needle[-1].isdecimal() or not _continues(text, end, 1)
    return before_ok and after_ok


def _continues(text: str, at: int, step: int) -> bool:
    """Whether the character at `at` (moving by `step` away from the match) extends a number:
    a digit, or a '.' or ',' followed (in that direction) by a digit."""
    if not 0 <= at < len(text):
        return False
    if text[at].isdecimal():
        return True
    beyond = at + step
    return text[at] in _JOINERS and 0 <= beyond < len(text) and text[beyond].isdecimal()


def _show(items: Iterable[str]) -> str:
    shown = [repr(i) for i in items]
    return "[" + ", ".join(shown[:6]) + (", …" if len(shown) > 6 else "") + "]"
