"""Scoring a run: metrics, the report, comparisons, prices, annotations and tool selection."""
