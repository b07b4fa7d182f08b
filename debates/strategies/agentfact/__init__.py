"""AgentFact: planned, evidence-grounded fact-checking with source reliability and explanations that
cite evidence ids.

| module | what |
|---|---|
| :mod:`~debates.strategies.agentfact.config` | the configuration: setting, seats, every threshold |
| :mod:`~debates.strategies.agentfact.board` | plans, the query queue, evidence pools and ids, counters |
| :mod:`~debates.strategies.agentfact.policy` | the controller: who acts next, a pure function of the board |
| :mod:`~debates.strategies.agentfact.schemas` | each agent's JSON answer, with id enums built per call |
| :mod:`~debates.strategies.agentfact.views` | what each agent is shown, rendered from the board |
| :mod:`~debates.strategies.agentfact.participants` | the agents as group-chat participants |
| :mod:`~debates.strategies.agentfact.state` | the chat state: the board and the transcript |
| :mod:`~debates.strategies.agentfact.explain` | the verdict: label, explanation, evidence |
| :mod:`~debates.strategies.agentfact.strategy` | the ``agentfact`` strategy |
"""
