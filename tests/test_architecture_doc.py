"""docs/architecture.md is checked against the code: every Redis key contract/keys.py builds is
in its table of keys (and every key there is one keys.py builds), and every package of the
repository is in its map of the packages."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from contract import keys

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
# What a doc key writes where keys.py puts an argument: a placeholder (`<job>`), or a request
# key written out (`red:req:<channel>:<ts>`, the form the request's own keys are shown in).
_PLACEHOLDER = r"<[^<>]+>"
_ARGUMENT = rf"(?:{_PLACEHOLDER}|red:req:{_PLACEHOLDER}:{_PLACEHOLDER})"
_MARK = "\x00"


def _section(text: str, title: str) -> str:
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def documented_keys(text: str) -> list[str]:
    """The keys in the first column of the doc's table of Redis keys."""
    rows = [ln for ln in _section(text, "Redis keys").splitlines() if ln.startswith("| `")]
    return [k for row in rows for k in re.findall(r"`([^`]+)`", row.split(" | ")[0])]


def built_keys() -> dict[str, str]:
    """Every key contract/keys.py builds, as a pattern a doc key must match: name -> regex.
    A function `…_key` is called with a mark for each argument; a constant `…_KEY` is the key
    itself, a `…_PREFIX` the start of keys whose rest is arguments."""
    found: dict[str, str] = {}
    for name, value in vars(keys).items():
        if name.endswith("_key") and inspect.isfunction(value):
            params = inspect.signature(value).parameters
            built = value(*[_MARK] * len(params))
            found[name] = _ARGUMENT.join(re.escape(part) for part in built.split(_MARK))
        elif name.endswith("_KEY") and isinstance(value, str):
            found[name] = re.escape(value)
        elif name.endswith("_PREFIX") and isinstance(value, str):
            found[name] = re.escape(value) + rf"{_ARGUMENT}(?::{_ARGUMENT})*"
    return found


def missing_keys(text: str) -> list[str]:
    documented = documented_keys(text)
    return sorted(name for name, pattern in built_keys().items()
                  if not any(re.fullmatch(pattern, k) for k in documented))


def unknown_keys(text: str) -> list[str]:
    """Keys in the table that keys.py does not build (ARQ's own are ARQ's)."""
    patterns = built_keys().values()
    return [k for k in documented_keys(text) if not k.startswith("arq:")
            and not any(re.fullmatch(p, k) for p in patterns)]


def packages(root: Path) -> list[str]:
    """Every package of the repository, as its path from the root ("research_core/loop/")."""
    tops = [d for d in root.iterdir() if d.is_dir() and not d.name.startswith(".")]
    return sorted(f"{p.parent.relative_to(root).as_posix()}/" for top in tops
                  for p in top.rglob("__init__.py"))


def unmapped_packages(root: Path, text: str) -> list[str]:
    """Packages the doc's map does not show: the map is indented two spaces a level, so a
    package is shown where its name starts a line at its depth under its parent's line."""
    block = _section(text, "The packages").split("```")[1]
    lines = [ln for ln in block.splitlines() if ln.strip()]
    missing = []
    for package in packages(root):
        parts = package.rstrip("/").split("/")
        at = -1
        for depth, part in enumerate(parts):
            head = " " * (2 * depth) + part + "/"
            at = next((i for i, ln in enumerate(lines) if i > at and ln.startswith(head)
                       and not ln.startswith(head + "/")), -1)
            if at < 0:
                missing.append(package)
                break
    return missing


def test_every_redis_key_is_in_the_doc() -> None:
    assert missing_keys(DOC.read_text("utf-8")) == []


def test_the_doc_lists_no_key_the_code_does_not_build() -> None:
    assert unknown_keys(DOC.read_text("utf-8")) == []


def test_every_package_is_in_the_doc() -> None:
    assert unmapped_packages(ROOT, DOC.read_text("utf-8")) == []


def test_a_key_left_out_of_the_doc_is_found() -> None:
    text = DOC.read_text("utf-8")
    row = next(ln for ln in text.splitlines() if ln.startswith("| `red:stream:"))
    assert missing_keys(text.replace(row + "\n", "")) == ["stream_key"]
    chosen = next(ln for ln in text.splitlines() if ln.startswith("| `red:req:<channel>:<ts>` "))
    assert missing_keys(text.replace(chosen + "\n", "")) == ["request_key"]
    assert unknown_keys(text.replace(row, row.replace("red:stream:", "red:streams:"))) == [
        "red:streams:<job>"]


def test_a_package_left_out_of_the_doc_is_found(tmp_path: Path) -> None:
    for package in ("research_core/loop/memory", "research_core/loop/extra", "bot"):
        (tmp_path / package).mkdir(parents=True, exist_ok=True)
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "research_core" / "__init__.py").write_text("")
    (tmp_path / "research_core" / "loop" / "__init__.py").write_text("")
    text = "## The packages\n\n```\nresearch_core/  x\n  loop/  y\n    memory/  z\nbot/  w\n```\n"
    assert unmapped_packages(tmp_path, text) == ["research_core/loop/extra/"]
