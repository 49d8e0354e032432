"""The research loop: goal tree, planner, executor,
memory, reflection, the report and its checks."""
