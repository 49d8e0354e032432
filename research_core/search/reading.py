"""Deep reading: a highly relevant hit's body is split into paragraphs and only the one or
two most similar to the sub-question enter the context (about 5,000 → 900 tokens a page;
docs/design.md §1)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from research_core.protocols import SearchBackend, Similarity
from research_core.text.figures import without_figures
from research_core.text.terms import CJK


@dataclass(frozen=True)
class DeepRead:
    node_id: str
    source_id: str
    paragraphs_total: int
    chosen: list[str]
    tokens_read: int
    tokens_full: int

    @property
    def text(self) -> str:
        return "\n".join(self.chosen)


def estimate_tokens(text: str) -> int:
    """About one token per Chinese character and per four other characters."""
    cjk = len(CJK.findall(text))
    return cjk + (len(text) - cjk + 3) // 4


def split_paragraphs(body: str) -> list[str]:
    """Body split on blank lines, each paragraph stripped, empty ones dropped."""
    return [p.strip() for p in re.split(r"\n[ \t]*\n", body) if p.strip()]


def clean_markdown(text: str) -> str:
    """Collapse whitespace and strip emphasis markers and leading heading marks."""
    text = re.sub(r"\*+", "", text)
    text = re.sub(r"^[ \t]*#+[ \t]*", "", text, flags=re.MULTILINE)
    return " ".join(text.split())


def best_paragraphs(paragraphs: list[str], scores: list[float], keep: int) -> list[str]:
    """The `keep` best-scoring paragraphs, in document order."""
    ranked = sorted(range(len(paragraphs)), key=lambda i: -scores[i])[:keep]
    return [paragraphs[i] for i in sorted(ranked)]


async def deep_read(backend: SearchBackend, similarity: Similarity, node_id: str,
                    question: str, source_id: str, keep: int,
                    prefer: Callable[[str], float] | None = None) -> DeepRead | None:
    """Read a body and keep its paragraphs closest to the question in their words (figures
    taken out: `without_figures`), plus what `prefer` adds to a paragraph's score; None if
    unreadable."""
    body = await backend.read_body(source_id)
    if not body:
        return None
    paragraphs = [clean_markdown(p) for p in split_paragraphs(body)]
    if not paragraphs:
        return None
    scores = (await similarity.matrix([without_figures(question)],
                                      [without_figures(p) for p in paragraphs]))[0]
    if prefer is not None:
        scores = [s + prefer(p) for s, p in zip(scores, paragraphs, strict=True)]
    chosen = best_paragraphs(paragraphs, scores, keep)
    return DeepRead(node_id, source_id, len(paragraphs), chosen,
                    estimate_tokens("\n".join(chosen)), estimate_tokens(body))
