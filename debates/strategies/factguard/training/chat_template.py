"""Which chat template training renders conversations with, and the check that it marks the model's tokens.

Both trainers learn from the assistant's tokens only, and they find them through the template's
``{% generation %}`` marks (``return_assistant_tokens_mask``). Most shipped templates have none:
Qwen2.5-VL's does not, so its mask is all zeros and the loss is silently zero. So the template is
chosen once, here, in this order: a file the user gives; the model's own template when it is
marked; TRL's training variant of a template TRL knows (Qwen2.5-VL among them), which renders the
same text with the marks added; else a hard error naming the model and the template. And every
rendered conversation is checked: a mask without a single token is the same hard error, never a
zero loss.

The embedded 270M model ships no template at all; :data:`CHAT_TEMPLATE` is the project's own,
Gemma-style: system text at the start of the first user turn (Gemma has no system role), tool
results as user turns (as inference sends them), and ``[image]`` for an image, since that model
reads text only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from m3d_agents.errors import InputError

START, END = "<start_of_turn>", "<end_of_turn>"

CHAT_TEMPLATE = (
    "{{- bos_token -}}"
    "{%- set ns = namespace(system='') -%}"
    "{%- for message in messages -%}"
    "{%- if message['content'] is string -%}{%- set text = message['content'] -%}"
    "{%- else -%}{%- set text = namespace(v='') -%}"
    "{%- for part in message['content'] -%}"
    "{%- if part['type'] == 'text' -%}{%- set text.v = text.v + part['text'] -%}{%- else -%}{%- set text.v = text.v + '[image]' -%}{%- endif -%}"
    "{%- endfor -%}{%- set text = text.v -%}{%- endif -%}"
    "{%- if message['role'] == 'system' -%}{%- set ns.system = ns.system + text + '\\n\\n' -%}"
    "{%- elif message['role'] == 'assistant' -%}"
    "{{- '" + START + "model\\n' -}}{%- generation -%}{{- text + '" + END + "' -}}{%- endgeneration -%}{{- '\\n' -}}"
    "{%- else -%}"
    "{{- '" + START + "user\\n' + ns.system + text + '" + END + "\\n' -}}{%- set ns.system = '' -%}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '" + START + "model\\n' -}}{%- endif -%}"
)
PROJECT_TEMPLATE = "the project's Gemma-style template"


class ChatTemplateError(InputError):
    """The chat template cannot say which tokens the model wrote, so training would learn nothing."""

    def __init__(self, model: str, template: str, problem: str) -> None:
        self.model = model
        self.template = template
        super().__init__(
            "chat template",
            f"model {model}, {template}: {problem}; give a template whose assistant turns are wrapped in "
            "{% generation %} ... {% endgeneration %} with --chat-template FILE",
        )


@dataclass(frozen=True)
class TrainingTemplate:
    """The template text, where it came from (for errors and logs), and the model it is for."""

    text: str
    source: str
    model: str

    def require_tokens(self, mask: Sequence[int], what: str = "a training conversation") -> None:
        """Refuse a mask without a single assistant token: the loss over it would be zero."""
        if not any(mask):
            raise ChatTemplateError(self.model, self.source, f"the assistant mask of {what} has no tokens, so the loss would be zero")


def has_marks(template: str) -> bool:
    from trl.chat_template_utils import has_generation_markers

    return bool(has_generation_markers(template))


def own_template(processing_class: Any) -> str | None:
    template = getattr(processing_class, "chat_template", None)
    if isinstance(template, dict):
        template = template.get("default")
    return template if isinstance(template, str) and template.strip() else None


def trl_template_name(text: str) -> str:
    """The name TRL gives a training template it ships (``qwen2_5_vl``), for messages."""
    from trl import chat_template_utils

    for name, value in vars(chat_template_utils).items():
        if name.endswith("_training_chat_template") and value == text:
            return name.removesuffix("_training_chat_template")
    return "unnamed"


def training_template(processing_class: Any, model: str, template_file: Path | None = None) -> TrainingTemplate:
    """The template to train with (see the module docstring for the order); a template without marks is refused."""
    if template_file is not None:
        if not template_file.is_file():
            raise InputError("chat_template", f"{template_file} does not exist")
        text = template_file.read_text(encoding="utf-8")
        chosen = TrainingTemplate(text, f"the template file {template_file}", model)
        if not has_marks(text):
            raise ChatTemplateError(model, chosen.source, "it has no {% generation %} marks")
        return chosen
    own = own_template(processing_class)
    if own is None:
        raise ChatTemplateError(model, "no chat template", "the model ships none")
    if has_marks(own):
        return TrainingTemplate(own, "the model's own template", model)
    from trl.chat_template_utils import get_training_chat_template

    try:
        swapped = get_training_chat_template(processing_class)
    except ValueError:
        raise ChatTemplateError(model, "the model's own template", "it has no {% generation %} marks and TRL ships no "
                                "training variant of it") from None
    if swapped is None:
        return TrainingTemplate(own, "the model's own template", model)
    return TrainingTemplate(swapped, f"TRL's {trl_template_name(swapped)} training template", model)
