"""The budget of a run and its one resource owner (modes, the deep upgrade, revisions)."""
