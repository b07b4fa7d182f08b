"""Turn formats as grammars, so that a server that takes one can only send a readable turn.

A small model asked for ``FINAL ANSWER: fake`` or ``Action 2: Search[...]`` often writes something
else, and the turn is lost to retries and then to an abstention. A server that decodes under a
grammar (llama.cpp, vLLM's structured outputs) cannot: every turn it sends is in the format that
the prompt asks for and that the parser reads. The grammar changes no format; it only guarantees it.

Each format here is a :class:`Grammar` in GBNF, llama.cpp's notation, which vLLM's grammar engine
(xgrammar) reads as well. Free prose in a format is the rule ``prose``, which the grammar leaves to
the backend (:mod:`m3d_agents.backends.transports.shaping`): open-ended on a real model,
a few sentences on the embedded one, so that a demonstration model that starts to recite its prompt
or repeat itself is stopped after them instead of running to its token limit.

A caller asks for a format with :meth:`Grammar.create_args` in a call's ``extra_create_args``; the
transport sends it in the server's own field, or leaves it out for a server without grammars
(OpenAI), which then gets exactly the request it got before.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from pydantic import BaseModel, ConfigDict, Field

GRAMMAR_ARG = "m3d_grammar"
"""The key of ``extra_create_args`` that carries a grammar to the transport, which never sends it as it is."""

PROSE = "prose"
"""The rule every format uses for free text; defined by the backend, never here."""

CONFIDENCE = '"0" ("." [0-9] [0-9]?)? | "1" ("." "0" "0"?)?'
"""A number from 0 to 1, written with at most two decimals."""


def literal(text: str) -> str:
    """``text`` as a GBNF string literal."""
    return json.dumps(text, ensure_ascii=False)


def choice(options: Sequence[str]) -> str:
    """One of ``options``, longest first, so that no option is read as the start of another."""
    return " | ".join(literal(o) for o in sorted(dict.fromkeys(options), key=len, reverse=True))


class Grammar(BaseModel):
    """One turn format: its name (for messages and tests) and its rules, whose start is ``root``."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(description="the format, in a few words (answer lines, ReAct step, tagged turn ...)")
    rules: str = Field(description="GBNF rules; the rule 'prose' is left for the backend to define")

    def create_args(self) -> dict[str, Any]:
        """What to merge into a call's ``extra_create_args`` to ask for this format."""
        return {GRAMMAR_ARG: self.rules}


def with_grammar(create_kwargs: dict[str, Any] | None, grammar: Grammar) -> dict[str, Any]:
    """``create_kwargs`` (of ``ask`` and the turn policies) asking for ``grammar``'s format instead of any other."""
    kwargs = dict(create_kwargs or {})
    kwargs["extra_create_args"] = {**dict(kwargs.get("extra_create_args") or {}), **grammar.create_args()}
    return kwargs


def _rules(*lines: str) -> str:
    return "\n".join(lines) + "\n"


def prose_only() -> Grammar:
    """A turn of prose and nothing else (a judged debate's debater, who gives no answer line)."""
    return Grammar(name="prose", rules=_rules(f"root ::= {PROSE}"))


def prose_or(exact: str) -> Grammar:
    """Prose, or exactly ``exact`` alone (the skeptic's ``NO OBJECTIONS``)."""
    return Grammar(name=f"prose or {exact}", rules=_rules(f"root ::= {literal(exact)} | {PROSE}"))


def answer_lines(labels: Sequence[str], max_queries: int | None = 0) -> Grammar:
    """Prose, then up to ``max_queries`` ``QUERY:`` lines (None: any number), then ``FINAL ANSWER: <label>`` and
    ``CONFIDENCE: <0..1>`` (the debate answer format, prompts/common/answer_format.md)."""
    repeat = "*" if max_queries is None else f"{{0,{max_queries}}}"
    queries = f' ("QUERY: " [^\\n]+ "\\n"){repeat}' if max_queries is None or max_queries > 0 else ""
    return Grammar(name="answer lines", rules=_rules(
        f'root ::= {PROSE} "\\n"{queries} "FINAL ANSWER: " label "\\n" "CONFIDENCE: " confidence',
        f"label ::= {choice(labels)}",
        f"confidence ::= {CONFIDENCE}",
    ))


def action_lines(actions: Sequence[str]) -> Grammar:
    """Prose, then ``Finish[ACTION]`` and ``CONFIDENCE: <0..1>`` on lines of their own (the
    cascade's modality checks, prompts/cascade/*_system.md)."""
    return Grammar(name="Finish and confidence lines", rules=_rules(
        f'root ::= {PROSE} "\\n" "Finish[" action "]" "\\n" "CONFIDENCE: " confidence',
        f"action ::= {choice(actions)}",
        f"confidence ::= {CONFIDENCE}",
    ))


def react_step(step: int, verbs: Sequence[str], finish_answers: Sequence[str] | None, must_finish: bool = False) -> Grammar:
    """``Thought k: ...`` then ``Action k: Verb[argument]`` or ``Action k: Finish[answer]``.

    ``verbs``: the check's own actions; ``finish_answers``: the answers a Finish may name (None:
    any); ``must_finish``: the last step, where only a Finish is allowed.
    """
    finish = f'"Finish[" ({choice(finish_answers)}) "]"' if finish_answers else '"Finish[" [^\\]\\n]+ "]"'
    tools = [f'"{v}[" [^\\]\\n]* "]"' for v in verbs]
    action = finish if must_finish or not tools else " | ".join([*tools, finish])
    return Grammar(name="ReAct step", rules=_rules(
        f'root ::= "Thought {step}: " {PROSE} "\\n" "Action {step}: " action',
        f"action ::= {action}",
    ))


def bon_level() -> Grammar:
    """AgentM3D's planner: one tag, ``[BON level-0]`` or ``[BON level-1]``, and nothing else."""
    return Grammar(name="planner tag", rules=_rules('root ::= "[BON level-" [01] "]"'))


def score_line(prefix: str) -> Grammar:
    """One line ``<prefix><number from 0 to 1>`` (the reward judge's ``SCORE: x``; with an empty
    prefix, the bare score of AgentM3D's critic)."""
    start = f"{literal(prefix)} " if prefix else ""
    return Grammar(name="score line", rules=_rules(f"root ::= {start}score", f"score ::= {CONFIDENCE}"))


def ten_point_verdict(phrase: str) -> Grammar:
    """Prose, then one line ``<phrase> <1..10>`` (``The score is 7``, ``The correctness score is 7``)."""
    return Grammar(name="ten-point score line", rules=_rules(
        f'root ::= {PROSE} "\\n" {literal(phrase + " ")} score',
        'score ::= "10" | [1-9]',
    ))


def likelihood_list(phrase: str, count: int) -> Grammar:
    """Prose, then one line ``<phrase> [p1, ..., pk]`` of ``count`` numbers from 0 to 1 (T2Agent's priors)."""
    items = " \", \" p" * (count - 1)
    return Grammar(name="likelihood list", rules=_rules(
        f'root ::= ({PROSE} "\\n")? {literal(phrase + " ")} "[" p{items} "]"',
        f"p ::= {CONFIDENCE}",
    ))


def tagged_turn(tools: Sequence[str], answers: Sequence[str], tools_open: bool = True, max_calls: int = 1) -> Grammar:
    """FactGuard's turn: ``<think>...</think>``, then either up to ``max_calls`` ``<tool_call>`` blocks
    with a JSON call of a known tool, or one ``<answer>...</answer>``; no tool call where tools are closed."""
    answer = f'"<answer>" ({choice(answers)}) "</answer>"'
    body = answer
    extra: list[str] = []
    if tools_open and tools:
        call = '"<tool_call>{\\"name\\": \\"" tool "\\", \\"arguments\\": " object "}</tool_call>"'
        body = f'calls | {answer}'
        extra = [
            f'calls ::= call ("\\n" call){{0,{max(0, max_calls - 1)}}}',
            f"call ::= {call}",
            f"tool ::= {choice(tools)}",
            *JSON_OBJECT,
        ]
    return Grammar(name="tagged turn", rules=_rules(
        f'root ::= "<think>" {PROSE} "</think>" "\\n" ({body})',
        *extra,
    ))


JSON_OBJECT = (
    'object ::= "{" ws ( member ("," ws member)* )? ws "}"',
    'member ::= string ":" ws value',
    'value ::= object | array | string | number | "true" | "false" | "null"',
    'array ::= "[" ws ( value ("," ws value)* )? ws "]"',
    'string ::= "\\"" ( [^"\\\\\\n] | "\\\\" ["\\\\/bfnrt] )* "\\""',
    'number ::= "-"? [0-9]+ ("." [0-9]+)?',
    'ws ::= " "?',
)
"""A JSON object, on one line: a tool's arguments, which the parser then checks against the tool's schema."""
