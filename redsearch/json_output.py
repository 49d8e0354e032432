"""The `--json` file of `redsearch research`, `sample` and `eval`: checked before the run (so a
typo costs seconds, not a whole run) and written after it, each failure one RunError line."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from research_core.errors import RunError


def _refused(path: str, why: str) -> RunError:
    return RunError(f"cannot write --json file {path}: {why}")


def check_writable(path: str) -> None:
    """Opens `path` for appending (creating it, and removing it again, when it is new), which
    is the only check that holds for every user and file system; nothing is overwritten."""
    target = Path(path)
    if not target.parent.is_dir():
        raise _refused(path, "no such folder")
    if target.is_dir():
        raise _refused(path, "it is a folder")
    existed = target.exists()
    try:
        with target.open("a", encoding="utf-8"):
            pass
    except (OSError, ValueError) as exc:
        raise _refused(path, _reason(exc)) from exc
    if not existed:
        target.unlink(missing_ok=True)


def write_json(path: str, data: Any) -> None:
    try:
        Path(path).write_text(json.dumps(data, indent=2, ensure_ascii=False), "utf-8")
    except (OSError, ValueError) as exc:
        raise _refused(path, _reason(exc)) from exc


def _reason(exc: Exception) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or os.strerror(exc.errno or 0) or type(exc).__name__
    return type(exc).__name__
