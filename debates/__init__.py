"""How a sample is checked: strategies and their configurations, the AutoGen group-chat machinery,
debate protocols, turn policies, batch evaluation, the ``m3d`` command line and notebook helpers.

Importing the package registers the built-in plug-ins (protocols, turn policies with their
rewards and critics, strategies), so every registry is complete whichever module is used first.
"""

from debates import protocols, strategies, turns

__all__ = ["protocols", "strategies", "turns"]
