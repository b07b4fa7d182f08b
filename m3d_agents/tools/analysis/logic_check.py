"""A logic-consistency check of a claim: the text critic's tool for contradictions inside a post.

It judges internal coherence only; whether the claim is true is for the evidence and the debate.
"""

from __future__ import annotations

from typing import Any, Sequence

from autogen_core.models import ChatCompletionClient, UserMessage
from pydantic import BaseModel, Field

import prompts
from m3d_agents.asking import ask
from m3d_agents.backends.factory import Backend
from m3d_agents.backends.metering import UsageLedger
from m3d_agents.evidence import Evidence
from m3d_agents.parsing import parse_model


class LogicVerdict(BaseModel):
    consistent: bool
    issues: list[str] = Field(default_factory=list)
    rationale: str = ""


class LogicCheck(BaseModel):
    verdict: LogicVerdict | None = None
    error: str | None = None
    text: str = ""

    def for_agents(self) -> str:
        if self.verdict is None:
            return f"logic_check: no usable answer ({self.error})"
        if self.verdict.consistent:
            return f"logic_check: internally consistent. {self.verdict.rationale}".strip()
        return f"logic_check: inconsistent: {'; '.join(self.verdict.issues) or self.verdict.rationale}"


async def check_logic(
    claim: str,
    backend: Backend,
    ledger: UsageLedger,
    evidence: Sequence[Evidence] = (),
    agent: str = "text_critic",
) -> LogicCheck:
    client = backend.view(ledger, agent=agent, role="logic_check")
    return await run_logic_check(claim, client, backend.structured_args(LogicVerdict), evidence)


async def run_logic_check(
    claim: str, client: ChatCompletionClient, create_kwargs: dict[str, Any], evidence: Sequence[Evidence] = (), retries: int = 2
) -> LogicCheck:
    """The check itself, on any client (the text critic calls it with its own metered view)."""
    quoted = "\n".join(e.quoted() for e in evidence if e.kept)
    prompt = prompts.render(
        "tools/logic_check", claim=claim.strip(), evidence=f"\nEvidence:\n{quoted}\n" if quoted else ""
    )
    answer = await ask(
        client,
        [UserMessage(content=prompt, source="user")],
        lambda text: parse_model(text, LogicVerdict),
        retries=retries,
        create_kwargs=create_kwargs,
    )
    return LogicCheck(verdict=answer.value, error=answer.error, text=answer.text)
