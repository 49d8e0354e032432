"""RED Searcher research engine: the hierarchical, evidence-driven research loop."""
