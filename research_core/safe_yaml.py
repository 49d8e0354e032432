"""YAML from files people hand us (corpus front matter, evaluation suites), loaded with limits.

`yaml.safe_load` builds no arbitrary objects, but it still lets a small file cost unbounded time
or memory: 50,000 nested brackets overflow the composer's recursion, and a few lines of
aliases ("billion laughs") expand to billions of items the moment anything walks the result.
`load` refuses, as a `YamlLimitError` (a `yaml.YAMLError`, so callers' existing error paths
report it), text over `max_bytes`, nesting deeper than `MAX_DEPTH`, more than `MAX_NODES`
nodes once every alias is counted as often as it is used, and aliases that refer to
themselves. Timestamps stay text (`YYYY-MM-DD` unquoted is a string), so an impossible date is
reported by the caller that reads it rather than raised by the loader.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, SequenceNode

MAX_DEPTH = 64
MAX_NODES = 100_000


class YamlLimitError(yaml.YAMLError):
    """The YAML text is over one of the loader's limits."""


class _LimitedLoader(yaml.SafeLoader):
    """SafeLoader with a nesting limit while composing; timestamps constructed as text."""

    depth = 0

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise YamlLimitError(f"nested deeper than {MAX_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def _timestamp_as_text(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    return str(loader.construct_scalar(node)) if isinstance(node, yaml.ScalarNode) else ""


_LimitedLoader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_as_text)


def expanded_size(node: Node, limit: int = MAX_NODES) -> int:
    """How many nodes the document has with every alias expanded (counted once per use).

    Shared nodes are counted from a memo, so this takes time linear in the composed graph
    even when the expansion is astronomically large; a node that contains itself is refused.
    """
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(current: Node) -> int:
        key = id(current)
        if key in sizes:
            return sizes[key]
        if key in open_nodes:
            raise YamlLimitError("an alias refers to the node that contains it")
        open_nodes.add(key)
        children: list[Node] = []
        if isinstance(current, SequenceNode):
            children = list(current.value)
        elif isinstance(current, MappingNode):
            children = [part for pair in current.value for part in pair]
        total = 1 + sum(size(child) for child in children)
        open_nodes.discard(key)
        if total > limit:
            raise YamlLimitError(f"more than {limit:,} items once its aliases are expanded")
        sizes[key] = total
        return total

    return size(node)


def load(text: str, max_bytes: int) -> Any:
    """The one YAML document in `text` (None when empty), within the limits above."""
    if len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        raise YamlLimitError(f"larger than {max_bytes:,} bytes")
    loader = _LimitedLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        expanded_size(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def load_file(path: Path, max_bytes: int) -> Any:
    """`load` of a UTF-8 file, reading no more than `max_bytes` + 1 bytes of it (OSError and
    UnicodeDecodeError propagate)."""
    with path.open("rb") as handle:
        raw = handle.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise YamlLimitError(f"larger than {max_bytes:,} bytes")
    return load(raw.decode("utf-8"), max_bytes)
