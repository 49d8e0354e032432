"""Typed values from an environment mapping, for the one settings object (which alone reads
the process environment), and the Secret type that never shows itself.

Every numeric setting declares its range where the field is declared, with `bounded`:

    query_variants: int = bounded(3, 1, 10)
    timeout_s: float = bounded(120.0, above=0, hi=86_400)

and `parse_field` reads a field from the environment with its type, its range and, for
floats, finiteness (nan and inf are refused everywhere). A value out of range is a
`SettingsError` naming the variable, never a run that hangs or overflows later.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field, dataclass, field, fields
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from research_core.errors import SettingsError
from research_core.redaction import redact_url

BOUNDS = "bounds"


class Secret(str):
    """A string that never shows itself in repr or logs."""

    def __repr__(self) -> str:
        return "Secret('***')" if self else "Secret('')"


@dataclass(frozen=True)
class Bounds:
    """The values a numeric setting may take: `lo` ≤ value ≤ `hi`; `above` means strictly
    greater (a timeout of 0 is no timeout). None leaves that side open."""

    lo: float | None = None
    hi: float | None = None
    above: float | None = None

    def problem(self, value: float) -> str | None:
        if isinstance(value, float) and not math.isfinite(value):
            return "is not a finite number"
        if self.above is not None and not value > self.above:
            return f"must be greater than {self.above:g}"
        if self.lo is not None and value < self.lo:
            return f"must be at least {self.lo:g}"
        if self.hi is not None and value > self.hi:
            return f"must be at most {self.hi:g}"
        return None


FINITE = Bounds()


def bounded(default: Any, lo: float | None = None, hi: float | None = None, *,
            above: float | None = None) -> Any:
    """A dataclass field with `default` and its allowed range (see `Bounds`)."""
    return field(default=default, metadata={BOUNDS: Bounds(lo, hi, above)})


def bounds_of(f: Field[Any]) -> Bounds | None:
    found = f.metadata.get(BOUNDS)
    return found if isinstance(found, Bounds) else None


def check_value(key: str, value: Any, bounds: Bounds | None) -> Any:
    """`value` when it is finite and within `bounds` (None is always allowed: "unset")."""
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return value
    problem = (bounds or FINITE).problem(value)
    if problem:
        raise SettingsError(f"{key}={value!r} {problem}")
    return value


def check_fields(settings: Any, key_of: Callable[[str], str]) -> None:
    """Every field of a settings dataclass within its declared range (for `__post_init__`,
    so that settings built in code are held to the same ranges as those read from the
    environment); `key_of` names the variable of a field in the error."""
    for f in fields(settings):
        check_value(key_of(f.name), getattr(settings, f.name), bounds_of(f))


def parse(env: Mapping[str, str], key: str, kind: type[Any], default: Any,
          bounds: Bounds | None = None) -> Any:
    """`env[key]` as `kind` (the default when unset or empty), finite and within `bounds`."""
    raw = env.get(key)
    if raw is None or raw == "":
        return default
    try:
        value = kind(raw.strip())
    except ValueError as exc:
        raise SettingsError(f"{key}={raw!r} is not a valid {kind.__name__}") from exc
    return check_value(key, value, bounds)


def field_of(cls: type[Any], name: str) -> Field[Any]:
    return next(f for f in fields(cls) if f.name == name)


def parse_field(env: Mapping[str, str], key: str, cls: type[Any], name: str) -> Any:
    """The dataclass field `name` of `cls` read from `env[key]`: its type from its default
    (int unless the default is a float), its default when unset, its declared range."""
    f = field_of(cls, name)
    default = None if f.default is MISSING else f.default
    kind = float if isinstance(default, float) else int
    return parse(env, key, kind, default, bounds_of(f))


def parse_gpu_layers(env: Mapping[str, str], key: str, cls: type[Any]) -> int:
    """RED_<TIER>_GPU_LAYERS, RED_EMBED_GPU_LAYERS: the `gpu_layers` field of `cls`, a whole
    number of layers (0: none, -1: all) within its declared range."""
    raw = env.get(key, "").strip()
    if raw and not re.fullmatch(r"[+-]?[0-9]+", raw):
        raise SettingsError(f"{key}={raw!r} is not a whole number of layers: use 0 (CPU), a "
                            "layer count, or -1 (every layer on the GPU)")
    layers: int = parse_field(env, key, cls, "gpu_layers")
    return layers


def int_or_none(env: Mapping[str, str], key: str, bounds: Bounds | None = None) -> int | None:
    value: int | None = parse(env, key, int, None, bounds)
    return value


def path_or_none(raw: str | None) -> Path | None:
    return Path(raw).expanduser() if raw else None


def checked_url(key: str, raw: str, schemes: tuple[str, ...] = ("http", "https")) -> str:
    """`raw` when it is a URL of one of `schemes` with a host and a valid port; the error
    shows the URL without its credentials."""
    try:
        parts = urlsplit(raw)
        port = parts.port  # raises ValueError when out of 0-65535 or not a number
    except ValueError as exc:
        raise SettingsError(f"{key}={redact_url(raw)} is not a valid URL ({exc})") from exc
    if parts.scheme.lower() not in schemes:
        raise SettingsError(f"{key}={redact_url(raw)}: the URL must start with "
                            + " or ".join(f"{s}://" for s in schemes))
    if parts.scheme.lower() in ("http", "https") and not parts.hostname:
        raise SettingsError(f"{key}={redact_url(raw)}: the URL has no host")
    if port == 0:
        raise SettingsError(f"{key}={redact_url(raw)}: port 0 cannot be connected to")
    return raw


def database_url(raw: str | None) -> str | None:
    """DATABASE_URL when its host part can be used: a port must be a number from 1 to 65535
    (SQLAlchemy otherwise fails later with a bare ValueError); the rest is the store's to
    judge when it connects."""
    if not raw:
        return None
    netloc = urlsplit(raw).netloc.rsplit("@", 1)[-1]
    host, colon, port = netloc.rpartition(":")
    if not colon or "]" in port or not host:
        return raw
    if not port.isdigit():
        raise SettingsError(f"DATABASE_URL={redact_url(raw)}: port {port!r} is not a number")
    if not 1 <= int(port) <= 65_535:
        raise SettingsError(f"DATABASE_URL={redact_url(raw)}: port {port} is out of range "
                            "(1-65535)")
    return raw


def url_password(url: str) -> str:
    """The password in a URL's user info ("" when none, or when the URL cannot be read)."""
    try:
        return unquote(urlsplit(url).password or "")
    except ValueError:
        return ""


# RED_EMBEDDED_CALLS: which call kinds the embedded default model takes (issue 43): "measured"
# (its profile, research_core/models/profile.yaml), "all", "none" or a comma-separated list.
CALL_KINDS = ("decompose", "plan_query", "score_hits", "summarise", "reflect", "report",
              "followup", "judge_coverage", "check_coverage", "upgrade", "steer",
              "check_claims", "monolithic", "mono_answer")
MEASURED_CALLS = "measured"


def parse_calls(raw: str) -> frozenset[str] | None:
    """The call kinds a `RED_EMBEDDED_CALLS` value names; None for the measured profile."""
    value = raw.strip().lower() or MEASURED_CALLS
    if value == MEASURED_CALLS:
        return None
    if value == "all":
        return frozenset(CALL_KINDS)
    if value == "none":
        return frozenset()
    named = {k.strip() for k in value.split(",") if k.strip()}
    unknown = sorted(named - set(CALL_KINDS))
    if unknown:
        raise SettingsError(f"RED_EMBEDDED_CALLS names unknown call kinds {', '.join(unknown)}; "
                            f"use {MEASURED_CALLS}, all, none or some of {', '.join(CALL_KINDS)}")
    return frozenset(named)
