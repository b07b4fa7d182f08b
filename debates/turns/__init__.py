"""Turn policies for any seat (single, best-of-N, planned, ReAct) with their rewards, critics and scoring.

Importing this package registers the built-in turn policies, rewards and critics.
"""

from debates.debate_engine.turn_policy import TURN_POLICIES, TurnContext, TurnPolicy, build_turn_policy
from debates.turns import best_of_n, critics, planned, react, rewards, single

__all__ = ["TURN_POLICIES", "TurnContext", "TurnPolicy", "best_of_n", "build_turn_policy", "critics", "planned", "react", "rewards", "single"]
