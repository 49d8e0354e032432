"""`redsearch doctor`: is every dependency of a request there? One line per dependency, in the
order a request needs them: the settings; Redis (its version; with Sentinel, the primary the
sentinels name); the database (reachable, schema current); each model tier and the embeddings
(a local model: whether llama.cpp put its layers on a GPU or the CPU, a failure when
`RED_<TIER>_GPU_LAYERS` asks for a GPU and none is used);
each search backend; the Slack bot token (auth.test and the scopes manifest.yml asks for), the
app token when Socket Mode is used; the signing secret.

Each check runs within `limit_s` (a dependency that hangs is a failing line, not a hung
command); exit status 0 when every check passes, 1 otherwise. No line shows a secret: URLs
lose their credentials, and every secret the settings hold is masked wherever it turns up.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from redsearch import doctor_checks as checks
from research_core.errors import RunError
from research_core.models.tier_factory import describe_tier, embedded_calls
from research_core.redaction import MASK, redact_url
from research_core.search.mcp.backend import McpBackend
from research_core.settings import TIERS, Settings

DEFAULT_LIMIT_S = 20.0
Say = Callable[[str], None]


@dataclass(frozen=True)
class Result:
    name: str
    ok: bool
    detail: str

    def line(self) -> str:
        return f"{'ok' if self.ok else 'FAIL':<5}{self.name:<18}{self.detail}"


@dataclass(frozen=True)
class Check:
    name: str
    run: Callable[[], Awaitable[str]]
    subject: str = ""  # what it talks to, for a line that has nothing else to say (a timeout)


def plan(settings: Settings, limit_s: float) -> list[Check]:
    """The checks, in the order a request needs what they check."""
    slack = f"the Slack Web API at {redact_url(settings.slack.api_url)}"
    found = [Check("redis", lambda: checks.redis_check(settings.worker.redis_url, limit_s),
                   f"REDIS_URL={redact_url(settings.worker.redis_url)}"),
             Check("database", lambda: checks.database_check(settings),
                   redact_url(settings.db_url))]
    calls = embedded_calls(settings)
    found += [Check(f"model {name}", _bind(checks.tier_check, name, settings, limit_s),
                    describe_tier(name, settings.tiers[name], calls).split(": ", 1)[1])
              for name in TIERS]
    found.append(Check("embeddings", lambda: checks.embeddings_check(settings, limit_s)))
    found += [Check(f"search {name}", _bind(checks.search_check, name, settings, limit_s),
                    name) for name in settings.web.backends if name != "mcp"]
    found += [Check(f"search mcp {server.name}", _bind_mcp(McpBackend(server, settings.mcp)),
                    server.name) for server in settings.mcp.servers
              if "mcp" in settings.web.backends]
    found.append(Check("slack token", lambda: checks.slack_token_check(settings), slack))
    if settings.slack.app_token:
        found.append(Check("slack app token", lambda: checks.app_token_check(settings), slack))
    found.append(Check("signing secret", lambda: checks.signing_secret_check(settings)))
    return found


def _bind_mcp(backend: McpBackend) -> Callable[[], Awaitable[str]]:
    return lambda: checks.mcp_check(backend)


def _bind(check: Callable[[str, Settings, float], Awaitable[str]], name: str,
          settings: Settings, limit_s: float) -> Callable[[], Awaitable[str]]:
    return lambda: check(name, settings, limit_s)


async def run_check(check: Check, limit_s: float, secrets: list[str]) -> Result:
    """One check within `limit_s`; what it raised is its failing line."""
    started = time.monotonic()
    try:
        async with asyncio.timeout(limit_s):
            detail = await check.run()
        ok = True
    except TimeoutError:
        said = f"no answer within {limit_s:g} s"
        ok, detail = False, f"{check.subject}: {said}" if check.subject else said
    except checks.Failed as exc:
        ok, detail = False, str(exc)
    except RunError as exc:  # a message written for the user already
        ok, detail = False, str(exc)
    except Exception as exc:  # any other way a dependency fails: its type and words
        ok, detail = False, f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
    if ok and time.monotonic() - started >= 1:
        detail += f" ({time.monotonic() - started:.1f} s)"
    return Result(check.name, ok, _masked(" ".join(detail.split()), secrets))


def _masked(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, MASK)
    return text


async def doctor(environ: Mapping[str, str], limit_s: float = DEFAULT_LIMIT_S,
                 say: Say = print) -> int:
    """Every check, one line each as it ends; 0 when all pass, 1 otherwise."""
    say(f"redsearch doctor: what a request needs, in order (each check at most {limit_s:g} s)")
    try:
        settings = Settings.from_env(environ)
    except RunError as exc:
        say(Result("settings", False, str(exc)).line())
        say("1 check failed: settings (the other checks need valid settings)")
        return 1
    secrets = settings.secret_values()
    results = [Result("settings", True, _settings_line(settings))]
    say(results[0].line())
    for check in plan(settings, limit_s):
        results.append(await run_check(check, limit_s, secrets))
        say(results[-1].line())
    failed = [r.name for r in results if not r.ok]
    if failed:
        say(f"{len(failed)} of {len(results)} checks failed: {', '.join(failed)}")
        return 1
    say(f"all {len(results)} checks passed")
    return 0


def _settings_line(settings: Settings) -> str:
    tiers = ", ".join(f"{name} {settings.tiers[name].kind}" for name in TIERS)
    slack = "many workspaces" if settings.slack.oauth else "one workspace" \
        if settings.slack.bot_token else "no Slack credentials"
    return (f"valid (tiers: {tiers}; search: {', '.join(settings.web.backends)}; "
            f"store: {settings.db_url.split(':', 1)[0]}; {slack})")
