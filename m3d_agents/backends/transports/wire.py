"""The OpenAI chat-completions wire format as both transports must send and read it.

The lean client builds its request bodies here. The SDK transport lets AutoGen build them, but
first puts each request in the shape that makes AutoGen's body the same as ours (see
:mod:`m3d_agents.backends.transports.sdk`), and checks answers with the same rules.
"""

from __future__ import annotations

import json
from typing import Any, Literal, Sequence

from autogen_core import FunctionCall, Image
from autogen_core.models import (
    AssistantMessage,
    FinishReasons,
    FunctionExecutionResultMessage,
    LLMMessage,
    ModelInfo,
    RequestUsage,
    SystemMessage,
    UserMessage,
)
from autogen_core.tools import Tool, ToolSchema
from pydantic import BaseModel

# Imported for what it does to AutoGen's Image: a picture in a body is encoded once, not on every call.
import m3d_agents.media.message_images  # noqa: F401
from m3d_agents.backends.transports.retry import without_secrets
from m3d_agents.backends.transports.schemas import json_schema_of
from m3d_agents.errors import AnswerRefused, BackendError

FINISH_REASONS: dict[str, FinishReasons] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "function_calls",
    "function_call": "function_calls",
    "content_filter": "content_filter",
}


def check_sendable(messages: Sequence[LLMMessage], model_info: ModelInfo) -> None:
    """Refuse, before anything is sent, what the backend's model cannot take."""
    vision = bool(model_info.get("vision"))
    for message in messages:
        if not isinstance(message, (SystemMessage, UserMessage, AssistantMessage, FunctionExecutionResultMessage)):
            raise BackendError(f"cannot send a message of type {type(message).__name__}")
        if isinstance(message, UserMessage) and not isinstance(message.content, str):
            for part in message.content:
                if isinstance(part, Image):
                    if not vision:
                        raise BackendError("the model of this backend has no vision, but a message carries an image")
                elif not isinstance(part, str):
                    raise BackendError(f"a user message carries a part of unsupported type {type(part).__name__}")


def merged_system_messages(messages: Sequence[LLMMessage], model_info: ModelInfo) -> list[LLMMessage]:
    """Every system message merged, in order, at the front, for servers that take one.

    Most chat templates of open models accept a single system message, and only as the first;
    a debate adds system messages along the way (the protocol's instructions, the desk's notes).
    """
    if model_info.get("multiple_system_messages"):
        return list(messages)
    systems = [m.content for m in messages if isinstance(m, SystemMessage)]
    rest: list[LLMMessage] = [m for m in messages if not isinstance(m, SystemMessage)]
    return [SystemMessage(content="\n\n".join(systems)), *rest] if systems else rest


def _user_content(message: UserMessage) -> str | list[dict[str, Any]]:
    if isinstance(message.content, str):
        return message.content
    return [
        {"type": "text", "text": part} if isinstance(part, str) else part.to_openai_format()
        for part in message.content
    ]


def _assistant(message: AssistantMessage) -> dict[str, Any]:
    if isinstance(message.content, str):
        return {"role": "assistant", "content": message.content}
    calls = [
        {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
        for call in message.content
    ]
    return {"role": "assistant", "content": message.thought, "tool_calls": calls}


def openai_messages(messages: Sequence[LLMMessage], model_info: ModelInfo) -> list[dict[str, Any]]:
    """AutoGen messages as the OpenAI wire format (system messages merged where the server takes one)."""
    check_sendable(messages, model_info)
    wire: list[dict[str, Any]] = []
    for message in merged_system_messages(messages, model_info):
        if isinstance(message, SystemMessage):
            wire.append({"role": "system", "content": message.content})
        elif isinstance(message, UserMessage):
            wire.append({"role": "user", "content": _user_content(message)})
        elif isinstance(message, AssistantMessage):
            wire.append(_assistant(message))
        elif isinstance(message, FunctionExecutionResultMessage):
            wire.extend({"role": "tool", "tool_call_id": r.call_id, "content": r.content} for r in message.content)
    return wire


def tool_specs(tools: Sequence[Tool | ToolSchema]) -> list[dict[str, Any]]:
    """Tools as OpenAI function specs, every field spelled out as the OpenAI SDK spells it."""
    specs = []
    for tool in tools:
        schema = tool.schema if isinstance(tool, Tool) else tool
        function = {
            "name": schema["name"],
            "description": schema.get("description", ""),
            "parameters": schema.get("parameters", {}),
            "strict": schema.get("strict", False),
        }
        specs.append({"type": "function", "function": function})
    return specs


def tool_choice_spec(choice: Tool | Literal["auto", "required", "none"]) -> Any:
    if isinstance(choice, Tool):
        return {"type": "function", "function": {"name": choice.schema["name"]}}
    return choice


def response_format(json_output: bool | type[BaseModel] | None) -> dict[str, Any] | None:
    """``json_output`` as a raw ``response_format``: a bare JSON object, or a named JSON schema."""
    if json_output is True:
        return {"type": "json_object"}
    if isinstance(json_output, type) and issubclass(json_output, BaseModel):
        return {"type": "json_schema", "json_schema": {"name": json_output.__name__, "schema": json_schema_of(json_output)}}
    return None


def completion_problem(data: Any) -> str | None:
    """Why a parsed body is not a chat completion, or None when it is one (every choice is checked)."""
    try:
        choices = data["choices"]
        choices[0]["message"]
    except (KeyError, IndexError, TypeError):
        return "not a chat completion"
    if not isinstance(choices, list):
        return "not a chat completion"
    for choice in choices:
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            return "not a chat completion"
        if not all(_is_text(message.get(part)) for part in ("content", "reasoning_content")):
            return "a chat completion whose message is not text"
        calls = message.get("tool_calls") or []
        if not isinstance(calls, list):
            return "a chat completion with an unreadable tool call"
        for call in calls:
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict) or not isinstance(function.get("name"), str) or not _is_text(function.get("arguments")):
                return "a chat completion with an unreadable tool call"
    return None


def _is_text(value: Any) -> bool:
    """Text as servers send it: a string, null, or (some servers) a list of text parts."""
    return value is None or isinstance(value, str) or (
        isinstance(value, list) and all(isinstance(p, dict) and isinstance(p.get("text"), str) for p in value)
    )


def not_a_completion(url: str, data: Any, problem: str, key: str | None) -> BackendError:
    """Not retried, unlike a body that is not JSON: JSON of another shape means a wrong URL or server, every time."""
    return BackendError(f"the model endpoint {url} sent a body that is {problem}: {without_secrets(str(data)[:200], key)}")


ChoiceContent = tuple[str | list[FunctionCall], FinishReasons, str | None]
"""One choice of a completion: its content, finish reason and reasoning text."""


def _read_choice(choice: dict[str, Any]) -> ChoiceContent:
    message = choice["message"]
    reason = FINISH_REASONS.get(str(choice.get("finish_reason")), "unknown")
    thought = _text(message.get("reasoning_content")) or None
    calls = message.get("tool_calls") or []
    if calls:
        content: str | list[FunctionCall] = [
            FunctionCall(id=str(c.get("id", "")), name=c["function"]["name"], arguments=c["function"].get("arguments") or "{}")
            for c in calls
        ]
        return content, "function_calls", _text(message.get("content")) or thought
    return _text(message.get("content")), reason, thought


def _text(value: Any) -> str:
    """A message's text (checked by :func:`completion_problem` to be text of one of the shapes servers send)."""
    if isinstance(value, list):
        return "".join(part["text"] for part in value)
    return value or ""


def read_choices(data: Any, url: str, key: str | None = None) -> tuple[list[ChoiceContent], RequestUsage]:
    """Every choice of a chat-completion body (in ``index`` order) and the request's usage; a clear error if it is not one."""
    problem = completion_problem(data)
    if problem is not None:
        raise not_a_completion(url, data, problem, key)
    usage = read_usage(data, url)
    ordered = sorted(enumerate(data["choices"]), key=lambda pair: (_index(pair[1]), pair[0]))
    return [_read_choice(choice) for _, choice in ordered], usage


def read_usage(data: dict[str, Any], url: str) -> RequestUsage:
    """The request's usage, each count checked (:func:`token_count`); none given counts as zero."""
    usage_data = data.get("usage") or {}
    if not isinstance(usage_data, dict):
        raise AnswerRefused(url, "its usage is not an object of token counts")
    return RequestUsage(
        prompt_tokens=token_count(usage_data.get("prompt_tokens"), "prompt_tokens", url),
        completion_tokens=token_count(usage_data.get("completion_tokens"), "completion_tokens", url),
    )


MAX_TOKENS_PER_CALL = 100_000_000
"""More tokens than any model reads or writes in one call; a larger count is a broken server's."""


def token_count(value: Any, name: str, url: str) -> int:
    """A usage count as a whole number of tokens; a count that cannot be true (negative, fractional,
    not a number, beyond any model) refuses the answer, since costs and budgets are computed from it."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise AnswerRefused(url, f"its usage gives {name} as {str(value)[:40]!r}, not a number of tokens")
    if isinstance(value, float) and not value.is_integer():
        raise AnswerRefused(url, f"its usage gives {name} = {value}, not a whole number of tokens")
    if not 0 <= value <= MAX_TOKENS_PER_CALL:
        raise AnswerRefused(url, f"its usage gives {name} = {value}, an impossible number of tokens")
    return int(value)


def _index(choice: dict[str, Any]) -> int:
    value = choice.get("index")
    return value if isinstance(value, int) else 0


def read_completion(
    data: Any, url: str, key: str | None = None
) -> tuple[str | list[FunctionCall], FinishReasons, RequestUsage, str | None]:
    """Content, finish reason, usage and reasoning text of a chat-completion body's first choice; a clear error if it is not one."""
    choices, usage = read_choices(data, url, key)
    content, reason, thought = choices[0]
    return content, reason, usage, thought


def estimated_tokens(messages: Sequence[LLMMessage], tools: Sequence[Tool | ToolSchema], model_info: ModelInfo) -> int:
    """An estimate (four characters a token): the server's tokenizer is not available to a client."""
    text = json.dumps(openai_messages(messages, model_info)) + json.dumps(tool_specs(tools))
    return len(text) // 4


def added(a: RequestUsage, b: RequestUsage) -> RequestUsage:
    return RequestUsage(prompt_tokens=a.prompt_tokens + b.prompt_tokens, completion_tokens=a.completion_tokens + b.completion_tokens)
