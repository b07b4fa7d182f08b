"""Strategy ``debate`` (LLM-Consensus and AgentM3D): seats take turns in one AutoGen group chat.

| module | what |
|---|---|
| :mod:`.strategy` | the strategy: seats, evidence, the team, the verdict |
| :mod:`.protocols` | one module per protocol (async, sync, judged, actor-skeptic, disambiguation, cascade, standard) |

The protocol contract and the configuration model live in :mod:`debates.debate_engine`, because the chat
machinery that AgentFact and FactGuard also use reads them.
"""
