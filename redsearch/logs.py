"""The log lines of the processes (`bot`, `worker`, `up`; `cli` for the terminal commands).

RED_LOG_FORMAT=text (the default) writes readable lines, `time LEVEL logger: message`;
RED_LOG_FORMAT=json one JSON object per line for a log pipeline: time (UTC, ISO 8601), level,
role (the process), logger, message, and run_id, team and channel where the line is about one
(`research_core.log_context`), plus the traceback as `exc`. In both, every secret the settings
hold (tokens, keys, passwords in URLs) is masked wherever it turns up; the code logs no page
text (pages are counted and named by source id, never quoted).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from research_core import log_context
from research_core.redaction import MASK

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
ROLES = ("bot", "worker", "up", "cli")
# one line per request (the MCP client: per message): warnings only
QUIET = ("httpx", "httpx2", "openai", "aiohttp.access", "mcp")


def _masked(text: str, secrets: Sequence[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, MASK)
    return text


class ContextFilter(logging.Filter):
    """Copies the log context where the line is written (run id, team, channel) onto it."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.red_context = log_context.current()
        return True


class TextFormatter(logging.Formatter):
    """The readable line, secrets masked."""

    def __init__(self, secrets: Sequence[str] = ()) -> None:
        super().__init__(TEXT_FORMAT)
        self.secrets = tuple(secrets)

    def format(self, record: logging.LogRecord) -> str:
        return _masked(super().format(record), self.secrets)


class JsonFormatter(logging.Formatter):
    """One JSON object per line, secrets masked."""

    def __init__(self, role: str, secrets: Sequence[str] = ()) -> None:
        super().__init__()
        self.role = role
        self.secrets = tuple(secrets)

    def format(self, record: logging.LogRecord) -> str:
        when = dt.datetime.fromtimestamp(record.created, dt.UTC)
        entry: dict[str, Any] = {
            "time": when.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname.lower(), "role": self.role, "logger": record.name,
            "message": _masked(record.getMessage(), self.secrets),
        }
        entry.update(getattr(record, "red_context", None) or {})
        if record.exc_info:
            entry["exc"] = _masked(self.formatException(record.exc_info), self.secrets)
        return json.dumps(entry, ensure_ascii=False)


def log_handler(role: str, fmt: str, secrets: Sequence[str] = (),
                stream: TextIO | None = None) -> logging.Handler:
    """A handler writing `fmt` ("text" or "json") lines of the process `role` to `stream`
    (stderr by default)."""
    if role not in ROLES:
        raise ValueError(f"unknown process role {role!r}")
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter(role, secrets) if fmt == "json"
                         else TextFormatter(secrets))
    handler.addFilter(ContextFilter())
    return handler


def configure_logging(role: str, fmt: str = "text", secrets: Sequence[str] = (),
                      level: int = logging.INFO) -> None:
    """The process's log lines (as `logging.basicConfig`: nothing changes when the root
    logger has handlers already, as under pytest)."""
    logging.basicConfig(level=level, handlers=[log_handler(role, fmt, secrets)])
    for noisy in QUIET:
        logging.getLogger(noisy).setLevel(logging.WARNING)
