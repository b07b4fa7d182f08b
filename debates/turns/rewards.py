"""Rewards u for best-of-N candidates, on the common [0, 1] scale of :mod:`debates.turns.scoring`.

Two scorers share one interface: an LLM judge on the seat's own backend (the default, needs
nothing extra) and a transformers sequence-classification reward model run in this process.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

from autogen_core.models import AssistantMessage, LLMMessage, UserMessage

import prompts
from debates.debate_engine.config import RewardConfig
from debates.turns.scoring import logistic
from debates.debate_engine.turn_policy import TurnContext
from m3d_agents.asking import ask
from m3d_agents.backends.metering import MeteredClient
from m3d_agents.errors import InputError
from m3d_agents.grammars import score_line
from m3d_agents.parsing import parse_unit_score
from m3d_agents.registry import Registry


@dataclass
class Score:
    value: float | None
    error: str | None = None


class RewardScorer(Protocol):
    name: str
    counts_model_calls: bool

    async def score(
        self, client: MeteredClient, messages: Sequence[LLMMessage], candidate: str, context: TurnContext, retries: int
    ) -> Score: ...


class LLMJudgeReward:
    """Asks the seat's backend to rate a candidate from 0 to 1.

    The judge is shown the candidate's own conversation followed by the candidate, so the long
    prefix (post, image, evidence) is identical to the candidates' and a server's prefix cache
    can reuse it.
    """

    name = "llm_judge"
    counts_model_calls = True

    async def score(
        self, client: MeteredClient, messages: Sequence[LLMMessage], candidate: str, context: TurnContext, retries: int
    ) -> Score:
        judged = [
            *messages,
            AssistantMessage(content=candidate, source=context.seat.name),
            UserMessage(content=prompts.load("turns/reward_judge"), source="user"),
        ]
        answer = await ask(
            client.with_role("reward", agent="turns/reward_judge"),
            judged,
            parse_unit_score,
            retries=retries,
            create_kwargs={"extra_create_args": {"temperature": 0.0, **score_line("SCORE:").create_args()}},
        )
        return Score(answer.value, answer.error)


def messages_text(messages: Sequence[LLMMessage]) -> str:
    """The text of a conversation (images dropped): what a text-only reward model can read."""
    parts: list[str] = []
    for message in messages:
        content = getattr(message, "content", "")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(part for part in content if isinstance(part, str))
    return "\n\n".join(parts)


class LoadedRewardModel:
    """A tokenizer and a sequence-classification model with one output (a reward logit) or two."""

    def __init__(self, source: str, device: str = "cpu", max_length: int = 2048) -> None:
        try:
            from transformers import AutoModelForSequenceClassification, AutoTokenizer
        except ImportError as exc:  # pragma: no cover - transformers is a dependency
            raise InputError("reward.kind", "sequence_classifier needs the transformers package") from exc
        path = Path(source).expanduser()
        where = str(path) if path.exists() else source
        if path.exists() and not path.is_dir():
            raise InputError("reward.model", f"{path} is a file; give the directory that holds the model")
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(where, local_files_only=True)
            self.model = AutoModelForSequenceClassification.from_pretrained(where, local_files_only=True)
        except (OSError, ValueError) as exc:
            raise InputError(
                "reward.model",
                f"cannot load a reward model from {source!r}: it is neither a model directory nor a model id in the"
                f" local Hugging Face cache (nothing is downloaded at run time): {str(exc).splitlines()[0]}",
            ) from exc
        labels = int(self.model.config.num_labels)
        if labels not in (1, 2):
            raise InputError("reward.model", f"{source!r} has {labels} output classes; a reward model has 1 (a logit) or 2")
        self.model.eval()
        self.model.to(device)
        self.device = device
        positions = getattr(self.model.config, "max_position_embeddings", None)
        self.max_length = min(max_length, positions) if isinstance(positions, int) and positions > 0 else max_length
        self._lock = threading.Lock()

    def _encode(self, question: str, answer: str) -> Any:
        if getattr(self.tokenizer, "chat_template", None):
            chat = [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]
            text = self.tokenizer.apply_chat_template(chat, tokenize=False)
            return self.tokenizer(text, truncation=True, max_length=self.max_length, return_tensors="pt")
        return self.tokenizer(
            question, answer, truncation="only_first", max_length=self.max_length, return_tensors="pt"
        )

    def reward(self, question: str, answer: str) -> float:
        """The reward on [0, 1]: the logistic of a single logit, or the positive class's probability."""
        import torch

        with self._lock, torch.no_grad():
            encoded = {k: v.to(self.device) for k, v in self._encode(question, answer).items()}
            logits = self.model(**encoded).logits[0].float()
        if logits.numel() == 1:
            return logistic(float(logits[0]))
        return float(torch.softmax(logits, dim=-1)[1])


_loaded: dict[tuple[str, str, int], LoadedRewardModel] = {}
_loading = threading.Lock()


def load_reward_model(source: str, device: str = "cpu", max_length: int = 2048) -> LoadedRewardModel:
    """Load once per process: samples share the model instead of reading gigabytes per sample."""
    key = (source, device, max_length)
    with _loading:
        if key not in _loaded:
            _loaded[key] = LoadedRewardModel(source, device, max_length)
        return _loaded[key]


class SequenceClassifierReward:
    name = "sequence_classifier"
    counts_model_calls = False

    def __init__(self, config: RewardConfig) -> None:
        assert config.model is not None
        self.model = load_reward_model(config.model, config.device, config.max_length)

    async def score(
        self, client: MeteredClient, messages: Sequence[LLMMessage], candidate: str, context: TurnContext, retries: int
    ) -> Score:
        value = await asyncio.to_thread(self.model.reward, messages_text(messages), candidate)
        return Score(value)


REWARDS: Registry[Callable[[RewardConfig], RewardScorer]] = Registry("reward", field="reward.kind")
"""Reward scorers by name, each a factory from the seat's reward settings."""
REWARDS.add("llm_judge", lambda config: LLMJudgeReward(), "the seat's own backend rates the candidate from 0 to 1")
REWARDS.add("sequence_classifier", SequenceClassifierReward, "a local transformers reward model")


def build_reward_scorer(config: RewardConfig) -> RewardScorer:
    return REWARDS.get(config.kind)(config)
