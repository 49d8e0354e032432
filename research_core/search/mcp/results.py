"""What an MCP tool answers, as documents: resource links, embedded resources, text (plain, or
JSON records such as `[{"title", "url", "snippet", "date"}]`) and structured content.

Each document becomes a hit with a stable source id (the server's name and a hash of its URI),
its title, the paragraph that best matches the query as its snippet, a date when the server
gives one (a resource's `lastModified`, a record's date) and the resource's URI as its URL.
A document without a URI is given `mcp://<server>/<hash of its text>`. Text from a tool is
data: it is kept as text and quoted to the models like a page, never followed.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from mcp.types import (
    CallToolResult,
    EmbeddedResource,
    ReadResourceResult,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from research_core.mcp_settings import McpServer
from research_core.protocols import SearchHit
from research_core.search import snippets
from research_core.search.web.hits import clean_text, parse_date

SNIPPET_CHARS = 1000  # the search tool cuts it to the engine's snippet length
TITLE_CHARS = 300
MCP_ID_PREFIX = "mcp-"
_LIST_KEYS = ("results", "items", "hits", "documents", "result", "data", "pages")
_URI_KEYS = ("uri", "url", "link", "href", "permalink")
_TITLE_KEYS = ("title", "name", "subject", "heading")
_TEXT_KEYS = ("snippet", "summary", "description", "excerpt", "content", "text", "body")
_DATE_KEYS = ("published", "date", "updated", "last_modified", "lastModified", "modified",
              "created", "updated_at", "created_at")


@dataclass(frozen=True)
class Document:
    """One document of an answer: its URI, title, text and date."""

    uri: str
    title: str
    text: str
    published: dt.date | None


def answer_size(result: CallToolResult | ReadResourceResult) -> int:
    """The characters of text an answer carries, counted before anything is parsed (what
    the size cap holds it to)."""
    if isinstance(result, ReadResourceResult):
        return sum(len(c.text) for c in result.contents if isinstance(c, TextResourceContents))
    size = len(json.dumps(result.structured_content)) if result.structured_content else 0
    for block in result.content:
        if isinstance(block, TextContent):
            size += len(block.text)
        elif isinstance(block, ResourceLink):
            size += len(block.description or "") + len(block.title or block.name)
        elif isinstance(block, EmbeddedResource) and isinstance(block.resource,
                                                                TextResourceContents):
            size += len(block.resource.text)
    return size


def documents(result: CallToolResult | ReadResourceResult) -> list[Document]:
    if isinstance(result, ReadResourceResult):
        return [Document(c.uri, "", c.text, None) for c in result.contents
                if isinstance(c, TextResourceContents)]
    structured = list(_records(result.structured_content))
    if structured:
        return structured
    return [d for block in result.content for d in _from_block(block)]


def hits(server: McpServer, found: list[Document], query: str) -> list[SearchHit]:
    return [_hit(server, d, query) for d in found if d.text.strip() or d.title.strip()]


def source_id(server: str, uri: str) -> str:
    return f"{MCP_ID_PREFIX}{server}-{hashlib.sha256(uri.encode()).hexdigest()[:12]}"


def body_of(result: CallToolResult | ReadResourceResult) -> str:
    """A document's full text as a read answers it."""
    return "\n\n".join(d.text for d in documents(result) if d.text.strip())


def _hit(server: McpServer, document: Document, query: str) -> SearchHit:
    uri = document.uri or _made_uri(server.name, document)
    text = best_paragraph(document.text, query)
    title = clean_text(document.title) or snippets.cut(text, 80) or uri
    return SearchHit(source_id=source_id(server.name, uri), title=title[:TITLE_CHARS],
                     snippet=snippets.cut(text, SNIPPET_CHARS), url=uri,
                     published=document.published, source_type=server.source_type,
                     publisher=server.name)


def best_paragraph(text: str, query: str) -> str:
    """The paragraph sharing the most words with the query (the first on a tie)."""
    paragraphs = [p for p in re.split(r"\n[ \t]*\n", text) if p.strip()] or [text]
    asked = set(re.findall(r"\w+", query.lower()))
    return max(paragraphs, key=lambda p: len(asked & set(re.findall(r"\w+", p.lower()))))


def _made_uri(server: str, document: Document) -> str:
    digest = hashlib.sha256(f"{document.title}\n{document.text}".encode()).hexdigest()[:16]
    return f"mcp://{server}/{digest}"


def _from_block(block: object) -> Iterator[Document]:
    if isinstance(block, ResourceLink):
        yield Document(block.uri, block.title or block.name, block.description or "",
                       _annotated_date(block.annotations))
    elif isinstance(block, EmbeddedResource) and isinstance(block.resource,
                                                            TextResourceContents):
        yield Document(block.resource.uri, "", block.resource.text,
                       _annotated_date(block.annotations))
    elif isinstance(block, TextContent):
        yield from _from_text(block.text)


def _from_text(text: str) -> Iterator[Document]:
    """JSON records when the text is JSON holding some, else the text as one document."""
    stripped = text.strip()
    if stripped[:1] in ("[", "{"):
        try:
            records = list(_records(json.loads(stripped)))
        except (json.JSONDecodeError, RecursionError):
            records = []
        if records:
            yield from records
            return
    first, _, rest = stripped.partition("\n")
    yield Document("", first.lstrip("# ").strip()[:TITLE_CHARS], rest.strip() or first, None)


def _records(data: Any) -> Iterator[Document]:
    if isinstance(data, dict):
        listed = next((data[k] for k in _LIST_KEYS if isinstance(data.get(k), list)), None)
        rows = listed if listed is not None else [data]
    elif isinstance(data, list):
        rows = data
    else:
        return
    for row in rows:
        if isinstance(row, dict) and (record := _record(row)) is not None:
            yield record


def _record(row: dict[str, Any]) -> Document | None:
    def first(keys: tuple[str, ...]) -> str:
        return next((str(row[k]) for k in keys if isinstance(row.get(k), str | int | float)
                     and str(row[k]).strip()), "")

    title, text = first(_TITLE_KEYS), first(_TEXT_KEYS)
    if not (title or text):
        return None
    return Document(first(_URI_KEYS), title, text, parse_date(first(_DATE_KEYS)))


def _annotated_date(annotations: Any) -> dt.date | None:
    return parse_date(getattr(annotations, "last_modified", None))
