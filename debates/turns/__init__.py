"""Turn policies for any seat (single, best-of-N, planned) with their rewards, critics and scoring.

Importing this package registers the built-in turn policies, rewards and critics.
"""

from debates.turns import best_of_n, critics, planned, rewards, single
from debates.turns.base import TURN_POLICIES, TurnContext, TurnPolicy, build_turn_policy

__all__ = ["TURN_POLICIES", "TurnContext", "TurnPolicy", "best_of_n", "build_turn_policy", "critics", "planned", "rewards", "single"]
