"""Model calls as plain chat messages, and back: what a trajectory records and what an SFT export re-renders.

A recorded call must re-render to exactly the request the model got, or training data drifts from
the prompts the product sends. So the record keeps every message's role, text, order and source
(the source tells an observation from a user turn), and each image as the PNG bytes AutoGen sends,
named by their SHA-256; :func:`llm_messages` rebuilds the AutoGen messages from that record.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any, Mapping, Sequence

from autogen_core import FunctionCall, Image
from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    SystemMessage,
    UserMessage,
)

ChatMessage = dict[str, Any]


def image_name(sha256: str) -> str:
    return f"images/{sha256}.png"


def chat_messages(messages: Sequence[LLMMessage], images: dict[str, bytes]) -> list[ChatMessage]:
    """AutoGen messages as JSON-ready chat messages; image bytes go into ``images`` keyed by hash."""
    out: list[ChatMessage] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            out.append({"role": "system", "content": message.content})
        elif isinstance(message, UserMessage):
            out.append({"role": "user", "content": _content(message.content, images), "source": message.source})
        elif isinstance(message, AssistantMessage):
            if isinstance(message.content, str):
                out.append({"role": "assistant", "content": message.content, "source": message.source})
            else:
                calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.content]
                out.append({"role": "assistant", "content": message.thought, "tool_calls": calls, "source": message.source})
        elif isinstance(message, FunctionExecutionResultMessage):
            out.extend(
                {"role": "tool", "content": r.content, "tool_call_id": r.call_id, "name": r.name, "is_error": r.is_error}
                for r in message.content
            )
        else:
            raise TypeError(f"cannot record a message of type {type(message).__name__}")
    return out


def _content(content: str | list[Any], images: dict[str, bytes]) -> str | list[dict[str, str]]:
    if isinstance(content, str):
        return content
    parts: list[dict[str, str]] = []
    for part in content:
        if isinstance(part, str):
            parts.append({"type": "text", "text": part})
        elif isinstance(part, Image):
            data = base64.b64decode(part.to_base64())
            sha = hashlib.sha256(data).hexdigest()
            images.setdefault(sha, data)
            parts.append({"type": "image", "image": image_name(sha)})
        else:
            raise TypeError(f"cannot record a message part of type {type(part).__name__}")
    return parts


def llm_messages(messages: Sequence[Mapping[str, Any]], images: Mapping[str, bytes]) -> list[LLMMessage]:
    """The AutoGen messages a recorded call was made with (images looked up by their file name)."""
    out: list[LLMMessage] = []
    pending_results: list[FunctionExecutionResult] = []
    for message in messages:
        role = message["role"]
        if role != "tool" and pending_results:
            out.append(FunctionExecutionResultMessage(content=pending_results))
            pending_results = []
        if role == "system":
            out.append(SystemMessage(content=message["content"]))
        elif role == "user":
            content = message["content"]
            if not isinstance(content, str):
                content = [
                    part["text"] if part["type"] == "text" else Image.from_base64(base64.b64encode(images[part["image"]]).decode())
                    for part in content
                ]
            out.append(UserMessage(content=content, source=message.get("source", "user")))
        elif role == "assistant":
            if "tool_calls" in message:
                calls = [FunctionCall(id=c["id"], name=c["name"], arguments=c["arguments"]) for c in message["tool_calls"]]
                out.append(AssistantMessage(content=calls, thought=message.get("content"), source=message.get("source", "assistant")))
            else:
                out.append(AssistantMessage(content=message["content"], source=message.get("source", "assistant")))
        elif role == "tool":
            pending_results.append(FunctionExecutionResult(
                content=message["content"], call_id=message.get("tool_call_id", ""), name=message.get("name", ""),
                is_error=bool(message.get("is_error")),
            ))
        else:
            raise ValueError(f"unknown role {role!r} in a recorded message")
    if pending_results:
        out.append(FunctionExecutionResultMessage(content=pending_results))
    return out
