"""The goal tree: root = the question; only the most valuable open node is worked on."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from research_core.text.asking import Asked, read_question

NodeStatus = Literal["open", "expanded", "done", "insufficient", "pruned"]
FINISHED: frozenset[str] = frozenset({"done", "insufficient", "pruned"})


@dataclass
class Node:
    id: str
    question: str
    value: float
    depth: int
    parent_id: str | None = None
    status: NodeStatus = "open"
    rounds: int = 0
    children: list[str] = field(default_factory=list)

    @cached_property
    def asked(self) -> Asked:
        """The node's question, read once (`research_core.text.asking`)."""
        return read_question(self.question)


@dataclass
class GoalTree:
    nodes: dict[str, Node] = field(default_factory=dict)
    root_id: str = "N0"

    @classmethod
    def for_question(cls, question: str) -> GoalTree:
        tree = cls()
        tree.nodes["N0"] = Node(id="N0", question=question, value=1.0, depth=0)
        return tree

    @property
    def root(self) -> Node:
        return self.nodes[self.root_id]

    def add_child(self, parent_id: str, question: str, value: float) -> Node:
        parent = self.nodes[parent_id]
        node = Node(
            id=f"N{len(self.nodes)}", question=question, value=value,
            depth=parent.depth + 1, parent_id=parent_id,
        )
        self.nodes[node.id] = node
        parent.children.append(node.id)
        parent.status = "expanded"
        return node

    def next_open(self, breadth_first: bool = False) -> Node | None:
        """Greedy choice: the open node with the highest value (earliest on ties); with
        `breadth_first` (deep), among the open nodes worked on least: every sub-question gets
        its first round before any gets its second, so that a budget spent on verifying one
        never leaves another unasked."""
        candidates = [n for n in self.nodes.values() if n.status == "open"]
        if not candidates:
            return None
        if breadth_first:
            fewest = min(n.rounds for n in candidates)
            candidates = [n for n in candidates if n.rounds == fewest]
        return max(candidates, key=lambda n: (n.value, -int(n.id[1:])))

    def subtree(self, node_id: str) -> list[str]:
        """The node and all its descendants."""
        ids = [node_id]
        for child in self.nodes[node_id].children:
            ids.extend(self.subtree(child))
        return ids

    def backtrack(self, node_id: str) -> Node | None:
        """Prune the node's branch; the parent is worked on again unless a sibling is open or
        already answered part of it."""
        for nid in self.subtree(node_id):
            self.nodes[nid].status = "pruned"
        parent_id = self.nodes[node_id].parent_id
        if parent_id is None:
            return None
        parent = self.nodes[parent_id]
        siblings = {self.nodes[c].status for c in parent.children}
        if not siblings & {"open", "done"} and parent.status == "expanded":
            parent.status = "open"
        return parent

    def path(self, node_id: str) -> list[Node]:
        node = self.nodes[node_id]
        up = self.path(node.parent_id) if node.parent_id else []
        return [*up, node]

    def settle_parents(self) -> None:
        """An expanded node whose children are all finished is finished itself."""
        for node in sorted(self.nodes.values(), key=lambda n: -n.depth):
            if node.status != "expanded" or not node.children:
                continue
            kids = [self.nodes[c] for c in node.children]
            if all(k.status in FINISHED for k in kids):
                node.status = "done" if any(k.status == "done" for k in kids) else "insufficient"
