"""``async``: debaters answer one at a time, each seeing every other debater's latest answer.

First answers are independent; from round two a debater sees the answers given so far, including
those of debaters who already spoke in this round. The framing (``human`` or ``ai``) tells the
agents whom they debate. Consensus stops the debate; otherwise a majority decides (a tie
abstains), or the judge where ``on_no_consensus: judge``. All of that is
:class:`~debates.strategies.debate.protocols.base.DebateDefaults`'s default; this module names the setting.
"""

from __future__ import annotations

from debates.debate_engine.protocol import protocol
from debates.strategies.debate.protocols.base import DebateDefaults


@protocol("async")
class AsyncDebate(DebateDefaults):
    """Debaters in turn, each seeing the others' latest answers."""
