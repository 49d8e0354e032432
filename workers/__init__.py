"""ARQ workers of RED Searcher (issue 5)."""
