"""Delivery: progress notes and answer parts, their cadence and revisions, publishers."""
