"""MCP servers as search sources: RED_MCP_SERVERS, a JSON list of servers, and the caps every
call to them is held to. Part of the one settings object (`research_core.settings.Settings`).

    RED_MCP_SERVERS='[{"name": "wiki", "command": ["python", "-m", "wiki_mcp"], "tool": "search",
                       "read_tool": "read"},
                      {"name": "tickets", "url": "https://mcp.example.com/mcp"}]'

Each server is `{"name", "command": [argv…]}` (started as a process, spoken to over stdio) or
`{"name", "url"}` (streamable HTTP), with optionally `tool` (the tool called with a query;
default: the server's tool named "search", else its only tool), `read_tool` (the tool that
returns a document's text by its URI; default: one named "read" or "fetch", else the resource
is read with resources/read), `argument` (the tool argument the query goes in;
default: the tool's one required string argument), `arguments` (fixed values for the tool's
other arguments), `source_type` (how credible its documents are, as in a corpus),
`document_break` (the line with which the tool separates the documents of one text answer;
default: a rule line such as `---`, or a document's header starting again: see
`research_core/search/mcp/results.py`) and `env` (variables for a started server) or `headers`
(sent to an HTTP server). Values of `env` and `headers` are secrets: never logged, and a
settings object's repr shows none (nor a URL's password, nor a secret in `command` or
`arguments`). A malformed list stops start-up with one line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from research_core.errors import SettingsError
from research_core.redaction import redacted_repr
from research_core.settings.values import Secret, bounded, check_fields, checked_url, parse_field

KEY = "RED_MCP_SERVERS"
MAX_SERVERS = 32
NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")
DEFAULT_SOURCE_TYPE = "internal"
_STRINGS = ("name", "url", "tool", "read_tool", "argument", "source_type", "document_break")
_KEYS = frozenset((*_STRINGS, "command", "arguments", "env", "headers"))


@dataclass(frozen=True)
class McpServer:
    """One configured MCP server (see the module's docstring for the keys)."""

    name: str
    command: tuple[str, ...] = ()
    url: str = ""
    tool: str = ""
    read_tool: str = ""
    argument: str = ""
    arguments: Mapping[str, Any] = field(default_factory=dict)
    source_type: str = DEFAULT_SOURCE_TYPE
    document_break: str = ""
    env: Mapping[str, Secret] = field(default_factory=dict)
    headers: Mapping[str, Secret] = field(default_factory=dict)

    def __repr__(self) -> str:  # never a secret (research_core/redaction.py)
        return redacted_repr(self)

    @property
    def transport(self) -> str:
        return "stdio" if self.command else "http"

    @property
    def where(self) -> str:
        """What the server is, for log lines: its command's program or its URL's host."""
        if self.command:
            return self.command[0].rsplit("/", 1)[-1]
        return self.url.split("://", 1)[-1].split("/", 1)[0].rsplit("@", 1)[-1]


@dataclass(frozen=True)
class McpSettings:
    """The servers, and what each call may take: `timeout_s` a tool call or a read,
    `start_timeout_s` starting a server and its handshake, `max_bytes` the text of one answer
    (a larger answer costs its hits; a document read is cut at it)."""

    servers: tuple[McpServer, ...] = ()
    timeout_s: float = bounded(15.0, above=0, hi=3600)
    start_timeout_s: float = bounded(30.0, above=0, hi=3600)
    max_bytes: int = bounded(1_000_000, 4096, 100_000_000)

    def __repr__(self) -> str:  # never a secret (research_core/redaction.py)
        return redacted_repr(self)

    def __post_init__(self) -> None:
        check_fields(self, lambda name: "RED_MCP_" + name.upper())


def mcp_from_env(env: Mapping[str, str]) -> McpSettings:
    return McpSettings(
        servers=parse_servers(env.get(KEY, "")),
        timeout_s=parse_field(env, "RED_MCP_TIMEOUT_S", McpSettings, "timeout_s"),
        start_timeout_s=parse_field(env, "RED_MCP_START_TIMEOUT_S", McpSettings,
                                    "start_timeout_s"),
        max_bytes=parse_field(env, "RED_MCP_MAX_BYTES", McpSettings, "max_bytes"),
    )


def parse_servers(raw: str) -> tuple[McpServer, ...]:
    """The servers of RED_MCP_SERVERS (none when empty); SettingsError, one line, else."""
    if not raw.strip():
        return ()
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise SettingsError(f"{KEY} is not valid JSON ({exc.msg} at line {exc.lineno} "
                            f"column {exc.colno})") from exc
    if not isinstance(data, list) or len(data) > MAX_SERVERS:
        raise SettingsError(f"{KEY} must be a JSON list of at most {MAX_SERVERS} servers, "
                            'e.g. [{"name": "wiki", "command": ["wiki-mcp"]}]')
    servers = tuple(_server(item, number) for number, item in enumerate(data, 1))
    names = [s.name for s in servers]
    if len(set(names)) != len(names):
        raise SettingsError(f"{KEY}: two servers are named "
                            f"{next(n for n in names if names.count(n) > 1)!r}")
    return servers


def _server(item: object, number: int) -> McpServer:
    where = f"{KEY} item {number}"
    if not isinstance(item, dict):
        raise SettingsError(f"{where} must be an object with a name and a command or a url")
    unknown = sorted(set(item) - _KEYS)
    if unknown:
        raise SettingsError(f"{where}: unknown key {unknown[0]!r} (keys: "
                            f"{', '.join(sorted(_KEYS))})")
    for key in _STRINGS:
        if key in item and not isinstance(item[key], str):
            raise SettingsError(f"{where}: {key!r} must be a string")
    name = str(item.get("name", ""))
    if not NAME.fullmatch(name):
        raise SettingsError(f"{where}: 'name' must be 1-40 lowercase letters, digits, - or _ "
                            f"(got {name!r})")
    return McpServer(name=name, command=_command(item, f"{where} ({name})"),
                     url=_http_url(item, f"{where} ({name})"),
                     tool=item.get("tool", ""), read_tool=item.get("read_tool", ""),
                     argument=item.get("argument", ""),
                     arguments=_mapping(item, "arguments", where),
                     source_type=item.get("source_type") or DEFAULT_SOURCE_TYPE,
                     document_break=_document_break(item, f"{where} ({name})"),
                     env=_secrets(item, "env", where), headers=_secrets(item, "headers", where))


def _command(item: dict[str, Any], where: str) -> tuple[str, ...]:
    command = item.get("command")
    if ("url" in item) == (command is not None):
        raise SettingsError(f"{where}: give either 'command' (a list: the program and its "
                            "arguments) or 'url' (streamable HTTP), not both or neither")
    if command is None:
        return ()
    if not isinstance(command, list) or not command or not all(
            isinstance(part, str) and part and "\x00" not in part for part in command):
        raise SettingsError(f"{where}: 'command' must be a non-empty list of strings, "
                            'e.g. ["python", "-m", "wiki_mcp"]')
    return tuple(command)


def _http_url(item: dict[str, Any], where: str) -> str:
    return checked_url(f"{where} url", item["url"]) if "url" in item else ""


def _mapping(item: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = item.get(key, {})
    if not isinstance(value, dict):
        raise SettingsError(f"{where}: {key!r} must be an object")
    return dict(value)


def _secrets(item: dict[str, Any], key: str, where: str) -> dict[str, Secret]:
    value = _mapping(item, key, where)
    if not all(isinstance(v, str) for v in value.values()):
        raise SettingsError(f"{where}: the values of {key!r} must be strings")
    return {str(k): Secret(v) for k, v in value.items()}


def _document_break(item: dict[str, Any], where: str) -> str:
    value = str(item.get("document_break", ""))
    if "\n" in value or "\r" in value or len(value) > 80:
        raise SettingsError(f"{where}: 'document_break' must be one line (at most 80 characters) "
                            "that stands alone between two documents, e.g. \"---\"")
    return value
