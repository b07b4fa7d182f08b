"""Turn policy ``react``: a debate seat's turn as one ReAct trajectory over its tools, ending in its answer.

Why it is here: MMD-Agent's text stage searches Wikipedia before it answers, and the T2Agent
paper's "TOOLs" ablation gives the MMD-Agent cascade the selected tools; both are a cascade seat
whose turn is a short tool-using trajectory (n = 1, no scores, no search). It uses the same step
format, action menus and tool dispatch as the tree search, so the two differ only in the search.

The seat's own parser reads the final ``Finish[...]``: an answer the seat may not give (the text
agent answering ``Finish[MATCH]``) is unreadable and asked again, as in a single-pass turn.
"""

from __future__ import annotations

from typing import Any, Sequence, TypeVar

from autogen_core.models import LLMMessage, UserMessage

import prompts
from debates.debate_engine.config import ReactPolicy
from m3d_agents.tools.actions import ActionRunner
from m3d_agents.tools.react import FINISH, Step, action_menu, action_specs, parse_step
from debates.debate_engine.turn_policy import TURN_POLICIES, TurnRequest
from m3d_agents.asking import Answer, ask
from m3d_agents.grammars import react_step, with_grammar
from m3d_agents.tools.cards import ToolContext
from m3d_agents.tools.catalogue import default_registry

T = TypeVar("T")


def with_appended(messages: Sequence[LLMMessage], text: str) -> list[LLMMessage]:
    """The messages with ``text`` added to the last user message (some chat templates refuse two user turns in a row)."""
    *head, last = messages
    if isinstance(last, UserMessage):
        content: Any = [*last.content, text] if isinstance(last.content, list) else f"{last.content}\n\n{text}"
        return [*head, UserMessage(content=content, source=last.source)]
    return [*messages, UserMessage(content=text, source="user")]


class ReactTurn:
    """Thought/Action steps with the seat's tools until ``Finish[...]``; at ``max_steps`` a Finish is demanded."""

    def __init__(self, config: ReactPolicy) -> None:
        self.registry = default_registry()
        self.specs = action_specs(config.tools, self.registry)
        self.max_steps = config.max_steps

    async def produce(self, request: TurnRequest[T]) -> Answer[T]:
        client, messages, parse, context = request.client, request.messages, request.parse, request.context
        retries, create_kwargs, on_retry = request.retries, request.create_kwargs, request.on_retry
        runner = ActionRunner(self.registry, context.tools or ToolContext(context.prepared))
        menu = action_menu(self.specs, None)
        done: list[str] = []
        attempts = 0
        for k in range(1, self.max_steps + 1):
            must_finish = k == self.max_steps
            if must_finish:
                instruction = prompts.render("t2agent/step_finish", k=k, choices=f"{FINISH}[<your answer>]")
            else:
                example = next((s.form for s in self.specs.values()), f"{FINISH}[<your answer>]")
                instruction = prompts.render("t2agent/step_next", k=k, example=example)
            trajectory = "Your steps so far:\n" + "\n".join(done) if done else "You have taken no step yet."
            prompt = with_appended(messages, prompts.render("turns/react_step", menu=menu, trajectory=trajectory,
                                                            instruction=instruction))

            def read(text: str, must_finish: bool = must_finish) -> Step:
                step = parse_step(text, self.specs, None, must_finish=must_finish)
                if step.finish is not None:
                    parse(f"{FINISH}[{step.finish}]")
                return step

            step_kwargs = with_grammar(create_kwargs, react_step(k, list(self.specs), None, must_finish))
            answer = await ask(client, prompt, read, retries=retries, create_kwargs=step_kwargs, on_retry=on_retry)
            attempts += answer.attempts
            step = answer.value
            if step is None:
                return Answer(value=None, text="\n".join([*done, answer.text]), error=answer.error, attempts=attempts)
            if step.finish is not None:
                final = "\n".join([*done, f"Thought {k}: {step.thought}", f"Action {k}: {FINISH}[{step.finish}]"])
                return Answer(value=parse(final), text=final, error=None, attempts=attempts)
            observation = await runner.run(step, self.specs)
            done.append(f"Thought {k}: {step.thought}\nAction {k}: {step.action_text()}\nObservation {k}: {observation.text}")
        raise AssertionError("the last step demands a Finish")


TURN_POLICIES.add("react", ReactTurn, "one ReAct trajectory over the seat's tools, ending in its answer")
