"""FactGuard's video agent: a verifier that decides whether it needs evidence, a tool desk, and their loop."""

from debates.strategies.factguard.config import FactGuardConfig
from debates.strategies.factguard.strategy import FactGuard

__all__ = ["FactGuard", "FactGuardConfig"]
