"""Slack surface of RED Searcher (issue 5)."""
