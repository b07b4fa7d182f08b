"""The chat template training uses for text models: Gemma-style turns with the assistant's tokens marked.

The GGUF build of the embedded 270M model ships no chat template, and TRL's assistant-only loss
needs ``{% generation %}`` around what the model wrote, so the project ships its own. System text
goes at the start of the first user turn (Gemma has no system role); tool results are user turns,
which keeps them out of the loss; images in text-only training become ``[image]``.
"""

from __future__ import annotations

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
