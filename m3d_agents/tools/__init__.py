"""Tools the agents call: image forensics, image analysis, OCR, a logic check, time detection,
each described by a tool card (:mod:`m3d_agents.tools.cards`, listed in :mod:`m3d_agents.tools.catalogue`),
plus greedy tool selection (:mod:`m3d_agents.tools.greedy_selection`).

The package imports none of its modules: reading a configuration checks its tool names against the
cards without loading any tool.
"""
