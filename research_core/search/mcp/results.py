"""What an MCP tool answers, as documents: resource links, embedded resources, text (plain, or
JSON records such as `[{"title", "url", "snippet", "date"}]`) and structured content.

Each document becomes a hit with a stable source id (the server's name and a hash of its URI),
its title, the paragraph that best matches the query as its snippet, a date when the server
gives one (a resource's `lastModified`, a record's date) and the resource's URI as its URL.
A document without a URI is given `mcp://<server>/<hash of its text>`. Text from a tool is
data: it is kept as text and quoted to the models like a page, never followed.

One answer may hold several documents. Structured content (a list of records, or an object
holding one under `results`, `items`, `documents`, …) is taken first, one document a record.
Otherwise a text block is split where the server separates its documents: at the server's
`document_break` line when its settings name one, else at a rule line (`---`, `***`, `===`, `___`)
and wherever a document's own header starts again. A header is `key: value` lines (`title:`,
`uri:`/`url:`/`link:`, `date:`/`published:`/`updated:`, optionally `- ` or `**` around the key)
at the start of a document; `content:`/`text:`/`snippet:` opens its text. The header's title,
URI and date become the document's metadata and are left out of its text: a report never
quotes them as if they were the document's words.
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

from research_core.protocols import SearchHit
from research_core.search import snippets
from research_core.search.web.hits import clean_text, parse_date
from research_core.settings.mcp import McpServer

SNIPPET_CHARS = 1000  # the search tool cuts it to the engine's snippet length
TITLE_CHARS = 300
MCP_ID_PREFIX = "mcp-"
_LIST_KEYS = ("results", "items", "hits", "documents", "result", "data", "pages")
_URI_KEYS = ("uri", "url", "link", "href", "permalink")
_TITLE_KEYS = ("title", "name", "subject", "heading")
_TEXT_KEYS = ("snippet", "summary", "description", "excerpt", "content", "text", "body")
_DATE_KEYS = ("published", "date", "updated", "last_modified", "lastModified", "modified",
              "created", "updated_at", "created_at")
_META_KEYS = ("metadata", "meta")  # a record's metadata may sit in an object of its own
# A text's own separators: a rule line, and a header line (`key: value`, `**Key:** value`).
_RULE = re.compile(r"^[ \t]*(?:-{3,}|\*{3,}|={3,}|_{3,})[ \t]*$")
_FIELD = re.compile(r"^[ \t]*(?:[-*][ \t]+)?\**[ \t]*([A-Za-z][A-Za-z _-]{0,23}?)[ \t]*"
                    r"(?::\**|\**:)[ \t]*(.*?)[ \t]*$")
_HEADER_KEYS = {
    **dict.fromkeys(("title", "name", "subject", "heading"), "title"),
    **dict.fromkeys((*_URI_KEYS, "source_url", "link_url"), "uri"),
    **dict.fromkeys(("published", "date", "updated", "last_modified", "lastmodified",
                     "modified", "created", "updated_at", "created_at", "published_at",
                     "last_updated", "last_edited"), "date"),
    **dict.fromkeys(("snippet", "summary", "description", "excerpt", "content", "text",
                     "body"), "text"),
}


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


def documents(result: CallToolResult | ReadResourceResult,
              separator: str | None = "") -> list[Document]:
    """The documents of an answer (see the module's docstring). `separator`: the line the
    server separates the documents of a text with ("" for the usual ones); None: a text is
    one document (a read), its header still taken out of its text."""
    if isinstance(result, ReadResourceResult):
        return [Document(c.uri, "", c.text, None) for c in result.contents
                if isinstance(c, TextResourceContents)]
    structured = list(_records(result.structured_content))
    if structured:
        return structured
    return [d for block in result.content for d in _from_block(block, separator)]


def hits(server: McpServer, found: list[Document], query: str) -> list[SearchHit]:
    return [_hit(server, d, query) for d in found if d.text.strip() or d.title.strip()]


def source_id(server: str, uri: str) -> str:
    return f"{MCP_ID_PREFIX}{server}-{hashlib.sha256(uri.encode()).hexdigest()[:12]}"


def body_of(result: CallToolResult | ReadResourceResult) -> str:
    """A document's full text as a read answers it."""
    return "\n\n".join(d.text for d in documents(result, None) if d.text.strip())


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


def _from_block(block: object, separator: str | None) -> Iterator[Document]:
    if isinstance(block, ResourceLink):
        yield Document(block.uri, block.title or block.name, block.description or "",
                       _annotated_date(block.annotations))
    elif isinstance(block, EmbeddedResource) and isinstance(block.resource,
                                                            TextResourceContents):
        yield Document(block.resource.uri, "", block.resource.text,
                       _annotated_date(block.annotations))
    elif isinstance(block, TextContent):
        yield from _from_text(block.text, separator)


def _from_text(text: str, separator: str | None) -> Iterator[Document]:
    """JSON records when the text is JSON holding some, else the documents of the text."""
    stripped = text.strip()
    if stripped[:1] in ("[", "{"):
        try:
            records = list(_records(json.loads(stripped)))
        except (json.JSONDecodeError, RecursionError):
            records = []
        if records:
            yield from records
            return
    for part in _parts(stripped, separator):
        yield from _headed(part, split=separator is not None)


def _parts(text: str, separator: str | None) -> list[str]:
    """The text cut at the server's separator lines (see the module's docstring)."""
    if separator is None:
        return [text]
    parts: list[list[str]] = [[]]
    for line in text.splitlines():
        cut = line.strip() == separator.strip() if separator.strip() else _RULE.match(line)
        if cut:
            parts.append([])
        else:
            parts[-1].append(line)
    return [joined for lines in parts if (joined := "\n".join(lines).strip())]


@dataclass
class _Draft:
    """A document being read from a text: its header's fields and its lines of text."""

    fields: dict[str, str]
    lines: list[str]

    def document(self, whole: bool = False) -> Document | None:
        """The document; titled by its first line when its header gives no title (a heading,
        or any first line when it has no header), which leaves its text unless `whole` (a
        read: the document's full text)."""
        text = "\n".join(self.lines).strip()
        title = self.fields.get("title", "")
        if not self.fields or (not title and text.startswith("#")):
            first, _, rest = text.partition("\n")
            title = first.lstrip("# ").strip()
            text = text if whole else (rest.strip() or first)
        if not (title.strip() or text.strip()):
            return None
        return Document(self.fields.get("uri", ""), title[:TITLE_CHARS], text,
                        parse_date(self.fields.get("date", "")))


def _headed(part: str, split: bool) -> Iterator[Document]:
    """The documents of one part of a text, each opening with its header. When `split`, a
    header field after a document's text starts the next document where the current one
    already has that field, or has a header of its own, or after a blank line. Fields that
    end the part (`Last edited: …`) are the last document's footer."""
    lines = part.splitlines()
    footer = len(lines)  # from here on: title, URI and date fields and blank lines only
    while footer and (not lines[footer - 1].strip()
                      or (_header_field(lines[footer - 1]) or ("text", ""))[0] != "text"):
        footer -= 1
    draft, in_header, blank = _Draft({}, []), True, False
    for number, line in enumerate(lines):
        field = _header_field(line)
        if number >= footer and not in_header:
            if field is not None and field[0] != "text":
                draft.fields.setdefault(*field)
            continue
        if field is not None and field[0] != "text":
            key, value = field
            starts = key in draft.fields or (not in_header and (bool(draft.fields) or blank))
            if split and starts:
                if (done := draft.document()) is not None:
                    yield done
                draft, in_header = _Draft({}, []), True
            if in_header:
                draft.fields[key] = value
                blank = False
                continue
        elif field is not None and in_header and draft.fields:  # `content: …` opens the text
            draft.lines.append(field[1])
            in_header = blank = False
            continue
        if in_header and (not line.strip() or (draft.fields and _other_field(line))):
            continue  # blank lines, or other fields of the header (an id, a score)
        draft.lines.append(line)
        in_header, blank = False, not line.strip()
    if (done := draft.document(whole=not split)) is not None:
        yield done


def _header_field(line: str) -> tuple[str, str] | None:
    """("title" | "uri" | "date" | "text", value) when `line` is such a header field."""
    match = _FIELD.match(line)
    if match is None:
        return None
    key = _HEADER_KEYS.get(re.sub(r"[ -]+", "_", match.group(1).strip().lower()))
    value = match.group(2).strip().strip("*").strip()
    if key == "uri" and (not value or any(c.isspace() for c in value)):
        return None  # "Source: the county survey" is text, not an address
    if key == "date" and parse_date(value) is None:
        return None
    if key in ("title", "uri", "date") and not value:
        return None
    return (key, value) if key is not None else None


def _other_field(line: str) -> bool:
    """A `key: value` line that is neither text nor a field the header's metadata uses."""
    match = _FIELD.match(line)
    return match is not None and bool(match.group(2).strip()) and \
        not match.group(2).startswith("//") and len(match.group(1).split()) <= 2


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
    meta = [row, *(row[k] for k in _META_KEYS if isinstance(row.get(k), dict))]

    def first(keys: tuple[str, ...]) -> str:
        return next((str(d[k]) for d in meta for k in keys
                     if isinstance(d.get(k), str | int | float) and str(d[k]).strip()), "")

    title, text = first(_TITLE_KEYS), first(_TEXT_KEYS)
    if not (title or text):
        return None
    return Document(first(_URI_KEYS), title, text, parse_date(first(_DATE_KEYS)))


def _annotated_date(annotations: Any) -> dt.date | None:
    return parse_date(getattr(annotations, "last_modified", None))
