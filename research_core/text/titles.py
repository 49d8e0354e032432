"""Whether a title adds anything to the text shown under it: a prompt that shows a hit's or a
source's text need not repeat a title whose words that text already says."""

from __future__ import annotations

from collections.abc import Iterable

from research_core.text.terms import content_terms


def restated(title: str, texts: Iterable[str]) -> bool:
    """True when every content word of the title occurs in `texts`."""
    words = set(content_terms(title))
    said = {w for t in texts for w in content_terms(t)}
    return bool(words) and words <= said
