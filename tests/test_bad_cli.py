"""Bad input to every `redsearch` command: arguments, settings, corpus and suite files.

Each case must end with exit 2 and exactly one `redsearch: error:` line (or argparse's usage
error), no traceback in any output or log, no planted secret anywhere, and within a bound.
Most cases call the CLI's `main` in this process (the same entry point the console script
calls, with the environment set here); bytes that are not UTF-8 can only arrive through a real
command line, so those run as subprocesses.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from contract.redis_server import free_port
from redsearch.cli import main
from redsearch.processes import run_bot
from redsearch.up import _redis
from research_core.settings import Settings
from tests.bad_input import Ran, assert_clean, clean_env, one_error_line, run_cli, within
from tests.conftest import write_doc

QUESTION = "How did heat pump prices move in 2026?"
BOUND_S = 10.0
# A fresh `redsearch` process imports the whole service before it can refuse anything: 3-4 s
# of CPU, 10-15 s of wall time on a loaded 2-core machine. A hang still shows (far longer).
PROCESS_BOUND_S = 30.0
Cli = Callable[..., Ran]

GOOD_DOC = ("news", "en", "2026-10-20", "Heat pump prices fall",
            "Heat pump equipment prices fell 9.5% to 7,150 euros in October 2026.")
TASKS = """- id: t1
  question: "How did heat pump sales move?"
  as_of: {as_of}
  requirements:
    - id: R1
      checks:
        - mentions_any: ["heat pump"]
"""


def _front_matter(meta: str) -> str:
    return f"---\n{meta}\n---\nBody.\n"


ALIAS_BOMB = "\n".join(
    ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)])
DEEP = "x: " + "[" * 50_000 + "]" * 50_000
FRONT_MATTER = {
    "alias-bomb": _front_matter("id: bomb\ntitle: t\nurl: u\npublished: 2026-01-01\n"
                                "source_type: news\npublisher: p\nlang: en\n" + ALIAS_BOMB
                                + "\nextra: *a8"),
    "title-is-a-bomb": _front_matter(ALIAS_BOMB + "\nid: bomb\ntitle: *a8\nurl: u\n"
                                     "published: 2026-01-01\nsource_type: news\n"
                                     "publisher: p\nlang: en"),
    "50000-deep": _front_matter("id: deep\n" + DEEP),
    "self-alias": _front_matter("id: &x [*x]\ntitle: t"),
    "impossible-date": _front_matter("id: d\ntitle: t\nurl: u\npublished: 2026-02-30\n"
                                     "source_type: news\npublisher: p\nlang: en"),
}
TASKS_FILES = {
    "impossible-date": TASKS.format(as_of="2026-02-30"),
    "alias-bomb": "- " + ALIAS_BOMB.replace("\n", "\n  ") + "\n  " + TASKS.format(
        as_of="2026-10-31")[2:].replace("- id: R1", "- id: R1\n      why: *a8"),
    "50000-deep": "- " + "[" * 50_000 + "]" * 50_000,
    "not-a-list": "tasks: {}",
    "binary": "\x00\x01\x02",
}


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture) -> Cli:
    """`main(args)` in this process with `clean_env` plus `env`, and what it logged."""

    def run(*args: str, env: dict[str, str] | None = None) -> Ran:
        wanted = clean_env(tmp_path / "data", env)
        for key in list(os.environ):
            if key not in wanted:
                monkeypatch.delenv(key)
        for key, value in wanted.items():
            monkeypatch.setenv(key, value)
        started = time.monotonic()
        try:
            code = main(list(args))
        except SystemExit as exit_:  # argparse's usage errors
            code = int(exit_.code or 0)
        out = capsys.readouterr()
        return Ran(code, out.out, out.err, time.monotonic() - started, caplog.text)

    return run


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    write_doc(folder, "good-prices", GOOD_DOC)
    return folder


def failed(ran: Ran, says: str | Sequence[str], bound_s: float = BOUND_S) -> str:
    line = one_error_line(ran.stderr, ran.stdout, ran.log)
    assert ran.code == 2, ran
    for part in [says] if isinstance(says, str) else says:
        assert part in line, line
    assert ran.seconds < bound_s, f"took {ran.seconds:.1f}s"
    return line


@pytest.mark.parametrize("question", ["\u200b\u200b", " \u200b\ufeff\u2060\u00a0 ", "\x1b\x07"],
                         ids=["zero-width", "invisible-mix", "control"])
def test_an_invisible_question_is_empty(cli: Cli, docs: Path, question: str) -> None:
    failed(cli("research", question, "--corpus", str(docs)), "the question is empty")


@pytest.mark.parametrize("args", [
    ["research", "\udcff\udcfe heat pumps?"], ["replay", "r\udcff"], ["resume", "\udce9x"],
    ["research", QUESTION, "--requester", "\udcff"],
], ids=["question", "replay-id", "resume-id", "requester"])
def test_text_that_is_not_utf8_is_refused_before_anything_runs(cli: Cli, docs: Path,
                                                               args: list[str]) -> None:
    failed(cli(*args, "--corpus", str(docs)) if args[0] == "research" else cli(*args),
           "not valid UTF-8")


@pytest.mark.parametrize("args", [
    [b"research", b"\xff\xfe heat pumps?"], [b"replay", b"\xffrun"], [b"resume", b"r\xc3("],
], ids=["question", "replay-id", "resume-id"])
def test_invalid_utf8_bytes_on_the_real_command_line(tmp_path: Path, args: list[bytes]) -> None:
    ran = run_cli(args, clean_env(tmp_path / "data"))
    failed(ran, "not valid UTF-8", PROCESS_BOUND_S)


@pytest.mark.parametrize(("database_url", "says"), [
    ("not a url at all hunter2", "not a database URL"),
    ("postgresql://app:hunter2@127.0.0.1:5432/red", "driver is not installed"),
    ("postgresql+asyncmy://app:hunter2@127.0.0.1/red", "unknown database dialect or driver"),
    ("postgresql+asyncpg://app:hunter2@127.0.0.1:99999/red", "port 99999 is out of range"),
    ("nosuchdialect://app:hunter2@host/red", "unknown database dialect or driver"),
    ("sqlite:///{tmp}/sync.db", "not an asyncio driver"),
    ("sqlite+aiosqlite:////dev/null/x.db", "/dev/null is not a folder"),
], ids=["garbage", "sync-driver", "missing-driver", "bad-port", "unknown-dialect",
        "sync-sqlite", "under-a-file"])
def test_a_bad_database_url_is_one_line_without_its_password(cli: Cli, tmp_path: Path,
                                                             database_url: str,
                                                             says: str) -> None:
    url = database_url.format(tmp=tmp_path)
    failed(cli("replay", "r0123456789", env={"DATABASE_URL": url}), says)


def test_a_data_dir_that_is_not_a_folder(cli: Cli, docs: Path) -> None:
    for command in (["replay", "r0123456789"], ["research", QUESTION, "--corpus", str(docs)]):
        failed(cli(*command, env={"RED_DATA_DIR": "/dev/null"}),
               "RED_DATA_DIR /dev/null is not a folder")


HINT = "; set RED_DATA_DIR to a folder the database can be written in"


@pytest.mark.parametrize(("env", "says"), [
    ({"DATABASE_URL": "postgresql+asyncpg://app:hunter2@127.0.0.1:notaport/red"},
     "DATABASE_URL=postgresql+asyncpg://***@127.0.0.1:notaport/red: port 'notaport' is not "
     "a number"),
    ({"DATABASE_URL": "postgresql+asyncpg://app:hunter2@127.0.0.1:0/red"},
     "DATABASE_URL=postgresql+asyncpg://***@127.0.0.1:0/red: port 0 is out of range "
     "(1-65535)"),
    ({"DATABASE_URL": "sqlite+aiosqlite:///{tmp}/a-file/x.db"},
     "DATABASE_URL=sqlite+aiosqlite:///{tmp}/a-file/x.db: {tmp}/a-file is not a folder"),
    ({"RED_DATA_DIR": "/dev/null"}, "RED_DATA_DIR /dev/null is not a folder" + HINT),
    ({"RED_DATA_DIR": "/proc/self"}, "RED_DATA_DIR /proc/self: the database cannot be created "
                                     "or opened there (unable to open database file)" + HINT),
    ({"RED_DATA_DIR": "{tmp}/a-file"}, "RED_DATA_DIR {tmp}/a-file is not a folder" + HINT),
    ({"RED_DATA_DIR": "{tmp}/a-file/below"},
     "RED_DATA_DIR {tmp}/a-file/below cannot be created ({tmp}/a-file is a file)" + HINT),
], ids=["port-notaport", "port-zero", "sqlite-under-a-file", "data-dir-dev-null",
        "data-dir-proc", "data-dir-file", "data-dir-under-a-file"])
def test_a_database_problem_says_what_is_wrong_and_what_to_do(
        cli: Cli, tmp_path: Path, docs: Path, env: dict[str, str], says: str) -> None:
    """Never a bare exception name ("…: ValueError", "…: OperationalError",
    "FileExistsError: File exists")."""
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    env = {k: v.format(tmp=tmp_path) for k, v in env.items()}
    for command in (["replay", "r0123456789"], ["research", QUESTION, "--corpus", str(docs)]):
        line = failed(cli(*command, env=env), says.format(tmp=tmp_path))
        assert line == "redsearch: error: " + says.format(tmp=tmp_path)
        assert not re.search(r": [A-Z]\w+(Error|Exception)$", line), line
        assert not re.search(r"\b(File exists|ValueError|OperationalError)\b", line), line


@pytest.mark.parametrize(("corpus", "says"), [
    ("/etc/passwd", "--corpus /etc/passwd is a file, not a folder"),
    ("/dev/null", "--corpus /dev/null is not a folder"),
])
def test_a_corpus_that_is_not_a_folder_is_named_as_such(cli: Cli, corpus: str,
                                                        says: str) -> None:
    failed(cli("research", QUESTION, "--corpus", corpus), says)


@pytest.mark.parametrize("env", [
    {"RED_ENGINE_SEARCH_CONCURRENCY": "0"}, {"RED_ENGINE_LOOKBACK_DAYS": "100000000"},
    {"RED_ENGINE_EVIDENCE_THRESHOLD": "nan"}, {"RED_PAGE_TIMEOUT_S": "nan"},
    {"RED_PLANNER_BASE_URL": "http://127.0.0.1:99999/v1"},
    {"RED_PLANNER_BASE_URL": "http://sk-bad-input-key@127.0.0.1:port/v1"},
], ids=lambda e: next(iter(e)))
def test_bad_settings_stop_a_run_before_it_starts(cli: Cli, docs: Path,
                                                  env: dict[str, str]) -> None:
    key = next(iter(env))
    failed(cli("research", QUESTION, "--corpus", str(docs), env=env), key)


@pytest.mark.parametrize("command", ["worker", "bot"])
@pytest.mark.parametrize("redis_url", [
    "localhost:6379", "redis://127.0.0.1:70000/0", "redis://127.0.0.1:-1/0",
])
def test_a_malformed_redis_url(cli: Cli, command: str, redis_url: str) -> None:
    env = {"REDIS_URL": redis_url, "SLACK_BOT_TOKEN": "xoxb-bad-input-token",
           "SLACK_SIGNING_SECRET": "s3cr3t-signing"}
    failed(cli(command, env=env), "REDIS_URL")


@pytest.mark.parametrize("redis_url", [
    "redis://127.0.0.1:{port}/0?password=hunter2",
    "redis://:p@ss/w#rd@127.0.0.1:{port}/0",
    "redis://default:hunter2@127.0.0.1:{port}/0",
], ids=["query-password", "password-with-at", "user-and-password"])
def test_no_redis_answers_and_its_password_is_not_printed(cli: Cli, redis_url: str) -> None:
    env = {"REDIS_URL": redis_url.format(port=free_port()),
           "SLACK_BOT_TOKEN": "xoxb-bad-input-token"}
    failed(cli("worker", env=env), "no Redis answers at REDIS_URL=")


@pytest.mark.parametrize("args", [["bot", "--port", "70000"], ["up", "--port", "-1"],
                                  ["up", "--port", "http"], ["bot", "--port", "99999999999"]])
def test_a_port_out_of_range_is_a_usage_error(cli: Cli, args: list[str]) -> None:
    ran = cli(*args)
    assert ran.code == 2
    assert "not a port number (1-65535)" in ran.stderr
    assert "Traceback" not in ran.stderr + ran.stdout


@pytest.mark.parametrize("case", FRONT_MATTER, ids=list(FRONT_MATTER))
def test_hostile_front_matter_names_the_file(cli: Cli, docs: Path, case: str) -> None:
    docs.joinpath("zz-hostile.md").write_text(FRONT_MATTER[case], "utf-8")
    failed(cli("research", QUESTION, "--corpus", str(docs)), ["zz-hostile.md", "front matter"])


def test_a_50_mb_corpus_document_is_refused_without_reading_it(cli: Cli, docs: Path) -> None:
    huge = docs / "zz-huge.md"
    with huge.open("wb") as sparse:  # 50 MB on paper, nothing written
        sparse.truncate(50 * 1024 * 1024)
    failed(cli("research", QUESTION, "--corpus", str(docs)), ["zz-huge.md", "52.4 MB"])


def _suite(root: Path, tasks: str) -> Path:
    (root / "corpus").mkdir(parents=True)
    write_doc(root / "corpus", "good-prices", GOOD_DOC)
    (root / "tasks.yaml").write_text(tasks, "utf-8")
    return root


@pytest.mark.parametrize("case", TASKS_FILES, ids=list(TASKS_FILES))
def test_a_hostile_tasks_file(cli: Cli, tmp_path: Path, case: str) -> None:
    suite = _suite(tmp_path / "suite", TASKS_FILES[case])
    failed(cli("eval", "--suite", str(suite)), "")


def test_a_huge_tasks_file_is_refused_unread(cli: Cli, tmp_path: Path) -> None:
    suite = _suite(tmp_path / "suite", "")
    with (suite / "tasks.yaml").open("wb") as sparse:
        sparse.truncate(200 * 1024 * 1024)
    failed(cli("eval", "--suite", str(suite)), "larger than 1,000,000 bytes")


@pytest.mark.parametrize("where", ["folder", "proc", "under-a-file"])
@pytest.mark.parametrize("command", ["research", "eval"])
def test_an_unwritable_json_path_fails_before_the_run(cli: Cli, tmp_path: Path, docs: Path,
                                                      where: str, command: str) -> None:
    target = {"folder": str(tmp_path), "proc": "/proc/self/redsearch.json",
              "under-a-file": str(docs / "good-prices.md" / "out.json")}[where]
    args = (["research", QUESTION, "--corpus", str(docs)] if command == "research"
            else ["eval", "--suite", str(_suite(tmp_path / "suite", TASKS.format(
                as_of="2026-10-31")))])
    with within(BOUND_S, "refusing the --json path"):
        line = failed(cli(*args, "--json", target), "cannot write --json file")
    assert "unavailable" not in line  # refused before any model was asked


def test_a_writable_json_path_is_left_as_it_was(cli: Cli, tmp_path: Path, docs: Path) -> None:
    """The check creates nothing: a run that then fails leaves no empty file behind."""
    target = tmp_path / "out.json"
    ran = cli("research", QUESTION, "--corpus", str(docs), "--json", str(target))
    assert ran.code == 2 and "unavailable" in ran.stderr  # the closed model port
    assert not target.exists()


async def test_start_up_lines_show_urls_without_their_secrets(
        redis_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`redsearch bot` prints its Web API URL and `redsearch up` its Redis URL: redacted."""
    redis_with_secret = redis_url + ("&" if "?" in redis_url else "?") + "client_name=hunter2"
    settings = Settings.from_env({
        "SLACK_BOT_TOKEN": "xoxb-bad-input-token", "SLACK_SIGNING_SECRET": "s3cr3t-signing",
        "SLACK_API_URL": "https://xoxb-bad-input-token@slack.example/api/?token=tok-in-query",
        "REDIS_URL": redis_with_secret})
    bot = asyncio.create_task(run_bot(0, settings))
    seen = ""
    while "bot on port" not in seen and not bot.done():
        await asyncio.sleep(0.05)
        seen += capsys.readouterr().err
    bot.cancel()
    with pytest.raises(asyncio.CancelledError):
        await bot
    lines: list[str] = []
    found, embedded = await _redis(redis_with_secret, lines.append)
    assert embedded is None and found == redis_with_secret
    shown = seen + capsys.readouterr().err + "\n".join(lines)
    assert "(Web API https://***@slack.example/api/?token=***)" in shown, shown
    assert "client_name=***" in shown, shown
    assert_clean(shown)
