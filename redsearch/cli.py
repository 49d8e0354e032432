"""`redsearch`: research from the terminal. Progress goes to stderr, the report to stdout.

A run failure (bad question, missing corpus, unreachable model) is one line and exit 2,
never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from redsearch.doctor import DEFAULT_LIMIT_S, doctor
from redsearch.harness.evaluate import add_arguments as add_eval_arguments
from redsearch.harness.evaluate import evaluate
from redsearch.harness.model_check import add_arguments as add_check_arguments
from redsearch.harness.model_check import check as check_models
from redsearch.mcp_option import with_mcp
from redsearch.processes import Listen, run_bot, run_worker_command
from redsearch.research import (
    STRATEGIES,
    ResearchRequest,
    ResumeInstead,
    run_replay,
    run_research,
    run_resume,
)
from redsearch.sources import run_sources
from redsearch.terminal import report_error, report_interrupt
from redsearch.usage import run_usage
from research_core.errors import RunError
from research_core.question import has_surrogates

SAMPLE_QUESTION = (
    "How did European residential heat pump sales and prices move between November 2025 "
    "and October 2026, and why?"
)
SAMPLE_AS_OF = dt.date(2026, 10, 31)


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from exc


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 1 <= port <= 65_535:
        raise argparse.ArgumentTypeError(f"not a port number (1-65535): {text!r}")
    return port


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="redsearch", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    research = commands.add_parser("research", help="research a question from the terminal")
    research.add_argument("question", help="the question (in quotes)")
    research.add_argument("--corpus", help="folder of markdown documents (default: the sample)")
    research.add_argument("--as-of", type=_date, help="the run's 'as of' date (default: today)")
    research.add_argument("--json", dest="json_path", help="also write the result as JSON here")
    research.add_argument("--quiet", action="store_true", help="no progress lines")
    sample = commands.add_parser("sample", help="research the sample question on the sample corpus")
    sample.add_argument("--json", dest="json_path", help="also write the result as JSON here")
    for sub in (research, sample):
        sub.add_argument("--markdown", dest="markdown_path", metavar="FILE",
                         help="also write the report, its parts and sources as Markdown here "
                              "(the document Slack's Save as canvas and Export keep)")
    for sub in (research, sample):
        sub.add_argument("--strategy", choices=STRATEGIES, default="hierarchical",
                         help="hierarchical goal tree (default) or the naive monolithic agent")
    for sub in (research, sample):
        sub.add_argument("--depth", choices=("auto", "standard", "deep"), default="auto",
                         help="research mode (default auto: may upgrade to deep)")
        sub.add_argument("--requester", help="who asks (checked against RED_DEEP_ALLOWED)")
    resume = commands.add_parser("resume", help="finish an interrupted run")
    resume.add_argument("run_id", help="the run's id")
    evaluation = commands.add_parser("eval", help="paired standard/deep evaluation of a suite")
    add_eval_arguments(evaluation)
    replay = commands.add_parser("replay", help="print the search replay of a stored run")
    replay.add_argument("run_id", help="the run's id (printed in the report's heading)")
    commands.add_parser("learn-report", help="two rounds of related questions: does the "
                        "replay's learning raise the citation rate? (docs/learning.md)")
    bot = commands.add_parser("bot", help="serve the Slack bot (SLACK_BOT_TOKEN, "
                              "SLACK_SIGNING_SECRET, REDIS_URL)")
    bot.add_argument("--port", type=_port, help="HTTP port (default RED_BOT_PORT or 3000)")
    _listen_arguments(bot, "the bot's address (default RED_BOT_HOST or 0.0.0.0)")
    commands.add_parser("worker", help="run an ARQ worker that researches queued requests")
    usage = commands.add_parser("usage", help="spending per user and channel, this day and "
                                "month, against the policy's caps (admins)")
    usage.add_argument("--user", help="only this Slack user id")
    usage.add_argument("--channel", help="only this Slack channel id")
    usage.add_argument("--all", action="store_true", dest="every_period",
                       help="every period kept, not only this day and month")
    up = commands.add_parser("up", help="Redis, worker, bot and (without Slack credentials) "
                             "the browser playground, in one command")
    up.add_argument("--port", type=_port, default=8080, help="playground port (default 8080)")
    _listen_arguments(up, "the playground's address (default 127.0.0.1), or with Slack "
                      "configured the bot's (default RED_BOT_HOST or 0.0.0.0)")
    up.add_argument("--mcp", action="append", default=[], metavar="[NAME=]COMMAND|URL",
                    help="an MCP server to search (repeatable): a command started over stdio, "
                         "or a streamable HTTP URL; added to RED_MCP_SERVERS (docs/search.md)")
    commands.add_parser("sources", help="the configured search sources and whether each "
                                        "answers now (exit 1 when one does not)")
    doctor = commands.add_parser("doctor", help="check every dependency a request needs, one "
                                 "line each (exit 1 when one fails)")
    doctor.add_argument("--timeout", type=_seconds, default=DEFAULT_LIMIT_S, dest="limit_s",
                        help=f"the longest one check may take (default {DEFAULT_LIMIT_S:g} s)")
    models = commands.add_parser("models", help="the local models' measured capability "
                                 "profile (docs/models.md)")
    model_commands = models.add_subparsers(dest="models_command", required=True)
    add_check_arguments(model_commands.add_parser(
        "check", help="measure a GGUF model per call kind against the code path on a suite"))
    return parser


def _listen_arguments(parser: argparse.ArgumentParser, host_help: str) -> None:
    parser.add_argument("--host", type=_host, help=host_help)
    parser.add_argument("--metrics-port", type=_port, help="serve GET /metrics and /healthz on "
                        "this port of their own, not on the bot's (default RED_BOT_METRICS_PORT;"
                        " the way to run in production: docs/operations.md)")
    parser.add_argument("--metrics-host", type=_host, help="the metrics port's address "
                        "(default RED_BOT_METRICS_HOST, else the bot's)")


def _listen(args: argparse.Namespace) -> Listen:
    return Listen(args.host, args.metrics_port, args.metrics_host)


def _host(text: str) -> str:
    if not text or len(text) > 253 or any(c.isspace() or c in "/@?#" for c in text):
        raise argparse.ArgumentTypeError(f"not an address to listen on: {text!r}")
    return text


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 600:
        raise argparse.ArgumentTypeError(f"not a number of seconds (0-600): {text!r}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _guarded(args)
    except ResumeInstead as choice:
        args = build_parser().parse_args(["resume", choice.run_id])
        return _guarded(args)


def _guarded(args: argparse.Namespace) -> int:
    """Runs the command; a run failure is one line and exit 2, never a traceback."""
    try:
        _check_text(args)
        if args.command == "replay":
            return asyncio.run(run_replay(args.run_id))
        if args.command == "learn-report":
            from redsearch.harness.learn_report import learn_report
            return asyncio.run(learn_report())
        if args.command == "resume":
            return asyncio.run(run_resume(args.run_id))
        if args.command == "eval":
            return asyncio.run(evaluate(args))
        if args.command == "models":
            return asyncio.run(check_models(args))
        if args.command == "bot":
            return asyncio.run(run_bot(args.port, listen=_listen(args)))
        if args.command == "worker":
            return asyncio.run(run_worker_command())
        if args.command == "usage":
            return asyncio.run(run_usage(args.user, args.channel, args.every_period))
        if args.command == "up":  # imported here: a worker's process holds no bot
            from redsearch.up import run_up
            return asyncio.run(run_up(args.port, with_mcp(os.environ, args.mcp),
                                      _listen(args)))
        if args.command == "sources":
            return asyncio.run(run_sources())
        if args.command == "doctor":
            return asyncio.run(doctor(os.environ, args.limit_s))
        return asyncio.run(run_research(_request(args)))
    except RunError as exc:
        return report_error("redsearch", exc)
    except KeyboardInterrupt:
        return report_interrupt("redsearch")


def _check_text(args: argparse.Namespace) -> None:
    """Arguments are text: bytes that are not UTF-8 (lone surrogates once Python has read
    them) could be neither stored nor printed, so they are refused before anything runs."""
    for name, value in vars(args).items():
        if isinstance(value, str) and has_surrogates(value):
            raise RunError(f"the {name.replace('_', ' ')} argument is not valid UTF-8 text")


def _request(args: argparse.Namespace) -> ResearchRequest:
    if args.command == "sample":
        return ResearchRequest(question=SAMPLE_QUESTION, corpus=None, as_of=SAMPLE_AS_OF,
                               json_path=args.json_path, strategy=args.strategy,
                               depth=args.depth, requester=args.requester,
                               markdown_path=args.markdown_path)
    return ResearchRequest(question=args.question, corpus=_corpus(args.corpus),
                           as_of=args.as_of, json_path=args.json_path, quiet=args.quiet,
                           strategy=args.strategy, depth=args.depth,
                           requester=args.requester, markdown_path=args.markdown_path)


def _corpus(path: str | None) -> str | None:
    """--corpus names a folder; a file (or a device) there is refused as such before anything
    runs (a missing folder is the corpus loader's "not found")."""
    if path is not None and Path(path).is_file():
        raise RunError(f"--corpus {path} is a file, not a folder")
    if path is not None and Path(path).exists() and not Path(path).is_dir():
        raise RunError(f"--corpus {path} is not a folder")
    return path


if __name__ == "__main__":
    sys.exit(main())
