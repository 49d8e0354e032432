"""Review: a node done (coverage), the root's gaps, reflection and backtracking, steers, deep.
May import gathering, planning and memory."""
