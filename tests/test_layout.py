"""Imports run one way only (docs/architecture.md): the engine knows nothing of Slack, ARQ or a
web framework; the bot never imports the workers; inside the engine the subpackages form the
order below, and a module may import only from its own subpackage or an earlier one. The
research loop's phases are subpackages of that order in their own right, so a phase never
imports a later one, whichever form the import takes (`from research_core.loop.review import
coverage`, `from research_core.loop import engine`, or a relative import)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The engine's subpackages, lowest first ("" is research_core's top-level modules; text/ is the
# ground floor of pure functions under them all). The loop's phases come in the loop's own
# order (research_core/loop/__init__.py); "loop" is what is left of the loop: engine.py on top.
ENGINE_ORDER = ("text", "wording", "", "settings", "models", "search", "budget", "delivery",
                "loop.memory", "loop.planning", "loop.gathering", "loop.review",
                "loop.answering", "loop.report", "loop.publishing", "loop",
                "store", "evaluation")
FORBIDDEN = {
    "research_core": ("bot", "workers", "contract", "playground", "redsearch", "slack_sdk",
                      "slack_bolt", "arq", "aiohttp.web", "matplotlib"),
    "contract": ("bot", "workers", "playground", "redsearch", "matplotlib"),
    "bot": ("workers", "playground", "redsearch", "matplotlib"),
    "workers": ("bot", "playground", "redsearch"),
    "playground": ("bot", "workers", "redsearch", "research_core", "contract"),
}
# What ships stays apart from the harnesses: of the commands, only the CLI reaches them (its
# `eval` and `learn-report` run a harness).
HARNESS = "redsearch.harness"
REACHES_HARNESS = ("redsearch.cli",)


def module_of(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(root: Path, dotted: str) -> bool:
    base = root.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or base.is_dir()


def imports(root: Path, path: Path) -> Iterator[tuple[str, list[str]]]:
    """Every module a file imports, with the names it takes from it. `from pkg import mod`
    imports the module pkg.mod, not the package (the form that let a layer's module import a
    later one unseen when the layer was only the package's name); a relative import is read
    as the absolute one it stands for."""
    package = module_of(root, path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            elif node.module:
                target = node.module
            else:
                continue
            names = [alias.name for alias in node.names]
            modules = [n for n in names if _is_module(root, f"{target}.{n}")]
            yield from ((f"{target}.{n}", []) for n in modules)
            rest = [n for n in names if n not in modules]
            if rest or not modules:
                yield target, rest


def banned_target(target: str, names: list[str], banned: tuple[str, ...]) -> str | None:
    """The banned module imported (`from aiohttp import web` imports aiohttp.web)."""
    for candidate in (target, *(f"{target}.{name}" for name in names)):
        if any(candidate == b or candidate.startswith(b + ".") for b in banned):
            return candidate
    return None


def layer(root: Path, module: str) -> int | None:
    """The engine layer of a research_core module (None outside the engine): the longest
    subpackage of ENGINE_ORDER it lies in."""
    parts = module.split(".")
    if parts[0] != "research_core":
        return None
    for depth in (2, 1):
        sub = ".".join(parts[1:1 + depth])
        if len(parts) > depth and sub in ENGINE_ORDER and (
                root.joinpath("research_core", *sub.split("."))).is_dir():
            return ENGINE_ORDER.index(sub)
    return ENGINE_ORDER.index("")


def _name(index: int) -> str:
    return ENGINE_ORDER[index] or "top"


def violations(root: Path) -> list[str]:
    found: list[str] = []
    for package, banned in FORBIDDEN.items():
        for path in sorted((root / package).rglob("*.py")):
            module = module_of(root, path)
            own = layer(root, module)
            for target, names in imports(root, path):
                bad = banned_target(target, names, banned)
                if bad:
                    found.append(f"{module} imports {bad}")
                target_layer = layer(root, target)
                if own is not None and target_layer is not None and target_layer > own:
                    found.append(f"{module} ({_name(own)}) imports {target} "
                                 f"({_name(target_layer)}), which comes later")
    for path in sorted((root / "redsearch").rglob("*.py")):
        module = module_of(root, path)
        if module == HARNESS or module.startswith(HARNESS + ".") or module in REACHES_HARNESS:
            continue
        for target, names in imports(root, path):
            bad = banned_target(target, names, (HARNESS,))
            if bad:
                found.append(f"{module} (ships) imports {bad}, a harness")
    return sorted(set(found))


def unplaced(root: Path) -> list[str]:
    """Subpackages of the engine and of its loop that ENGINE_ORDER does not place."""
    core = root / "research_core"
    subs = [p for p in (*core.iterdir(), *(core / "loop").iterdir())
            if (p / "__init__.py").is_file()]
    return sorted(str(p.relative_to(core)) for p in subs
                  if ".".join(p.relative_to(core).parts) not in ENGINE_ORDER)


def test_imports_follow_the_layers() -> None:
    assert violations(ROOT) == []


def test_every_subpackage_has_a_place_in_the_order() -> None:
    assert unplaced(ROOT) == []


def test_a_wrong_way_import_is_found(tmp_path: Path) -> None:
    for package in (*FORBIDDEN, "redsearch/harness"):
        (tmp_path / package).mkdir(parents=True)
    for sub in filter(None, ENGINE_ORDER):
        (tmp_path / "research_core" / sub.replace(".", "/")).mkdir(parents=True, exist_ok=True)
    for module in ("loop/engine", "loop/memory/state", "loop/review/coverage",
                   "loop/publishing/parts"):
        (tmp_path / "research_core" / f"{module}.py").write_text("")
    (tmp_path / "bot" / "app.py").write_text("from workers.jobs import run_job\n")
    (tmp_path / "research_core" / "search" / "tool.py").write_text(
        "from research_core.loop.memory.state import RunState\nfrom aiohttp import web\n")
    (tmp_path / "research_core" / "text" / "words.py").write_text(
        "from research_core.settings import Settings\nfrom research_core.text import figures\n")
    # the hole this layout closes: `from package import module` names the module's layer
    (tmp_path / "research_core" / "models" / "gateway.py").write_text(
        "from research_core.loop.memory import state\n")
    (tmp_path / "research_core" / "loop" / "planning" / "planner.py").write_text(
        "from research_core.loop import engine\nfrom research_core.loop.review import coverage\n"
        "from research_core.loop.memory import state\n")
    (tmp_path / "research_core" / "loop" / "gathering" / "admission.py").write_text(
        "from ..publishing import parts\nfrom ..memory.state import RunState\n")
    (tmp_path / "research_core" / "loop" / "engine.py").write_text(
        "from research_core.loop.publishing import parts\n")
    (tmp_path / "redsearch" / "up.py").write_text("from redsearch.harness.chaos import run\n")
    (tmp_path / "redsearch" / "cli.py").write_text("from redsearch.harness.evaluate import run\n")
    assert violations(tmp_path) == [
        "bot.app imports workers.jobs",
        "redsearch.up (ships) imports redsearch.harness.chaos, a harness",
        "research_core.loop.gathering.admission (loop.gathering) imports "
        "research_core.loop.publishing.parts (loop.publishing), which comes later",
        "research_core.loop.planning.planner (loop.planning) imports research_core.loop.engine "
        "(loop), which comes later",
        "research_core.loop.planning.planner (loop.planning) imports "
        "research_core.loop.review.coverage (loop.review), which comes later",
        "research_core.models.gateway (models) imports research_core.loop.memory.state "
        "(loop.memory), which comes later",
        "research_core.search.tool (search) imports research_core.loop.memory.state "
        "(loop.memory), which comes later",
        "research_core.search.tool imports aiohttp.web",
        "research_core.text.words (text) imports research_core.settings (settings), which comes "
        "later",
    ]
    (tmp_path / "research_core" / "loop" / "extra").mkdir()
    (tmp_path / "research_core" / "loop" / "extra" / "__init__.py").write_text("")
    assert unplaced(tmp_path) == ["loop/extra"]


def test_the_package_form_was_the_hole(tmp_path: Path) -> None:
    """Read as the package only (the old reading), `from research_core.loop.review import
    coverage` inside planning would be an import of its own loop package and pass; read as
    the module it names, it is found."""
    for sub in ("loop/planning", "loop/review"):
        (tmp_path / "research_core" / sub).mkdir(parents=True)
    (tmp_path / "research_core" / "loop" / "review" / "coverage.py").write_text("")
    path = tmp_path / "research_core" / "loop" / "planning" / "gaps.py"
    path.write_text("from research_core.loop.review import coverage\n")
    assert list(imports(tmp_path, path)) == [("research_core.loop.review.coverage", [])]
    assert layer(tmp_path, "research_core.loop.review.coverage") == ENGINE_ORDER.index(
        "loop.review")


MAX_TOP_MODULES = 10  # issue 45: grow a package named for what it is rather than the top


def test_research_core_keeps_few_top_level_modules() -> None:
    top = sorted(p.stem for p in (ROOT / "research_core").glob("*.py") if p.stem != "__init__")
    assert len(top) <= MAX_TOP_MODULES, top
