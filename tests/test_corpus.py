"""The local corpus backend: loading, Chinese and English full-text search, filters, snippets."""

from __future__ import annotations

import datetime as dt
import logging
import sqlite3
from pathlib import Path

import pytest

from research_core.errors import CorpusError
from research_core.protocols import SearchBackend, SearchRequest, TimeRange
from research_core.search.corpus import CorpusBackend, plan_query

LONG_PARAGRAPH = "隔膜企业扩产节奏放缓，" * 60

DOCS: dict[str, tuple[str, str, str, str]] = {
    # id: (published, lang, title, body)
    "en-lithium": (
        "2026-10-31",
        "en",
        "China lithium carbonate averages 86,200 yuan/t in October",
        "## Summary\n\nMarkets were calm across the month.\n\n"
        "Battery-grade **lithium carbonate** averaged 86,200 yuan per tonne, and the carbonate "
        "price rose 12.4% on the year.\n\nHydroxide stayed weak as exports slid.",
    ),
    "en-graphite": (
        "2026-07-15",
        "en",
        "Graphite anode prices hold steady",
        "Graphitisation fees crept up in July.\n\nAnode makers kept output flat.",
    ),
    "en-lipf6": (
        "2026-10-08",
        "en",
        "Fuyuan commissions a large LiPF6 line",
        "The LiPF6 plant started in October.\n\nElectrolyte makers expect stable supply.",
    ),
    "zh-copperfoil": (
        "2026-10-13",
        "zh",
        "锂电铜箔加工费9月大涨8.1%",
        "**一、行情**\n\n本月市场整体平稳，成交一般。\n\n"
        "9月6μm锂电铜箔加工费均价升至1.86万元/吨，环比上涨8.1%，龙头企业订单饱满。\n\n"
        "分析人士认为，铜价波动由下游承担。",
    ),
    "zh-copperfoil-old": (
        "2024-06-18",
        "zh",
        "锂电铜箔铜箔加工费跌破1.3万元/吨 铜箔企业亏损",
        "今年以来锂电铜箔加工费持续下滑，铜箔行业陷入亏损。",
    ),
    "zh-heatpump": (
        "2026-09-01",
        "zh",
        "空气源设备出口快速增长",
        "欧洲市场需求回暖。\n\n今年前八个月空气源热泵出口同比增长三成，企业加快海外布局。",
    ),
    "zh-lipf6": (
        "2026-01-22",
        "zh",
        "电解液原料报价大幅上涨",
        "电解液核心原料六氟磷酸锂报价升至12.5万元/吨，三个月涨逾七成。\n\n"
        "LiPF6 新增产能集中在下半年释放。",
    ),
    "zh-separator": (
        "2026-08-05",
        "zh",
        "上半年隔膜行业报告",
        f"市场概况。\n\n{LONG_PARAGRAPH}\n\n湿法基膜价格小幅回升。",
    ),
}


def front_matter(doc_id: str, published: str, lang: str, title: str) -> str:
    return (
        f'---\nid: {doc_id}\ntitle: "{title}"\nurl: https://example.test/{doc_id}\n'
        f"published: {published}\nsource_type: news\npublisher: Example Wire\nlang: {lang}\n---\n"
    )


def write_doc(folder: Path, doc_id: str, published: str, lang: str, title: str, body: str) -> Path:
    path = folder / f"{doc_id}.md"
    path.write_text(front_matter(doc_id, published, lang, title) + body + "\n", encoding="utf-8")
    return path


@pytest.fixture
def corpus_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    for doc_id, (published, lang, title, body) in DOCS.items():
        write_doc(folder, doc_id, published, lang, title, body)
    return folder


@pytest.fixture
def backend(corpus_dir: Path) -> CorpusBackend:
    return CorpusBackend.from_folder(corpus_dir)


async def ids(
    backend: CorpusBackend,
    query: str,
    *,
    time_range: TimeRange | None = None,
    lang: str | None = None,
    limit: int = 8,
) -> list[str]:
    request = SearchRequest(query, time_range or TimeRange(), lang, limit)
    return [hit.source_id for hit in await backend.search(request)]


# --- loading -----------------------------------------------------------------------------


def test_loads_every_document_and_is_a_search_backend(backend: CorpusBackend) -> None:
    as_protocol: SearchBackend = backend
    assert as_protocol.name.startswith("corpus:")
    assert len(backend) == len(DOCS)
    assert {doc.source_id for doc in backend.documents()} == set(DOCS)


def test_missing_folder_raises(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="corpus folder not found"):
        CorpusBackend.from_folder(tmp_path / "nope")


def test_file_instead_of_folder_raises(tmp_path: Path) -> None:
    path = tmp_path / "file.md"
    path.write_text("x", encoding="utf-8")
    with pytest.raises(CorpusError) as raised:
        CorpusBackend.from_folder(path)
    assert str(raised.value) == f"corpus folder {path} is a file, not a folder"


def test_links_out_of_the_folder_are_refused_with_one_line_each(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A symlink (to a file or a folder) that resolves outside the corpus folder is not read:
    the loader once indexed /etc/passwd and /proc/self/environ that way, refusing them only
    for their lack of front matter. Links that stay inside, and a corpus folder that is
    itself a link, are read."""
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = write_doc(outside, "secret", "2026-01-01", "en", "Secret", "The secret body.")
    folder = tmp_path / "corpus"
    folder.mkdir()
    inner = write_doc(folder, "inner", "2026-01-02", "en", "Inner", "An inner body.")
    (folder / "secret.md").symlink_to(secret)
    (folder / "passwd.md").symlink_to("/etc/passwd")
    (folder / "environ.md").symlink_to("/proc/self/environ")
    (folder / "dir.md").symlink_to(outside, target_is_directory=True)
    (folder / "up.md").symlink_to("../outside/secret.md")
    (folder / "loop.md").symlink_to(folder / "loop.md")
    (folder / "alias.md").symlink_to(inner)  # inside: the same document, loaded once
    caplog.set_level(logging.INFO)
    backend = CorpusBackend.from_folder(folder)
    assert {d.source_id for d in backend.documents()} == {"inner"}
    refused = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert sorted(refused) == sorted(
        f"corpus: skipped {name}: a link that leads out of the corpus folder"
        for name in ("dir.md", "environ.md", "loop.md", "passwd.md", "secret.md", "up.md"))
    linked = tmp_path / "linked-corpus"
    linked.symlink_to(folder, target_is_directory=True)
    assert len(CorpusBackend.from_folder(linked)) == 1


def test_folder_without_markdown_raises(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not markdown", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"no \.md"):
        CorpusBackend.from_folder(tmp_path)


def test_folder_is_not_searched_recursively(tmp_path: Path) -> None:
    write_doc(tmp_path, "top", "2026-01-01", "en", "Top level", "cobalt")
    (tmp_path / "sub").mkdir()
    write_doc(tmp_path / "sub", "nested", "2026-01-01", "en", "Nested", "cobalt")
    assert len(CorpusBackend.from_folder(tmp_path)) == 1


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("no front matter here\n", "no leading '---' block"),
        ("---\nid: a\ntitle: [unclosed\n---\nbody\n", "invalid YAML"),
        ("---\n- just\n- a list\n---\nbody\n", "not a mapping"),
        ("---\nid: a\ntitle: t\n", "not closed"),
    ],
)
def test_broken_front_matter_names_the_file(tmp_path: Path, text: str, reason: str) -> None:
    (tmp_path / "broken-doc.md").write_text(text, encoding="utf-8")
    with pytest.raises(CorpusError, match=r"broken-doc\.md") as info:
        CorpusBackend.from_folder(tmp_path)
    message = str(info.value)
    assert reason in message
    assert "\n" not in message


def test_missing_key_names_the_key(tmp_path: Path) -> None:
    text = front_matter("a", "2026-01-01", "en", "T").replace("published: 2026-01-01\n", "")
    (tmp_path / "nodate.md").write_text(text + "body\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"nodate\.md: missing key 'published'"):
        CorpusBackend.from_folder(tmp_path)


@pytest.mark.parametrize("published", ["2026-13-45", "yesterday", "20260101", "'2026/01/01'"])
def test_bad_date_raises(tmp_path: Path, published: str) -> None:
    write_doc(tmp_path, "baddate", published, "en", "T", "body")
    with pytest.raises(CorpusError, match=r"baddate\.md: unparseable 'published'"):
        CorpusBackend.from_folder(tmp_path)


@pytest.mark.parametrize("published", ["2026-03-04", "'2026-03-04'", "2026-03-04 08:30:00"])
def test_date_forms_are_accepted(tmp_path: Path, published: str) -> None:
    write_doc(tmp_path, "dated", published, "en", "T", "body")
    [doc] = CorpusBackend.from_folder(tmp_path).documents()
    assert doc.published == dt.date(2026, 3, 4)


def test_duplicate_id_raises(tmp_path: Path) -> None:
    write_doc(tmp_path, "same", "2026-01-01", "en", "One", "body")
    text = front_matter("same", "2026-01-02", "en", "Two") + "body\n"
    (tmp_path / "other.md").write_text(text, encoding="utf-8")
    with pytest.raises(CorpusError, match="duplicate id 'same'"):
        CorpusBackend.from_folder(tmp_path)


# --- search --------------------------------------------------------------------------------


async def test_english_query_ranks_the_right_document_first(backend: CorpusBackend) -> None:
    found = await ids(backend, "lithium carbonate price")
    assert found[0] == "en-lithium"
    assert (await ids(backend, "Graphite anode"))[0] == "en-graphite"


def test_plain_unicode61_cannot_find_a_chinese_word() -> None:
    """Why segmentation is needed: without it, a run of Chinese characters is one token."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(body)")
    db.execute("INSERT INTO t VALUES (?)", (DOCS["zh-copperfoil"][3],))
    assert db.execute("SELECT count(*) FROM t WHERE t MATCH '\"铜箔\"'").fetchone() == (0,)
    db.close()


async def test_chinese_two_character_word_is_found(backend: CorpusBackend) -> None:
    found = await ids(backend, "铜箔")
    assert set(found) == {"zh-copperfoil", "zh-copperfoil-old"}
    assert await ids(backend, "热泵") == ["zh-heatpump"]


async def test_chinese_three_character_term_is_found(backend: CorpusBackend) -> None:
    assert set(await ids(backend, "加工费")) == {"zh-copperfoil", "zh-copperfoil-old"}


async def test_chinese_term_missing_from_the_dictionary_ranks_exact_sequence_first(
    backend: CorpusBackend,
) -> None:
    found = await ids(backend, "六氟磷酸锂")
    assert found[0] == "zh-lipf6"


async def test_time_range_is_inclusive_and_applied_before_the_limit(
    backend: CorpusBackend,
) -> None:
    year_2026 = TimeRange(since=dt.date(2026, 1, 1), until=dt.date(2026, 12, 31))
    # The old document ranks first without a range (copper foil three times in its title);
    # with a range and limit 1 the range must be applied in the query, not afterwards.
    assert (await ids(backend, "铜箔", limit=1)) == ["zh-copperfoil-old"]
    assert await ids(backend, "铜箔", time_range=year_2026, limit=1) == ["zh-copperfoil"]
    exact_day = TimeRange(since=dt.date(2026, 10, 13), until=dt.date(2026, 10, 13))
    assert await ids(backend, "铜箔", time_range=exact_day) == ["zh-copperfoil"]


async def test_open_ended_time_ranges(backend: CorpusBackend) -> None:
    before_2025 = TimeRange(until=dt.date(2024, 12, 31))
    assert await ids(backend, "铜箔", time_range=before_2025) == ["zh-copperfoil-old"]
    since_2025 = TimeRange(since=dt.date(2025, 1, 1))
    assert await ids(backend, "铜箔", time_range=since_2025) == ["zh-copperfoil"]


async def test_lang_filter(backend: CorpusBackend) -> None:
    assert set(await ids(backend, "LiPF6")) == {"en-lipf6", "zh-lipf6"}
    assert await ids(backend, "LiPF6", lang="en") == ["en-lipf6"]
    assert await ids(backend, "LiPF6", lang="zh") == ["zh-lipf6"]


async def test_limit_is_respected(backend: CorpusBackend) -> None:
    assert len(await ids(backend, "铜箔 LiPF6 lithium", limit=2)) == 2


@pytest.mark.parametrize("query", ["", "   ", "？！，。…", "the of and", "的 了 和 是", "?? -- **"])
async def test_query_without_meaningful_words_returns_nothing(
    backend: CorpusBackend, query: str
) -> None:
    assert plan_query(query).terms == ()
    assert await ids(backend, query) == []


async def test_quotes_in_a_query_do_not_break_fts(backend: CorpusBackend) -> None:
    assert (await ids(backend, 'lithium "carbonate'))[0] == "en-lithium"


# --- snippets, bodies, paragraphs ---------------------------------------------------------------


async def test_snippet_is_the_relevant_paragraph_without_markdown(backend: CorpusBackend) -> None:
    [hit] = await backend.search(SearchRequest(query="carbonate price", lang="en", limit=1))
    assert hit.snippet == (
        "Battery-grade lithium carbonate averaged 86,200 yuan per tonne, and the carbonate "
        "price rose 12.4% on the year."
    )
    assert hit.title.startswith("China lithium carbonate")
    assert hit.published == dt.date(2026, 10, 31)
    assert (hit.url, hit.source_type, hit.publisher, hit.lang) == (
        "https://example.test/en-lithium",
        "news",
        "Example Wire",
        "en",
    )


async def test_chinese_snippet_is_the_relevant_paragraph(backend: CorpusBackend) -> None:
    hits = await backend.search(
        SearchRequest(query="铜箔 加工费", time_range=TimeRange(since=dt.date(2026, 1, 1)))
    )
    assert [hit.source_id for hit in hits] == ["zh-copperfoil"]
    assert hits[0].snippet.startswith("9月6μm锂电铜箔加工费均价升至1.86万元/吨")
    assert "*" not in hits[0].snippet


async def test_long_paragraph_snippet_is_at_most_400_chars(backend: CorpusBackend) -> None:
    hit = (await backend.search(SearchRequest(query="隔膜企业")))[0]
    assert hit.source_id == "zh-separator"
    assert len(LONG_PARAGRAPH) > 400
    assert 300 < len(hit.snippet) <= 400
    assert "隔膜企业" in hit.snippet


async def test_read_body_and_paragraphs(backend: CorpusBackend) -> None:
    body = await backend.read_body("en-graphite")
    assert body == "Graphitisation fees crept up in July.\n\nAnode makers kept output flat."
    assert "---" not in body
    assert await backend.read_body("no-such-id") is None
    assert backend.paragraphs("en-graphite") == [
        "Graphitisation fees crept up in July.",
        "Anode makers kept output flat.",
    ]
    assert backend.paragraphs("zh-copperfoil")[0] == "**一、行情**"
    assert len(backend.paragraphs("zh-copperfoil")) == 4
    assert backend.paragraphs("no-such-id") == []


# --- documents that appear mid-run -----------------------------------------------------------


async def test_add_folder_makes_new_documents_searchable(
    backend: CorpusBackend, corpus_dir: Path, tmp_path: Path
) -> None:
    assert await ids(backend, "钠离子") == []
    extra = tmp_path / "extra"
    extra.mkdir()
    write_doc(extra, "zh-sodium", "2026-10-20", "zh", "钠离子电池量产提速", "钠离子电池出货增长。")
    assert backend.add_folder(extra) == 1
    assert await ids(backend, "钠离子") == ["zh-sodium"]
    # Re-scanning a folder only picks up files that were not loaded before.
    assert backend.add_folder(corpus_dir) == 0
    write_doc(corpus_dir, "en-cobalt", "2026-10-21", "en", "Cobalt sulphate climbs", "Cobalt up.")
    assert backend.add_folder(corpus_dir) == 1
    assert await ids(backend, "cobalt") == ["en-cobalt"]


def test_add_folder_rejects_a_duplicate_id_and_adds_nothing(
    backend: CorpusBackend, tmp_path: Path
) -> None:
    extra = tmp_path / "dupes"
    extra.mkdir()
    write_doc(extra, "a-new-one", "2026-10-20", "en", "New", "fresh")
    text = front_matter("en-graphite", "2026-10-20", "en", "Again") + "again\n"
    (extra / "z-copy.md").write_text(text, encoding="utf-8")
    with pytest.raises(CorpusError, match=r"z-copy\.md: duplicate id 'en-graphite'"):
        backend.add_folder(extra)
    assert len(backend) == len(DOCS)


def test_the_backend_name_changes_with_the_documents(
        backend: CorpusBackend, tmp_path: Path) -> None:
    before = backend.name
    more = tmp_path / "more"
    more.mkdir()
    write_doc(more, "extra-doc", "2026-01-01", "en", "Extra", "Heat pump sales.")
    backend.add_folder(more)
    assert backend.name != before and backend.name.startswith("corpus:")
