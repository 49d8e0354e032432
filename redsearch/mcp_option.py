"""`redsearch up --mcp SPEC` (and `make run MCP=…`): an MCP server from the command line.

SPEC is `[NAME=]COMMAND ARGS…` (a server started as a process, spoken to over stdio) or
`[NAME=]URL` (streamable HTTP). Without NAME the server is named after its module, script or
program (`python -m wiki_mcp` → `wiki_mcp`), or `mcp` for a URL. Each option adds a server to
RED_MCP_SERVERS (those already there stay), with its tools chosen as for any server (the tool
named "search", or the only one); RED_SEARCH_BACKENDS, when set, gets `mcp` added.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from research_core.errors import SettingsError
from research_core.settings.mcp import KEY, NAME, parse_servers


def with_mcp(environ: Mapping[str, str], specs: Sequence[str]) -> dict[str, str]:
    """`environ` with the servers of `specs` added (checked like RED_MCP_SERVERS)."""
    env = dict(environ)
    if not specs:
        return env
    current = json.loads(env[KEY]) if env.get(KEY, "").strip() else []
    if not isinstance(current, list):
        parse_servers(env[KEY])  # says what is wrong with it
    taken = {str(s.get("name")) for s in current if isinstance(s, dict)}
    for spec in specs:
        server = from_option(spec, taken)
        taken.add(server["name"])
        current.append(server)
    env[KEY] = json.dumps(current)
    parse_servers(env[KEY])
    order = [p.strip() for p in env.get("RED_SEARCH_BACKENDS", "").split(",") if p.strip()]
    if order and "mcp" not in order:
        env["RED_SEARCH_BACKENDS"] = ",".join([*order, "mcp"])
    return env


def from_option(spec: str, taken: set[str]) -> dict[str, Any]:
    head, sep, rest = spec.partition("=")
    named = bool(sep) and NAME.fullmatch(head) is not None
    body = (rest if named else spec).strip()
    if not body:
        raise SettingsError(f"--mcp {spec!r}: give a command or a URL")
    if re.match(r"https?://", body):
        server: dict[str, Any] = {"url": body}
    else:
        try:
            server = {"command": shlex.split(body)}
        except ValueError as exc:
            raise SettingsError(f"--mcp {spec!r}: {exc}") from exc
    base = head if named else default_name(server)
    name, number = base, 1
    while name in taken:
        number += 1
        name = f"{base}{number}"
    return {"name": name, **server}


INTERPRETERS = ("python", "python3", "node", "npx", "uvx", "uv", "deno", "bun", "java")


def default_name(server: dict[str, Any]) -> str:
    """The module after `-m`, else the script an interpreter runs, else the program."""
    if "url" in server:
        return "mcp"
    words = [str(w) for w in server["command"]]
    if "-m" in words[:-1]:
        target = words[words.index("-m") + 1]
    elif words[0].rsplit("/", 1)[-1].split(".")[0].rstrip("0123456789") in INTERPRETERS:
        target = next((w for w in words[1:] if not w.startswith("-")), words[0])
    else:
        target = words[0]
    program = re.sub(r"\.(py|js|mjs|ts)$", "", target.rsplit("/", 1)[-1])
    cleaned = re.sub(r"[^a-z0-9_-]+", "-", program.rsplit(".", 1)[-1].lower()).strip("-_")
    return cleaned[:36] if cleaned and NAME.fullmatch(cleaned[:36]) else "mcp"
