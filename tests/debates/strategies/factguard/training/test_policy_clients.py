"""The policy as a chat client: what a vLLM server is sent (images inside the messages, the training template),
and a vision policy declaring vision so the loop attaches frames as images."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.train
pytest.importorskip("trl")

from autogen_core import Image as AgentImage  # noqa: E402
from autogen_core.models import AssistantMessage, SystemMessage, UserMessage  # noqa: E402
from PIL import Image  # noqa: E402

from debates.strategies.factguard.training.chat_template import training_template  # noqa: E402
from debates.strategies.factguard.training.policy_clients import PromptRenderer, VLLMPolicyClient  # noqa: E402
from m3d_agents.errors import BackendError  # noqa: E402
from tests.support.tiny_vision_model import tiny_vision_model  # noqa: E402


@pytest.fixture(scope="module")
def processor(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return tiny_vision_model(tmp_path_factory.mktemp("tiny-vl"))[1]


async def test_a_vllm_server_gets_the_conversation_with_its_images_and_the_training_template(processor: Any) -> None:
    sent: list[dict[str, Any]] = []
    answer = processor.tokenizer("<think>ok</think><answer>fake</answer>", add_special_tokens=False)["input_ids"]

    def chat(conversations: list[Any], **kwargs: Any) -> dict[str, Any]:
        sent.append({"conversations": conversations, **kwargs})
        return {"prompt_ids": [[1] * 37], "completion_ids": [answer + [processor.tokenizer.eos_token_id]]}

    template = training_template(processor, "tiny-qwen")
    client = VLLMPolicyClient(chat, processor, template, max_new_tokens=64, temperature=0.9)
    frame = Image.new("RGB", (32, 32), (10, 20, 30))
    messages = [SystemMessage(content="check posts"), UserMessage(content=["post: a flood", AgentImage(frame)], source="user"),
                AssistantMessage(content="<think>look</think>", source="verifier"), UserMessage(content="results", source="tool_desk")]
    result = await client.create(messages, extra_create_args={"max_tokens": 768, "temperature": 0.5})
    assert result.content == "<think>ok</think><answer>fake</answer>"
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (37, len(answer) + 1)
    [request] = sent
    assert (request["max_tokens"], request["temperature"], request["n"], request["chat_template"]) == (64, 0.5, 1, template.text)
    [conversation] = request["conversations"]
    assert [m["role"] for m in conversation] == ["system", "user", "assistant", "user"], "observations keep the user role"
    image = conversation[1]["content"][1]
    assert image["type"] == "image" and image["image"].tobytes() == frame.tobytes()
    assert client.model_info["vision"]


async def test_the_prompt_renderer_measures_but_never_answers(processor: Any) -> None:
    renderer = PromptRenderer(processor, training_template(processor, "tiny-qwen"))
    prompt = [UserMessage(content=["a flood", AgentImage(Image.new("RGB", (56, 56)))], source="user")]
    assert renderer.count_tokens(prompt) > renderer.count_tokens([UserMessage(content="a flood", source="user")])
    with pytest.raises(BackendError, match="measures prompts"):
        await renderer.create(prompt)


def test_a_text_policy_takes_its_pad_token_from_the_tokenizer_and_declares_no_vision(tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from debates.strategies.factguard.training.policy_clients import HFPolicyClient
    from tests.support.tiny_model import tiny_model

    folder = tiny_model(tmp_path / "tiny")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    client = HFPolicyClient(AutoModelForCausalLM.from_pretrained(folder), tokenizer, training_template(tokenizer, "tiny"))
    assert client.tokenizer is tokenizer and not client.model_info["vision"]


def test_a_vision_policy_reads_the_pad_token_from_the_processors_tokenizer(processor: Any) -> None:
    renderer = PromptRenderer(processor, training_template(processor, "tiny-qwen"))
    assert renderer.tokenizer is processor.tokenizer and renderer.tokenizer.pad_token_id is not None
