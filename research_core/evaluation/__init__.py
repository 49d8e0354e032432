"""Evaluation: suites and their grading, the monolithic baseline, the search replay."""
