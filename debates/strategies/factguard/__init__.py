"""FactGuard's video agent: a verifier that decides whether it needs evidence, a tool desk, and their loop."""

