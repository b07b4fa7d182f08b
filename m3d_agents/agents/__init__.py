"""The agents that take part in a check; each one is an AutoGen chat agent."""
