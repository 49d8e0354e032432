"""The error tree drawn in research_core/errors.py is the real one, and it holds every
user-facing error class."""

from __future__ import annotations

import re

from research_core import errors

_BRANCH = re.compile(r"^( *)(?:[├└]── )?(\w+) {2,}\S")


def drawn_parents() -> dict[str, str | None]:
    """Each class named in the docstring's tree, with the parent it is drawn under."""
    parents: dict[str, str | None] = {}
    stack: list[tuple[int, str]] = []
    for line in (errors.__doc__ or "").splitlines():
        match = _BRANCH.match(line.replace("│", " "))
        if not match or not match.group(2).endswith(("Error", "Unavailable", "Question",
                                                    "NotFound", "Busy", "Failed")):
            continue
        depth = match.start(2)  # the column of the name: children sit further right
        while stack and stack[-1][0] >= depth:
            stack.pop()
        parents[match.group(2)] = stack[-1][1] if stack else None
        stack.append((depth, match.group(2)))
    return parents


def test_the_drawn_tree_is_the_class_tree() -> None:
    classes = {name: c for name, c in vars(errors).items()
               if isinstance(c, type) and issubclass(c, Exception)}
    drawn = drawn_parents()
    assert set(drawn) == set(classes), "a class is missing from the drawing, or vice versa"
    for name, cls in classes.items():
        parent = drawn[name]
        assert cls.__mro__[1].__name__ == (parent or "Exception"), name
        assert issubclass(cls, errors.RunError)


def test_the_drawing_is_read_as_a_tree() -> None:
    assert drawn_parents()["PortBusy"] == "ServiceUnavailable"
    assert drawn_parents()["RunError"] is None
