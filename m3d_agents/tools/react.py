"""The ReAct step format over tool cards: the action menu a model is shown, and how its step is read.

A step is ``Thought k: ...`` then ``Action k: Verb[argument]``. The verbs a check may use are
its own (least privilege: the text check cannot call the image detector), each bound to a
registered tool whose card supplies everything the menu says about it, so editing a card edits
every prompt that offers it. ``Finish[answer]`` ends a trajectory with one of the check's two
answers; an answer of another check is unreadable, never reinterpreted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, Mapping, Sequence

from m3d_agents.errors import ParseError
from m3d_agents.parsing import strip_reasoning
from m3d_agents.tools.cards import ToolCard, ToolRegistry

FINISH = "Finish"


@dataclass(frozen=True)
class ActionSpec:
    """One verb a check may use, and the tool card behind it."""

    verb: str
    card: ToolCard

    @property
    def form(self) -> str:
        """How the action is written: ``Google[query]``, ``Detect[image]``."""
        return f"{self.verb}[{self.card.argument or 'image'}]"


def action_specs(verbs: Mapping[str, str], registry: ToolRegistry) -> dict[str, ActionSpec]:
    """Verb -> spec for a check's ``{verb: tool name}`` map; an unknown tool raises InputError."""
    return {verb: ActionSpec(verb, registry.card(tool)) for verb, tool in verbs.items()}


MenuDetail = Literal["full", "brief"]


def action_menu(specs: Mapping[str, ActionSpec], answers: Sequence[str] | None, detail: MenuDetail = "full") -> str:
    """The actions a check may take, one line each, built from the cards' fields only.

    ``full``: what the tool does, when to use it and what it returns; ``brief``: what it does,
    which is what a ReAct task prompt lists beside each action's syntax."""
    lines = [
        f"- {spec.form}: {spec.card.purpose}"
        + (f" Use it {spec.card.when_to_use} It returns {spec.card.outputs}" if detail == "full" else "")
        for spec in specs.values()
    ]
    finish = " or ".join(f"{FINISH}[{a}]" for a in answers) if answers else f"{FINISH}[answer]"
    lines.append(f"- {finish}: ends the check with your answer.")
    return "\n".join(lines)


@dataclass(frozen=True)
class Step:
    """One read step: the thought, and either a tool action or a Finish answer."""

    thought: str
    verb: str
    argument: str
    finish: str | None = None
    allowed: bool = True
    """False when the verb is not one of the check's actions (it is then never executed)."""

    def action_text(self) -> str:
        return f"{self.verb}[{self.finish if self.finish is not None else self.argument}]"


_ACTION = re.compile(r"Action\s*\d*\s*[:：]\s*\**\s*([A-Za-z][A-Za-z0-9_]*)\s*\[(.*?)\]", re.IGNORECASE | re.DOTALL)
_THOUGHT = re.compile(r"Thought\s*\d*\s*[:：]\s*(.*?)(?=\n\s*\**\s*Action\s*\d*\s*[:：]|\Z)", re.IGNORECASE | re.DOTALL)
_OBSERVATION = re.compile(r"\n\s*\**\s*Observation\s*\d*\s*[:：]", re.IGNORECASE)


def canonical_answer(text: str) -> str:
    return " ".join(text.replace("_", " ").split()).upper()


def parse_step(
    text: str,
    specs: Mapping[str, ActionSpec],
    answers: Sequence[str] | None,
    *,
    must_finish: bool = False,
) -> Step:
    """Read one Thought/Action step.

    ``answers``: the check's Finish answers (None: any Finish[...] is read, and its argument kept
    as written). ``must_finish``: only a Finish is readable (the depth limit). A verb that is not
    in ``specs`` is read but marked not allowed; the caller shows it the allowed actions instead
    of running anything. Text after the first action (an invented observation) is ignored.
    """
    visible = strip_reasoning(text)
    cut = _OBSERVATION.search(visible)
    if cut is not None:
        visible = visible[: cut.start()]
    match = _ACTION.search(visible)
    if match is None:
        verbs = "|".join(re.escape(v) for v in [*specs, FINISH])
        match = re.search(rf"\b({verbs})\s*\[(.*?)\]", visible, re.IGNORECASE | re.DOTALL)
    if match is None:
        raise ParseError("Action k: Verb[argument]", "no action line", text)
    verb_written, argument = match.group(1), " ".join(match.group(2).split())
    thought_match = _THOUGHT.search(visible[: match.start()] + "\n")
    thought = (thought_match.group(1) if thought_match else visible[: match.start()]).strip()
    if verb_written.lower() == FINISH.lower():
        finish = canonical_answer(argument)
        if answers is not None:
            known = {canonical_answer(a): a for a in answers}
            if finish not in known:
                raise ParseError(f"{FINISH}[...]", f"{FINISH}[{argument}] is not an answer of this check; use "
                                 + " or ".join(f"{FINISH}[{a}]" for a in answers), text)
            finish = known[finish]
        elif not finish:
            raise ParseError(f"{FINISH}[...]", "Finish[] names no answer", text)
        return Step(thought=thought, verb=FINISH, argument=finish, finish=finish)
    if must_finish:
        choices = " or ".join(f"{FINISH}[{a}]" for a in answers) if answers else f"{FINISH}[answer]"
        raise ParseError(f"{FINISH}[...]", f"this step must end the check with {choices}, not {verb_written}[...]", text)
    spec = next((s for v, s in specs.items() if v.lower() == verb_written.lower()), None)
    if spec is None:
        return Step(thought=thought, verb=verb_written, argument=argument, allowed=False)
    if spec.card.argument and not argument:
        raise ParseError(spec.form, f"{spec.verb}[...] needs its {spec.card.argument}", text)
    return Step(thought=thought, verb=spec.verb, argument=argument)
