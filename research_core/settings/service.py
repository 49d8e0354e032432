"""Settings of the services around the engine: the Slack surface, the ARQ workers and web
search. Part of the one settings object (`research_core.settings.Settings`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from research_core.errors import SettingsError
from research_core.redaction import redact_url, redacted_repr
from research_core.settings.values import Secret, bounded, check_fields, checked_url, parse_field

HOUR_S = 3600
DAY_S = 86_400
# The least of a page that can be worth reading: the head of an HTML page alone often takes
# a few KiB, so a smaller cap would cut every page before its first paragraph.
MIN_PAGE_BYTES = 4 * 1024
SENTINEL_SCHEME = "redis+sentinel"
REDIS_SCHEMES = ("redis", "rediss", "unix", SENTINEL_SCHEME)


OAUTH_SCOPES = ("app_mentions:read,chat:write,channels:history,groups:history,im:history,"
                "assistant:write,commands,files:write,files:read,canvases:write,"
                "users:read")  # manifest.yml's


@dataclass(frozen=True)
class SlackSettings:
    """The Slack surface: SLACK_BOT_TOKEN, SLACK_SIGNING_SECRET, SLACK_API_URL (the Web API
    base URL; tests and the playground point it at a local fake), SLACK_APP_TOKEN (set: Socket
    Mode instead of HTTP events), RED_BOT_HOST and RED_BOT_PORT (where the bot listens),
    RED_BOT_METRICS_PORT (set: GET /metrics and /healthz on a listener of their own, at
    RED_BOT_METRICS_HOST, default the bot's host, and /metrics no longer on the bot's port:
    the way to run in production, docs/operations.md), the progress coalescing interval and
    how often the loading status is set again while a job works (Slack clears it after two
    minutes).
    SLACK_CLIENT_ID and SLACK_CLIENT_SECRET (both set): many workspaces, installed through
    Slack's OAuth flow (SLACK_SCOPES: the bot scopes asked for), each with its own token kept
    in the database; without them one workspace and SLACK_BOT_TOKEN (docs/workspaces.md)."""

    bot_token: Secret = field(default_factory=lambda: Secret(""))
    signing_secret: Secret = field(default_factory=lambda: Secret(""))
    api_url: str = "https://slack.com/api/"
    app_token: Secret = field(default_factory=lambda: Secret(""))
    bot_port: int = bounded(3000, 0, 65_535)
    bot_host: str = "0.0.0.0"
    metrics_port: int | None = bounded(None, 0, 65_535)
    metrics_host: str = ""  # "": the bot's host
    progress_interval_s: float = bounded(1.0, 0, HOUR_S)
    status_refresh_s: float = bounded(60.0, 1, HOUR_S)
    client_id: str = ""
    client_secret: Secret = field(default_factory=lambda: Secret(""))
    scopes: str = OAUTH_SCOPES

    def __repr__(self) -> str:  # never a secret (research_core/redaction.py)
        return redacted_repr(self)

    @property
    def oauth(self) -> bool:
        """Many workspaces: installed with the OAuth flow, a token per team."""
        return bool(self.client_id and self.client_secret)

    @property
    def configured(self) -> bool:
        """Real Slack: a bot token (or the OAuth client), and the signing secret (HTTP) or an
        app token (Socket Mode)."""
        return bool((self.bot_token or self.oauth) and (self.signing_secret or self.app_token))


@dataclass(frozen=True)
class WorkerSettings:
    """ARQ workers: REDIS_URL (or a `redis+sentinel://` URL), RED_WORKER_JOBS (concurrent
    runs per worker), the heartbeat that proves a run alive (RED_WORKER_HEARTBEAT_S) and how
    long a silent run waits before another worker resumes it from its checkpoint
    (RED_WORKER_LEASE_S). A job whose worker died RED_WORKER_MAX_CRASHES times is not resumed
    again: its thread is told which step failed. `redsearch up` runs RED_UP_WORKERS
    supervised worker processes. RED_WORKER_METRICS_PORT (unset: off) serves the worker's
    Prometheus metrics at /metrics on RED_WORKER_METRICS_HOST. Watched threads: every
    RED_WORKER_WATCH_TICK_S a worker queues the due watch cycles, and RED_WORKER_WATCH_JOBS
    slots beyond RED_WORKER_JOBS are kept for them, so that a cycle starts on time however
    many runs are in flight (docs/watch.md)."""

    redis_url: str = "redis://127.0.0.1:6379/0"
    max_jobs: int = bounded(2, 1, 1000)
    heartbeat_s: float = bounded(5.0, above=0, hi=HOUR_S)
    lease_s: float = bounded(30.0, above=0, hi=DAY_S)
    reconcile_every_s: float = bounded(10.0, above=0, hi=HOUR_S)
    job_timeout_s: int = bounded(3 * 3600, 1, 30 * DAY_S)
    max_crashes: int = bounded(3, 1, 100)
    watch_tick_s: float = bounded(30.0, above=0, hi=HOUR_S)
    watch_jobs: int = bounded(1, 1, 100)
    up_workers: int = bounded(1, 1, 16)
    metrics_port: int | None = bounded(None, 0, 65_535)
    metrics_host: str = "0.0.0.0"

    def __repr__(self) -> str:  # never a secret (research_core/redaction.py)
        return redacted_repr(self)

    def __post_init__(self) -> None:
        if self.lease_s < 2 * self.heartbeat_s:
            raise SettingsError("RED_WORKER_LEASE_S must be at least twice "
                                "RED_WORKER_HEARTBEAT_S")
        if self.max_jobs < 1:
            raise SettingsError("RED_WORKER_JOBS must be at least 1")

    @property
    def sweep_every_s(self) -> float:
        """How often a worker compares the SQL record of unfinished jobs with Redis
        (`workers/sweep.py`): once a lease. A job Redis lost (a failover's write loss) is
        queued again once it has been seen without traces for a lease, so within two leases
        (60 s with the defaults), at the cost of one query of the unfinished jobs per worker
        per lease."""
        return self.lease_s


WEB_BACKENDS = ("searxng", "brave", "tavily", "corpus", "mcp")


@dataclass(frozen=True)
class WebSettings:
    """Search backends and the page reader. RED_SEARCH_BACKENDS is the order in which web
    backends are tried (searxng, brave, tavily); "corpus" in the list adds the local corpus to
    every search, "mcp" the MCP servers of RED_MCP_SERVERS (its default when they are set).
    Keys: BRAVE_API_KEY, TAVILY_API_KEY (never logged). Rates are requests per second per
    backend, shared by all workers through Redis when a worker passes its client."""

    backends: tuple[str, ...] = ("corpus",)
    searxng_url: str = ""
    brave_url: str = "https://api.search.brave.com/res/v1/web/search"
    brave_api_key: Secret = field(default_factory=lambda: Secret(""))
    tavily_url: str = "https://api.tavily.com/search"
    tavily_api_key: Secret = field(default_factory=lambda: Secret(""))
    search_timeout_s: float = bounded(15.0, above=0, hi=HOUR_S)
    search_retries: int = bounded(2, 0, 10)
    max_retry_wait_s: float = bounded(30.0, 0, HOUR_S)
    searxng_rate_per_s: float = bounded(5.0, above=0, hi=1000)
    brave_rate_per_s: float = bounded(1.0, above=0, hi=1000)
    tavily_rate_per_s: float = bounded(2.0, above=0, hi=1000)
    page_timeout_s: float = bounded(15.0, above=0, hi=HOUR_S)
    page_max_bytes: int = bounded(2_000_000, MIN_PAGE_BYTES, 200_000_000)

    def __repr__(self) -> str:  # never a secret (research_core/redaction.py)
        return redacted_repr(self)

    def __post_init__(self) -> None:
        unknown = [b for b in self.backends if b not in WEB_BACKENDS]
        if unknown or not self.backends:
            raise SettingsError(f"RED_SEARCH_BACKENDS: unknown or empty {unknown}; use a "
                                f"comma-separated order of {', '.join(WEB_BACKENDS)}")
        needs = {"searxng": self.searxng_url, "brave": self.brave_api_key,
                 "tavily": self.tavily_api_key}
        names = {"searxng": "RED_SEARXNG_URL", "brave": "BRAVE_API_KEY",
                 "tavily": "TAVILY_API_KEY"}
        for backend, value in needs.items():
            if backend in self.backends and not value:
                raise SettingsError(f"RED_SEARCH_BACKENDS names {backend}: set {names[backend]}")
        check_fields(self, _web_key)  # settings built in code are held to the same ranges

    def rate_per_s(self, backend: str) -> float:
        rates = {"searxng": self.searxng_rate_per_s, "brave": self.brave_rate_per_s,
                 "tavily": self.tavily_rate_per_s}
        return rates[backend]


def _web_key(name: str) -> str:
    """The variable of a WebSettings field (`web_from_env`)."""
    return "RED_SEARCH_MAX_RETRY_WAIT_S" if name == "max_retry_wait_s" else f"RED_{name.upper()}"


def _url(env: Mapping[str, str], key: str, default: str,
         schemes: tuple[str, ...] = ("http", "https")) -> str:
    """`env[key]` (or `default` when unset) as a checked URL; an empty default stays empty."""
    raw = env.get(key) or default
    return checked_url(key, raw, schemes) if raw else raw


@dataclass(frozen=True)
class SentinelTarget:
    """A `redis+sentinel://[:password@]host:port[,host:port…]/service[/db]` URL, parsed."""

    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int = 0
    password: str | None = None

    def __repr__(self) -> str:  # never a secret (research_core/redaction.py)
        return redacted_repr(self)


def sentinel_target(url: str) -> SentinelTarget:
    """The parts of a Sentinel URL; SettingsError (without the password) when malformed."""
    parts = urlsplit(url)
    shape = (f"REDIS_URL={redact_url(url)}: a Sentinel URL is "
             f"{SENTINEL_SCHEME}://host:port[,host:port…]/service[/db]")
    sentinels: list[tuple[str, int]] = []
    for item in filter(None, parts.netloc.rsplit("@", 1)[-1].split(",")):
        host, _, port = item.rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65_536:
            raise SettingsError(shape)
        sentinels.append((host, int(port)))
    path = [p for p in parts.path.split("/") if p]
    if not sentinels or not 1 <= len(path) <= 2 or (len(path) == 2 and not path[1].isdigit()):
        raise SettingsError(shape)
    return SentinelTarget(tuple(sentinels), path[0], int(path[1]) if len(path) == 2 else 0,
                          unquote(parts.password) if parts.password else None)


def _redis_url(env: Mapping[str, str], default: str) -> str:
    raw = env.get("REDIS_URL") or default
    if raw.lower().startswith(SENTINEL_SCHEME + "://"):
        sentinel_target(raw)
        return raw
    return _url(env, "REDIS_URL", default, REDIS_SCHEMES)


def _host(env: Mapping[str, str], key: str, default: str) -> str:
    """An address to listen on: a host name or an IP address, one word."""
    raw = env.get(key, "").strip()
    if raw and (any(c.isspace() or c in "/@?#" for c in raw) or len(raw) > 253):
        raise SettingsError(f"{key}={raw!r}: give an address to listen on, e.g. 127.0.0.1 or "
                            "0.0.0.0")
    return raw or default


def slack_from_env(env: Mapping[str, str]) -> SlackSettings:
    d = SlackSettings()
    return SlackSettings(
        bot_token=Secret(env.get("SLACK_BOT_TOKEN", "")),
        signing_secret=Secret(env.get("SLACK_SIGNING_SECRET", "")),
        api_url=_url(env, "SLACK_API_URL", d.api_url),
        app_token=Secret(env.get("SLACK_APP_TOKEN", "")),
        bot_port=parse_field(env, "RED_BOT_PORT", SlackSettings, "bot_port"),
        bot_host=_host(env, "RED_BOT_HOST", d.bot_host),
        metrics_port=parse_field(env, "RED_BOT_METRICS_PORT", SlackSettings, "metrics_port"),
        metrics_host=_host(env, "RED_BOT_METRICS_HOST", ""),
        progress_interval_s=parse_field(env, "RED_SLACK_PROGRESS_INTERVAL_S", SlackSettings,
                                        "progress_interval_s"),
        status_refresh_s=parse_field(env, "RED_SLACK_STATUS_REFRESH_S", SlackSettings,
                                     "status_refresh_s"),
        client_id=env.get("SLACK_CLIENT_ID", ""),
        client_secret=Secret(env.get("SLACK_CLIENT_SECRET", "")),
        scopes=env.get("SLACK_SCOPES", "") or d.scopes,
    )


def worker_from_env(env: Mapping[str, str]) -> WorkerSettings:
    d = WorkerSettings()
    return WorkerSettings(
        redis_url=_redis_url(env, d.redis_url),
        max_jobs=parse_field(env, "RED_WORKER_JOBS", WorkerSettings, "max_jobs"),
        heartbeat_s=parse_field(env, "RED_WORKER_HEARTBEAT_S", WorkerSettings, "heartbeat_s"),
        lease_s=parse_field(env, "RED_WORKER_LEASE_S", WorkerSettings, "lease_s"),
        reconcile_every_s=parse_field(env, "RED_WORKER_RECONCILE_S", WorkerSettings,
                                      "reconcile_every_s"),
        job_timeout_s=parse_field(env, "RED_WORKER_JOB_TIMEOUT_S", WorkerSettings,
                                  "job_timeout_s"),
        max_crashes=parse_field(env, "RED_WORKER_MAX_CRASHES", WorkerSettings, "max_crashes"),
        watch_tick_s=parse_field(env, "RED_WORKER_WATCH_TICK_S", WorkerSettings,
                                 "watch_tick_s"),
        watch_jobs=parse_field(env, "RED_WORKER_WATCH_JOBS", WorkerSettings, "watch_jobs"),
        up_workers=parse_field(env, "RED_UP_WORKERS", WorkerSettings, "up_workers"),
        metrics_port=parse_field(env, "RED_WORKER_METRICS_PORT", WorkerSettings,
                                 "metrics_port"),
        metrics_host=_host(env, "RED_WORKER_METRICS_HOST", d.metrics_host),
    )


def web_from_env(env: Mapping[str, str],
                 default: tuple[str, ...] = WebSettings.backends) -> WebSettings:
    """`default`: the backends when RED_SEARCH_BACKENDS is unset (the corpus; the MCP
    servers when RED_MCP_SERVERS names some)."""
    d = WebSettings()
    raw = env.get("RED_SEARCH_BACKENDS", "")
    order = tuple(p.strip().lower() for p in raw.split(",") if p.strip()) or default
    web = WebSettings
    return WebSettings(
        backends=order,
        searxng_url=_url(env, "RED_SEARXNG_URL", ""),
        brave_url=_url(env, "RED_BRAVE_URL", d.brave_url),
        brave_api_key=Secret(env.get("BRAVE_API_KEY", "")),
        tavily_url=_url(env, "RED_TAVILY_URL", d.tavily_url),
        tavily_api_key=Secret(env.get("TAVILY_API_KEY", "")),
        search_timeout_s=parse_field(env, "RED_SEARCH_TIMEOUT_S", web, "search_timeout_s"),
        search_retries=parse_field(env, "RED_SEARCH_RETRIES", web, "search_retries"),
        max_retry_wait_s=parse_field(env, "RED_SEARCH_MAX_RETRY_WAIT_S", web,
                                     "max_retry_wait_s"),
        searxng_rate_per_s=parse_field(env, "RED_SEARXNG_RATE_PER_S", web,
                                       "searxng_rate_per_s"),
        brave_rate_per_s=parse_field(env, "RED_BRAVE_RATE_PER_S", web, "brave_rate_per_s"),
        tavily_rate_per_s=parse_field(env, "RED_TAVILY_RATE_PER_S", web, "tavily_rate_per_s"),
        page_timeout_s=parse_field(env, "RED_PAGE_TIMEOUT_S", web, "page_timeout_s"),
        page_max_bytes=parse_field(env, "RED_PAGE_MAX_BYTES", web, "page_max_bytes"),
    )
