"""Memory: what a run knows and keeps (evidence, goal tree, summaries, state; sentences, conflicts).
Imports no other phase of the loop, only the engine's layers below it (text … delivery)."""
