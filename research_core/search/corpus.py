"""The local corpus search backend: markdown documents in a folder, searched with SQLite FTS5.

Each `*.md` file has a YAML front matter block (id, title, url, published, source_type,
publisher, lang) and a markdown body. FTS5's `unicode61` tokenizer sees a run of Chinese
characters as one token, so title and body are segmented with jieba (search mode) and stored
as space-joined words; queries are segmented the same way.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import logging
import re
import sqlite3
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from research_core import safe_yaml
from research_core.errors import CorpusError
from research_core.protocols import SearchHit, SearchRequest, Similarity
from research_core.search import snippets
from research_core.search.fusion import PASSAGE_CHARS, PASSAGES_MOST, Gist, dense_ranking, rrf
from research_core.search.reading import clean_markdown, split_paragraphs
from research_core.search.tables import with_tables_as_sentences
from research_core.text.terms import segment

REQUIRED_KEYS = ("id", "title", "url", "published", "source_type", "publisher", "lang")
SNIPPET_MAX = 400
MAX_QUERY_TERMS = 32
MAX_PHRASE_WORDS = 8
# A document is indexed whole (segmented word by word), so its size bounds the load time.
MAX_DOCUMENT_BYTES = 2_000_000  # about 7 s to segment and index on one core
MAX_FRONT_MATTER_BYTES = 64 * 1024
log = logging.getLogger(__name__)

_EN_STOP_WORDS = (
    "a an and are as at be been but by did do does for from had has have how in into is it its "
    "of on or over than that the their then there these this those to under up was were what "
    "when where which who why will with vs via about after before per between"
)
_ZH_STOP_WORDS = "的了和是在与及或等也就都而把被之其于对这那吗呢吧啊"
STOP_WORDS = frozenset(_EN_STOP_WORDS.split()) | frozenset(_ZH_STOP_WORDS)


def _words(text: str) -> list[str]:
    """Search-mode jieba words, lowercased, without whitespace and punctuation-only pieces."""
    pieces = segment(text.lower())
    return [p.strip() for p in pieces if any(ch.isalnum() for ch in p)]


def index_text(text: str) -> str:
    """Text as it is stored in the FTS table: segmented words joined by spaces."""
    return " ".join(_words(text))


def _is_single_han(word: str) -> bool:
    return len(word) == 1 and "\u4e00" <= word <= "\u9fff"


def _runs(query: str) -> list[list[str]]:
    """Precise-mode words of the query, in runs split at whitespace, punctuation, stop words."""
    runs: list[list[str]] = [[]]
    for word in (w.strip() for w in segment(query.lower(), search_mode=False)):
        if any(ch.isalnum() for ch in word) and word not in STOP_WORDS:
            runs[-1].append(word)
        elif runs[-1]:
            runs.append([])
    return [run for run in runs if run]


@dataclass(frozen=True)
class QueryPlan:
    """What a query searches for: single words, word sequences, and the text of each run."""

    terms: tuple[str, ...]
    phrases: tuple[tuple[str, ...], ...]
    needles: tuple[str, ...]

    def match_expression(self) -> str:
        """FTS5 MATCH text: every term and phrase double-quoted, joined with OR."""
        quoted = [_quote([t]) for t in self.terms] + [_quote(list(p)) for p in self.phrases]
        return " OR ".join(quoted)


def _quote(words: list[str]) -> str:
    return '"' + " ".join(w.replace('"', '""') for w in words) + '"'


def plan_query(query: str) -> QueryPlan:
    """Segment a query like the index. A single Chinese character is a term only when its run
    has no longer word; a run of several words is also searched as a phrase, so 六氟磷酸锂
    (segmented 六/氟/磷酸/锂) ranks documents with the exact sequence first."""
    terms: dict[str, None] = {}
    phrases: dict[tuple[str, ...], None] = {}
    needles: dict[str, None] = {}
    for run in _runs(query):
        words = _words("".join(run))
        longer = [w for w in words if not _is_single_han(w)] or words
        terms.update(dict.fromkeys(longer))
        if len(run) > 1 and len(words) <= MAX_PHRASE_WORDS:
            phrases[tuple(words)] = None
        needles.update(dict.fromkeys(["".join(run), *longer]))
    return QueryPlan(
        tuple(terms)[:MAX_QUERY_TERMS], tuple(phrases)[:MAX_QUERY_TERMS], tuple(needles)
    )


@dataclass(frozen=True)
class CorpusDocument:
    source_id: str
    title: str
    url: str
    published: dt.date
    source_type: str
    publisher: str
    lang: str
    body: str
    path: Path
    raw_body: str = ""  # the body as written (tables as tables), for the BM25 quoter

    def index_row(self) -> tuple[str, str, str, str, str]:
        """(title, body, source_id, published, lang) as stored in the FTS table."""
        published = self.published.isoformat()
        return index_text(self.title), index_text(self.body), self.source_id, published, self.lang


def _is_prose(paragraph: str) -> bool:
    """Not a heading (`#`, or a lone `**bold**` line) and not a markdown table."""
    text = paragraph.strip()
    bold_line = "\n" not in text and text.startswith("**") and text.endswith("**")
    return not (text.startswith(("#", "|")) or bold_line)


def _count(needle: str, text: str) -> int:
    if needle.isascii():
        return len(re.findall(r"(?<![a-z0-9])" + re.escape(needle) + r"(?![a-z0-9])", text))
    return text.count(needle)


def best_paragraph(paragraphs: list[str], needles: Iterable[str]) -> str:
    """The paragraph matching most distinct query needles; among equals prose beats headings
    and tables, then more matches win, then the earliest."""
    best, best_score = (paragraphs[0] if paragraphs else ""), (0, False, 0)
    for paragraph in paragraphs:
        counts = [_count(n, paragraph.lower()) for n in needles]
        score = (sum(1 for c in counts if c), _is_prose(paragraph), sum(counts))
        if score > best_score:
            best, best_score = paragraph, score
    return best


def make_snippet(paragraph: str, needles: Iterable[str]) -> str:
    """A cleaned paragraph of at most SNIPPET_MAX chars around its longest match, cut at
    sentence or word boundaries (`research_core.search.snippets`)."""
    text = clean_markdown(paragraph)
    lowered = text.lower()
    found = [n for n in sorted(needles, key=len, reverse=True) if n in lowered]
    return snippets.around(text, lowered.find(found[0]) if found else 0, SNIPPET_MAX)


def _fail(path: Path, reason: str) -> CorpusError:
    return CorpusError(f"bad front matter in {path.name}: {reason}")


def _split_front_matter(path: Path, text: str) -> tuple[str, str]:
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        raise _fail(path, "no leading '---' block")
    for end in range(1, len(lines)):
        if lines[end].strip() == "---":
            return "\n".join(lines[1:end]), "\n".join(lines[end + 1 :]).strip()
    raise _fail(path, "front matter block is not closed with '---'")


_DATE = re.compile(r"(\d{4}-\d{2}-\d{2})(?:[Tt ][\d:.]+(?:[Zz]|[+-][\d:]+)?)?")


def _parse_date(path: Path, value: Any) -> dt.date:
    """A date (or datetime) object as is, or a 'YYYY-MM-DD' string (a time part is ignored)."""
    if isinstance(value, dt.date):
        return value.date() if isinstance(value, dt.datetime) else value
    match = _DATE.fullmatch(value.strip()) if isinstance(value, str) else None
    if match:
        with contextlib.suppress(ValueError):
            return dt.date.fromisoformat(match.group(1))
    raise _fail(path, f"unparseable 'published' date {value!r} (want YYYY-MM-DD)")


def _load_meta(path: Path, raw: str) -> dict[str, Any]:
    try:
        meta = safe_yaml.load(raw, MAX_FRONT_MATTER_BYTES)
    except yaml.YAMLError as exc:
        raise _fail(path, "invalid YAML: " + " ".join(str(exc).split())) from exc
    if not isinstance(meta, dict):
        raise _fail(path, "front matter is not a mapping")
    for key in REQUIRED_KEYS:
        if meta.get(key) is None:
            raise _fail(path, f"missing key '{key}'")
    return meta


def parse_document(path: Path) -> CorpusDocument:
    """Read one markdown document; raise CorpusError naming the file on any defect."""
    try:
        size = path.stat().st_size
        if size > MAX_DOCUMENT_BYTES:
            raise CorpusError(f"{path.name} is {size / 1e6:.1f} MB; documents over "
                              f"{MAX_DOCUMENT_BYTES / 1e6:g} MB are not indexed (split it)")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CorpusError(f"cannot read {path.name}: {exc}") from exc
    raw, body = _split_front_matter(path, text)
    meta = _load_meta(path, raw)
    source_id = str(meta["id"]).strip()
    if not source_id:
        raise _fail(path, "empty 'id'")
    return CorpusDocument(
        source_id=source_id,
        title=str(meta["title"]).strip(),
        url=str(meta["url"]).strip(),
        published=_parse_date(path, meta["published"]),
        source_type=str(meta["source_type"]).strip(),
        publisher=str(meta["publisher"]).strip(),
        lang=str(meta["lang"]).strip().lower(),
        body=with_tables_as_sentences(body),
        path=path,
        raw_body=body,
    )


_SCHEMA = """
CREATE VIRTUAL TABLE docs USING fts5(
    title, body, source_id UNINDEXED, published UNINDEXED, lang UNINDEXED,
    tokenize = 'unicode61'
)
"""

_INSERT = "INSERT INTO docs (title, body, source_id, published, lang) VALUES (?, ?, ?, ?, ?)"
_SEARCH = """
SELECT source_id FROM docs
WHERE docs MATCH ? AND published >= ? AND published <= ? AND (? IS NULL OR lang = ?)
ORDER BY bm25(docs, 3.0, 1.0), published DESC, source_id
LIMIT ?
"""


class CorpusBackend:
    """SearchBackend over a folder of markdown documents, indexed in memory."""

    def __init__(self, similarity: Similarity | None = None) -> None:
        self.similarity = similarity  # with one, the lexical ranking is fused with a dense one
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute(_SCHEMA)
        self._lock = threading.Lock()
        self._docs: dict[str, CorpusDocument] = {}
        self._paths: set[Path] = set()
        self._gists: list[Gist] = []  # what the dense ranking reads, made once per document

    @classmethod
    def from_folder(cls, folder: Path, similarity: Similarity | None = None) -> CorpusBackend:
        """Load every `*.md` in `folder`; a folder without any is an error. With a
        `similarity`, searches are hybrid (`research_core.search.fusion`)."""
        backend = cls(similarity)
        if backend.add_folder(folder) == 0:
            raise CorpusError(f"corpus folder has no .md documents: {folder}")
        return backend

    @property
    def name(self) -> str:
        """Names the documents too, so a cached response never outlives a change of corpus."""
        digest = hashlib.sha256("\n".join(sorted(self._docs)).encode("utf-8")).hexdigest()
        return f"corpus:{digest[:12]}"

    def __len__(self) -> int:
        return len(self._docs)

    def add_folder(self, folder: Path) -> int:
        """Add the `*.md` files of `folder` not loaded before; returns how many were added.

        All new files are parsed before any is indexed, so a bad file adds nothing.
        """
        _check_folder(folder)
        new = [parse_document(p) for p in _documents_in(folder) if p not in self._paths]
        self._check_ids(new)
        with self._lock, self._db:
            self._db.executemany(_INSERT, [doc.index_row() for doc in new])
        self._docs.update((doc.source_id, doc) for doc in new)
        self._paths.update(doc.path.resolve() for doc in new)
        self._gists += [_gist(doc) for doc in new]
        return len(new)

    def _check_ids(self, docs: list[CorpusDocument]) -> None:
        seen = {doc_id: doc.path for doc_id, doc in self._docs.items()}
        for doc in docs:
            if doc.source_id in seen:
                other = seen[doc.source_id].name
                raise _fail(doc.path, f"duplicate id '{doc.source_id}' (also in {other})")
            seen[doc.source_id] = doc.path

    def documents(self) -> list[CorpusDocument]:
        return list(self._docs.values())

    def paragraphs(self, source_id: str) -> list[str]:
        """The body split on blank lines (stripped, non-empty); [] for an unknown id."""
        doc = self._docs.get(source_id)
        return split_paragraphs(doc.body) if doc else []

    def _search_ids(self, plan: QueryPlan, request: SearchRequest) -> list[str]:
        """Ids of matching documents, best first; the time range and lang filter are in SQL."""
        if not plan.terms or request.limit <= 0:
            return []
        since = request.time_range.since.isoformat() if request.time_range.since else ""
        until = request.time_range.until.isoformat() if request.time_range.until else "9999-12-31"
        lang = request.lang.strip().lower() if request.lang and request.lang.strip() else None
        params = (plan.match_expression(), since, until, lang, lang, request.limit)
        with self._lock:
            rows = self._db.execute(_SEARCH, params).fetchall()
        return [str(row[0]) for row in rows]

    def search_sync(self, request: SearchRequest) -> list[SearchHit]:
        """The lexical search alone (BM25 over jieba words)."""
        plan = plan_query(request.query)
        return [self._hit(self._docs[i], plan) for i in self._search_ids(plan, request)]

    def _hit(self, doc: CorpusDocument, plan: QueryPlan) -> SearchHit:
        paragraph = best_paragraph(split_paragraphs(doc.body), plan.needles)
        return SearchHit(
            source_id=doc.source_id,
            title=doc.title,
            snippet=make_snippet(paragraph, plan.needles),
            url=doc.url,
            published=doc.published,
            source_type=doc.source_type,
            publisher=doc.publisher,
            lang=doc.lang,
        )

    async def search(self, request: SearchRequest) -> list[SearchHit]:
        """The lexical ranking fused with the dense one (reciprocal rank fusion) where the
        backend has a similarity, else the lexical one."""
        if self.similarity is None or request.limit <= 0:
            return self.search_sync(request)
        plan = plan_query(request.query)
        lexical = self._search_ids(plan, request)
        dense = await dense_ranking(self.similarity, request, self._gists)
        return [self._hit(self._docs[i], plan) for i in rrf([lexical, dense])[:request.limit]]

    async def read_body(self, source_id: str) -> str | None:
        doc = self._docs.get(source_id)
        return doc.body if doc else None

    def close(self) -> None:
        self._db.close()


def _gist(doc: CorpusDocument) -> Gist:
    """A document's passages as the dense ranking compares them: its first paragraphs, each
    after its title."""
    return Gist(doc.source_id, tuple(f"{doc.title}. {clean_markdown(p)[:PASSAGE_CHARS]}"
                                     for p in split_paragraphs(doc.body)[:PASSAGES_MOST]),
                doc.published, doc.lang)


def _check_folder(folder: Path) -> None:
    """CorpusError saying what `folder` is when it is not a folder."""
    if folder.is_dir():
        return
    if folder.is_file():
        raise CorpusError(f"corpus folder {folder} is a file, not a folder")
    if folder.exists():
        raise CorpusError(f"corpus folder {folder} is not a folder")
    raise CorpusError(f"corpus folder not found: {folder}")


def _documents_in(folder: Path) -> list[Path]:
    """The resolved paths of the folder's `*.md` files, each once (a link to a document of
    the folder is that document). A link that leads out of the folder (to a file or a folder,
    or nowhere: a loop) is refused with one log line: a corpus is what its folder holds."""
    root = folder.resolve()
    found: dict[Path, None] = {}
    for entry in sorted(folder.glob("*.md")):
        try:
            target = entry.resolve(strict=True)
        except (OSError, RuntimeError):  # dangling, or a loop of links
            target = None
        if entry.is_symlink() and (target is None or not target.is_relative_to(root)):
            log.warning("corpus: skipped %s: a link that leads out of the corpus folder",
                        entry.name)
        elif target is not None and target.is_file():
            found[target] = None
    return list(found)


def sample_corpus_dir() -> Path:
    """The project's bundled sample corpus (26 documents on European heat pumps)."""
    return Path(str(resources.files("research_core.search").joinpath("sample_corpus")))
