"""Strategy ``t2agent`` (T2Agent): Monte Carlo tree search over forgery-source subtasks with tool actions.

| module | what |
|---|---|
| :mod:`.tree` | nodes, the modified UCT (eq. 3 and Alg. 1's line), backup, subtask status (pure) |
| :mod:`.search` | one search (Alg. 1): select, expand, evaluate, back up, prune or stop (pure, over a Rollout) |
| :mod:`.fusion` | the decision: early stop, eqs. 4–6, abstention (pure) |
| :mod:`.scoring` | S_T, S_C and the dual reward |
| :mod:`.priors` | subtask priors: model, uniform or random |
| :mod:`.react` | the ReAct step format over tool cards: menus and parsing |
| :mod:`.actions` | running an action through the tool registry, cached per post |
| :mod:`.prompting` | the messages of every kind of call |
| :mod:`.config` | the configuration model |
| :mod:`.strategy` | the strategy: model calls, streaming, the verdict |
| :mod:`.react_turn` | the ``react`` turn policy: one ReAct trajectory as a debate seat's turn (MMD-Agent's baselines) |
"""

from debates.strategies.t2agent import react_turn, strategy
from debates.strategies.t2agent.config import T2AgentConfig

__all__ = ["T2AgentConfig", "react_turn", "strategy"]
