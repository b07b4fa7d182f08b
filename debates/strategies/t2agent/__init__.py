"""Strategy ``t2agent`` (T2Agent): Monte Carlo tree search over forgery-source subtasks with tool actions.

| module | what |
|---|---|
| :mod:`.tree` | nodes, the modified UCT (eq. 3 and Alg. 1's line), backup, subtask status (pure) |
| :mod:`.search` | one search (Alg. 1): select, expand, evaluate, back up, prune or stop (pure, over a Rollout) |
| :mod:`.fusion` | the decision: early stop, eqs. 4–6, abstention (pure) |
| :mod:`.scoring` | S_T, S_C and the dual reward |
| :mod:`.priors` | subtask priors: model, uniform or random |
| :mod:`.prompting` | the messages of every kind of call |
| :mod:`.config` | the configuration model |
| :mod:`.strategy` | the strategy: model calls, streaming, the verdict |

The ReAct step format and the per-post action cache are shared with the ``react`` turn policy, so
they live in :mod:`m3d_agents.tools.react` and :mod:`m3d_agents.tools.actions`.
"""
