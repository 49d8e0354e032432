"""Typed values from an environment mapping, for the one settings object (which alone reads
the process environment), and the Secret type that never shows itself."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from research_core.errors import SettingsError


class Secret(str):
    """A string that never shows itself in repr or logs."""

    def __repr__(self) -> str:
        return "Secret('***')" if self else "Secret('')"


def parse(env: Mapping[str, str], key: str, kind: type[Any], default: Any) -> Any:
    raw = env.get(key)
    if raw is None or raw == "":
        return default
    try:
        return kind(raw)
    except ValueError as exc:
        raise SettingsError(f"{key}={raw!r} is not a valid {kind.__name__}") from exc


def int_or_none(env: Mapping[str, str], key: str) -> int | None:
    value: int | None = parse(env, key, int, None)
    return value


def path_or_none(raw: str | None) -> Path | None:
    return Path(raw).expanduser() if raw else None
