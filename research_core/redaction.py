"""URLs as they may be shown: in messages, logs and start-up lines.

A URL from the settings can carry a credential in its user info (`redis://:pw@host`,
`https://token@host`) or in its query (`?password=…`, `?key=…`). `redact_url` masks both and
never raises, whatever the text: everything up to the last `@` of the authority is masked
(a password may itself hold `@`, `/`, `?` or `#`), every query value is masked, and the
fragment is dropped. Text that is not a URL at all (no scheme, not even `host:port`) may be a
pasted secret and is not shown.

Settings objects show themselves with `redacted_repr`: their repr (and str) never holds a
secret, whatever field, URL, command line or mapping it sits in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

MASK = "***"
NOT_A_URL = "(not a URL)"
_BARE_HOST = re.compile(r"(\*\*\*@)?[\w.-]+(:\d{1,6})?(/[\w./-]*)?")


def _mask_query(query: str) -> str:
    pairs = (part.split("=", 1)[0] for part in query.split("&") if part)
    return "&".join(f"{name}={MASK}" for name in pairs)


def redact_url(url: str) -> str:
    """`url` without the secrets it may hold (user info and query values)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    if "@" in rest:
        rest = MASK + "@" + rest.rsplit("@", 1)[1]
    rest = rest.split("#", 1)[0]
    location, qmark, query = rest.partition("?")
    shown = location + (qmark + _mask_query(query) if qmark else "")
    shown = "".join(ch if ch.isprintable() else "?" for ch in shown)
    if not sep and shown and not _BARE_HOST.fullmatch(shown):
        return NOT_A_URL
    return f"{scheme}{sep}{shown}" if sep else shown


# The names of values that are secrets wherever they are found: a field, a mapping's key, a
# command-line option (`--api-key=…`, `--token …`), a URL's query parameter.
_SECRET_NAME = re.compile(r"pass(word|wd|phrase)?$|secret|token|(^|[_-])(api_?)?key$|apikey|"
                          r"auth|credential|cookie|signature|private", re.IGNORECASE)
_OPTION = re.compile(r"(-{1,2}[\w.-]+)=(.*)", re.DOTALL)


def secret_name(name: str) -> bool:
    """A name (field, key, option, query parameter) whose value is a secret."""
    return bool(_SECRET_NAME.search(name.strip().lstrip("-")))


def redacted_text(value: str, name: str = "") -> str:
    """`value` as it may be shown: masked when `name` names a secret; a URL (anything with
    `://`) without its user info and query values; else as it is."""
    if value and secret_name(name):
        return MASK
    return redact_url(value) if "://" in value else value


def redacted_argv(argv: tuple[str, ...] | list[str]) -> list[str]:
    """A command line as it may be shown: the value of a secret option masked (`--token=…`,
    and the word after `--token`), URLs without their credentials."""
    shown: list[str] = []
    for number, word in enumerate(argv):
        option = _OPTION.fullmatch(word)
        if option is not None and secret_name(option.group(1)):
            shown.append(f"{option.group(1)}={MASK}")
        elif number and _secret_flag(argv[number - 1]):
            shown.append(MASK)
        else:
            shown.append(redacted_text(word))
    return shown


def url_secrets(url: str) -> list[str]:
    """The secrets a URL holds: the password in its user info (the user name when it stands
    alone, as a token does: `https://TOKEN@host`) and the values of its secret query
    parameters (`?api_key=…`, `?token=…`)."""
    try:
        parts = urlsplit(url)
        password, user = parts.password, parts.username
    except ValueError:
        return []
    found = [unquote(password) if password else unquote(user or "")]
    for pair in parts.query.split("&"):
        name, _, value = pair.partition("=")
        if value and secret_name(unquote(name)):
            found.append(unquote(value))
    return [f for f in found if f]


def argv_secrets(argv: tuple[str, ...] | list[str]) -> list[str]:
    """The secrets of a command line (what `redacted_argv` masks): the values of its secret
    options, and what its URLs hold."""
    found: list[str] = []
    for number, word in enumerate(argv):
        option = _OPTION.fullmatch(word)
        if option is not None and secret_name(option.group(1)):
            found.append(option.group(2))
        elif number and _secret_flag(argv[number - 1]):
            found.append(word)
        elif "://" in word:
            found += url_secrets(word.split("=", 1)[-1] if option else word)
    return [f for f in found if f]


def credential_parts(value: str) -> list[str]:
    """A credential and the token inside it (`Bearer abc…`, `Basic …`): each must be masked,
    since the token may turn up alone."""
    words = value.split()
    return [value, words[-1]] if len(words) > 1 else [value]


def mapping_secrets(mapping: Mapping[str, Any]) -> list[str]:
    """The values of a mapping's secret keys (fixed tool arguments such as `api_key`)."""
    return [str(v) for k, v in mapping.items() if secret_name(str(k)) and isinstance(v, str)
            and v]


def _secret_flag(word: str) -> bool:
    """`--token`, `-p`-like: an option with no value of its own, whose name is a secret's."""
    return word.startswith("-") and "=" not in word and secret_name(word)


def _shown(value: Any, name: str = "") -> str:
    """The repr of a settings value with its secrets masked (see `redacted_repr`)."""
    if isinstance(value, str):
        if type(value).__repr__ is not str.__repr__:
            return repr(value)  # a type that masks itself (Secret)
        return repr(redacted_text(value, name))
    if is_dataclass(value) and not isinstance(value, type):
        return redacted_repr(value)
    if isinstance(value, Mapping):
        items = (f"{k!r}: {MASK!r}" if isinstance(k, str) and secret_name(k) and v
                 else f"{k!r}: {_shown(v, str(k))}" for k, v in value.items())
        return "{" + ", ".join(items) + "}"
    if isinstance(value, tuple | list) and all(isinstance(v, str) for v in value) \
            and any(isinstance(v, str) and type(v) is str for v in value):
        words = redacted_argv(list(value))
        if isinstance(value, list):
            return repr(words)
        return repr(tuple(words))
    if isinstance(value, tuple | list | set | frozenset):
        inner = [_shown(v, name) for v in value]
        if isinstance(value, list):
            return "[" + ", ".join(inner) + "]"
        if isinstance(value, tuple):
            return "(" + ", ".join(inner) + ("," if len(inner) == 1 else "") + ")"
        return f"{type(value).__name__}({{{', '.join(sorted(inner))}}})" if inner \
            else f"{type(value).__name__}()"
    return repr(value)


def redacted_repr(settings: Any) -> str:
    """The repr of a settings dataclass, as the generated one, but never a secret: a field
    whose name names a secret is masked, a URL loses its user info and query values, a
    command line the value of a secret option, a mapping the values of its secret keys
    (and a Secret shows itself as `Secret('***')`), at any depth."""
    shown = (f"{f.name}={_shown(getattr(settings, f.name), f.name)}"
             for f in fields(settings) if f.repr)
    return f"{type(settings).__qualname__}({', '.join(shown)})"
