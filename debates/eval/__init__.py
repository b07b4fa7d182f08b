"""Batch evaluation in three layers: ``run`` (running a configuration over a data set), ``score``
(metrics, reports, comparisons) and ``papers`` (the papers' tables and reproducing them)."""
