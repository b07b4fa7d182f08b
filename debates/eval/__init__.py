"""Batch evaluation: run a configuration over a data set, score it, report it, compare runs."""
