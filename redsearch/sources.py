"""`redsearch sources`: the configured search sources and whether each answers now.

The corpus is loaded; each web service's endpoint is asked once (any HTTP answer counts:
nothing is searched, so no quota is spent); each MCP server is started and its tools listed
(the tool a run would call, and how it would read a document); the workspace's own Slack is
said as the policy file sets it (it can only be tried within a run: it needs the asking
person's action token). Every check is bounded in time; the exit status is 1 when a
configured source does not answer.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import aiohttp

from research_core.errors import CorpusError
from research_core.search.corpus import CorpusBackend, sample_corpus_dir
from research_core.search.mcp.backend import McpBackend
from research_core.search.mcp.connection import McpFailed
from research_core.search.web.factory import mcp_backends, uses_corpus, web_names
from research_core.settings import Settings

PER_RUN = "per run"


@dataclass(frozen=True)
class SourceRow:
    name: str
    kind: str
    answers: str  # "yes", "no" or "per run"
    detail: str

    def line(self) -> str:
        return f"{self.name:<22} {self.kind:<7} {self.answers:<8} {self.detail}"


async def run_sources(settings: Settings | None = None) -> int:
    settings = settings or Settings.from_env()
    print(f"{'source':<22} {'kind':<7} {'answers':<8} detail")
    rows = await check_sources(settings)
    for row in rows:
        print(row.line())
    return 1 if any(row.answers == "no" for row in rows) else 0


async def check_sources(settings: Settings) -> list[SourceRow]:
    checks = [_web(settings, name) for name in web_names(settings.web)]
    checks += [_mcp(backend, settings) for backend in mcp_backends(settings)
               if isinstance(backend, McpBackend)]
    rows = [await _corpus(settings)] if uses_corpus(settings) else []
    return rows + list(await asyncio.gather(*checks)) + [_slack(settings)]


async def _corpus(settings: Settings) -> SourceRow:
    folder = settings.corpus_dir or sample_corpus_dir()
    try:
        corpus = await asyncio.to_thread(CorpusBackend.from_folder, folder)
    except CorpusError as exc:
        return SourceRow("corpus", "corpus", "no", str(exc))
    return SourceRow("corpus", "corpus", "yes", f"{len(corpus)} documents in {folder}")


async def _web(settings: Settings, name: str) -> SourceRow:
    web = settings.web
    url = {"searxng": web.searxng_url, "brave": web.brave_url, "tavily": web.tavily_url}[name]
    started = time.monotonic()
    timeout = aiohttp.ClientTimeout(total=web.search_timeout_s)
    try:
        async with aiohttp.ClientSession(timeout=timeout, trust_env=False) as session, \
                session.get(url, allow_redirects=False) as response:
            status = response.status
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        return SourceRow(name, "web", "no", f"{_host(url)}: {type(exc).__name__} {exc}"[:200])
    took = time.monotonic() - started
    return SourceRow(name, "web", "yes", f"{_host(url)}: HTTP {status} in {took:.1f}s "
                     "(reached; nothing searched)")


async def _mcp(backend: McpBackend, settings: Settings) -> SourceRow:
    server = backend.server
    what = " ".join(server.command) if server.command else _host(server.url)
    try:
        said = await backend.check()
    except McpFailed as exc:
        return SourceRow(backend.name, "mcp", "no", f"{server.transport} {what}: {exc}")
    finally:
        await backend.aclose()
    return SourceRow(backend.name, "mcp", "yes", f"{server.transport} {what}: {said}")


def _slack(settings: Settings) -> SourceRow:
    rule = settings.policy.slack_search
    if not rule.teams:
        return SourceRow("slack", "slack", "off", "off (turn it on per workspace in the "
                         "policy file: slack_search)")
    teams = "every workspace" if "*" in rule.teams else ", ".join(rule.teams)
    return SourceRow("slack", "slack", PER_RUN, f"on in {teams} ({', '.join(rule.channel_types)});"
                     " tried within a run, with the asking person's action token")


def _host(url: str) -> str:
    """The URL without its query (an API key may be in it) and credentials."""
    scheme, _, rest = url.partition("://")
    host = rest.split("/", 1)[0].rsplit("@", 1)[-1]
    path = rest[len(rest.split("/", 1)[0]):].split("?", 1)[0]
    return f"{scheme}://{host}{path}"
