"""The AutoGen messages an exported SFT row stands for: the oracle that checks an export re-renders byte for byte."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autogen_core.models import LLMMessage

from m3d_agents.backends.recording import llm_messages


def rerender(messages: list[dict[str, Any]], images: list[str]) -> list[LLMMessage]:
    """What the loop sent for an exported ``hf`` row (without the final answer), images read from their files."""
    queue = list(images)
    recorded: list[dict[str, Any]] = []
    files: dict[str, bytes] = {}
    for message in messages:
        content = message["content"]
        if not isinstance(content, str):
            parts = []
            for part in content:
                if part["type"] == "image":
                    path = queue.pop(0)
                    files[path] = Path(path).read_bytes()
                    parts.append({"type": "image", "image": path})
                else:
                    parts.append(part)
            content = parts
        recorded.append({"role": message["role"], "content": content})
    return llm_messages(recorded, files)
