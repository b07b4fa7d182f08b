"""What a request becomes for its server: a turn format's grammar in the server's own field, and the
embedded model's limits. Both transports shape every request here, so they send the same body.

A grammar (:mod:`m3d_agents.grammars`) travels in ``extra_create_args`` under a key of ours and is
never sent as it is:

- llama.cpp's server takes GBNF in ``grammar``;
- vLLM (0.12 and later) takes it in ``structured_outputs: {grammar: ...}``, earlier versions in
  ``guided_grammar``;
- a server without grammars (OpenAI) gets no field at all: the request it gets is the one it got before.

The grammar's free prose (the rule ``prose``) is defined here: open-ended, or, on the embedded model,
at most a few sentences (``local.prose_sentences``), which is how a demonstration model's turn that
recites its prompt or repeats itself is stopped. The embedded model's answers are also capped at
``local.answer_tokens`` whatever a configuration asks, since a 270M model given 512 tokens spends
them repeating itself on a CPU that other jobs share.
"""

from __future__ import annotations

import re
from typing import Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field

from m3d_agents.grammars import GRAMMAR_ARG, PROSE

GrammarField = Literal["grammar", "structured_outputs", "guided_grammar", "none"]

OPEN_PROSE = f'{PROSE} ::= [^\\n]+ ("\\n"+ [^\\n]+)*'
"""Prose of any length, in paragraphs: what a capable model writes when a format leaves it free."""


def bounded_prose(sentences: int) -> str:
    """At most ``sentences`` sentences on one line; none holds a newline, a tag or an action bracket,
    so the format's own lines and tags can only come after the prose."""
    more = f' (" " sentence){{0,{sentences - 1}}}' if sentences > 1 else ""
    return f'{PROSE} ::= sentence{more}\nsentence ::= [^\\n.!?<\\[ ] [^\\n.!?<\\[]* [.!?]'


class RequestShaping(BaseModel):
    """How one backend's requests are shaped (see the module's docstring)."""

    model_config = ConfigDict(frozen=True)

    grammar_field: GrammarField = Field("none", description="where the server takes a grammar; none: it takes none")
    prose_sentences: int | None = Field(None, gt=0, description="the most sentences of a format's prose; None: open-ended")
    answer_tokens: int | None = Field(None, gt=0, description="a cap on every answer's max_tokens; None: no cap")

    def prose_rule(self) -> str:
        return bounded_prose(self.prose_sentences) if self.prose_sentences else OPEN_PROSE

    def shaped(self, extra_create_args: Mapping[str, Any], default_max_tokens: int | None) -> dict[str, Any]:
        """``extra_create_args`` as this server takes them: the grammar in its field (or dropped), the cap applied."""
        extra = dict(extra_create_args)
        rules = extra.pop(GRAMMAR_ARG, None)
        if isinstance(rules, str) and self.grammar_field != "none":
            grammar = f"{rules.rstrip()}\n{self.prose_rule()}\n" if _USES_PROSE.search(rules) else rules
            if self.grammar_field == "grammar":
                extra["grammar"] = grammar
            elif self.grammar_field == "structured_outputs":
                extra["structured_outputs"] = {**dict(extra.get("structured_outputs") or {}), "grammar": grammar}
            else:
                extra["guided_grammar"] = grammar
        if self.answer_tokens is not None:
            asked = extra.get("max_tokens", default_max_tokens)
            extra["max_tokens"] = min(int(asked), self.answer_tokens) if asked is not None else self.answer_tokens
        return extra


NO_SHAPING = RequestShaping()

_USES_PROSE = re.compile(rf"(?<![\w-]){PROSE}(?![\w-])")
