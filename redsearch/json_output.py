"""The `--json` file of `redsearch research`, `sample` and `eval` (and the `--markdown` file of
`research` and `sample`): checked before the run (so a typo costs seconds, not a whole run) and
written after it, each failure one RunError line."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from research_core.errors import RunError


def _refused(path: str, why: str, option: str = "--json") -> RunError:
    return RunError(f"cannot write {option} file {path}: {why}")


def check_writable(path: str, option: str = "--json") -> None:
    """Opens `path` for appending (creating it, and removing it again, when it is new), which
    is the only check that holds for every user and file system; nothing is overwritten.
    `option` names the file in the error (`--json`, `--markdown`)."""
    target = Path(path)
    if not target.parent.is_dir():
        raise _refused(path, "no such folder", option)
    if target.is_dir():
        raise _refused(path, "it is a folder", option)
    existed = target.exists()
    try:
        with target.open("a", encoding="utf-8"):
            pass
    except (OSError, ValueError) as exc:
        raise _refused(path, _reason(exc), option) from exc
    if not existed:
        target.unlink(missing_ok=True)


def write_json(path: str, data: Any) -> None:
    write_text(path, json.dumps(data, indent=2, ensure_ascii=False))


def write_text(path: str, text: str, option: str = "--json") -> None:
    try:
        Path(path).write_text(text, "utf-8")
    except (OSError, ValueError) as exc:
        raise _refused(path, _reason(exc), option) from exc


def _reason(exc: Exception) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or os.strerror(exc.errno or 0) or type(exc).__name__
    return type(exc).__name__
