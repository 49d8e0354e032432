"""Imports run one way only (docs/architecture.md): the engine knows nothing of Slack, ARQ or a
web framework; the bot never imports the workers; inside the engine the subpackages form the
order below, and a module may import only from its own subpackage or an earlier one."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The engine's subpackages, lowest first ("" is research_core's top-level modules; text/ is the
# ground floor of pure functions under them all).
ENGINE_ORDER = ("text", "", "models", "search", "budget", "delivery", "loop", "store",
                "evaluation")
FORBIDDEN = {
    "research_core": ("bot", "workers", "contract", "playground", "redsearch", "slack_sdk",
                      "slack_bolt", "arq", "aiohttp.web", "matplotlib"),
    "contract": ("bot", "workers", "playground", "redsearch", "matplotlib"),
    "bot": ("workers", "playground", "redsearch", "matplotlib"),
    "workers": ("bot", "playground", "redsearch"),
    "playground": ("bot", "workers", "redsearch", "research_core", "contract"),
}


def imports(path: Path) -> Iterator[tuple[str, list[str]]]:
    """Every module a file imports, with the names it takes from it."""
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module, [alias.name for alias in node.names]


def banned_target(target: str, names: list[str], banned: tuple[str, ...]) -> str | None:
    """The banned module imported (`from aiohttp import web` imports aiohttp.web)."""
    for candidate in (target, *(f"{target}.{name}" for name in names)):
        if any(candidate == b or candidate.startswith(b + ".") for b in banned):
            return candidate
    return None


def layer(root: Path, module: str) -> int | None:
    """The engine layer of a research_core module (None outside the engine)."""
    parts = module.split(".")
    if parts[0] != "research_core":
        return None
    sub = parts[1] if len(parts) > 1 and (root / "research_core" / parts[1]).is_dir() else ""
    return ENGINE_ORDER.index(sub)


def violations(root: Path) -> list[str]:
    found: list[str] = []
    for package, banned in FORBIDDEN.items():
        for path in sorted((root / package).rglob("*.py")):
            module = ".".join(path.relative_to(root).with_suffix("").parts)
            own = layer(root, module)
            for target, names in imports(path):
                bad = banned_target(target, names, banned)
                if bad:
                    found.append(f"{module} imports {bad}")
                target_layer = layer(root, target)
                if own is not None and target_layer is not None and target_layer > own:
                    found.append(f"{module} ({ENGINE_ORDER[own] or 'top'}) imports {target} "
                                 f"({ENGINE_ORDER[target_layer] or 'top'}), which comes later")
    return sorted(set(found))


def test_imports_follow_the_layers() -> None:
    assert violations(ROOT) == []


def test_a_wrong_way_import_is_found(tmp_path: Path) -> None:
    for package in FORBIDDEN:
        (tmp_path / package).mkdir()
    for sub in filter(None, ENGINE_ORDER):
        (tmp_path / "research_core" / sub).mkdir()
    (tmp_path / "bot" / "app.py").write_text("from workers.jobs import run_job\n")
    (tmp_path / "research_core" / "search" / "tool.py").write_text(
        "from research_core.loop.state import RunState\nfrom aiohttp import web\n")
    (tmp_path / "research_core" / "text" / "words.py").write_text(
        "from research_core.settings import Settings\nfrom research_core.text import figures\n")
    assert violations(tmp_path) == [
        "bot.app imports workers.jobs",
        "research_core.search.tool (search) imports research_core.loop.state (loop), "
        "which comes later",
        "research_core.search.tool imports aiohttp.web",
        "research_core.text.words (text) imports research_core.settings (top), which comes later",
    ]
