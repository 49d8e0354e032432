"""Follow-ups: the nodes researched for them stay out of the published parts."""

from __future__ import annotations

import datetime as dt

from research_core.loop.memory.goal_tree import GoalTree
from research_core.loop.memory.state import RunState
from research_core.loop.publishing.followup import followup_node_ids
from research_core.settings import Settings


def test_follow_up_nodes_include_their_sub_questions() -> None:
    state = RunState.new("q?", dt.date(2026, 10, 31), Settings())
    state.tree = GoalTree.for_question("q?")
    regular = state.tree.add_child(state.tree.root_id, "regular sub-question?", 0.5)
    asked = state.tree.add_child(state.tree.root_id, "a follow-up?", 1.0)
    deeper = state.tree.add_child(asked.id, "a follow-up, split deeper?", 0.9)
    state.extra.followup_nodes = {"followup-1": asked.id}
    assert followup_node_ids(state) == {asked.id, deeper.id}
    assert regular.id not in followup_node_ids(state)
