"""The run store: checkpoints, publications and reports in SQL (SQLite or PostgreSQL)."""
