"""Rewards: a transformers reward model loaded from a local directory, on the unit scale, with no model calls."""

from __future__ import annotations

from pathlib import Path

import pytest

from debates.session import run_sample
from m3d_agents.errors import InputError
from tests.support.selector_script import SelectorScript
from tests.support.debate import seat_pool
from tests.support.cascade import M3D_SAMPLE, bon_config, finish


# --- a reward model loaded from a local directory -------------------------------------------------


def tiny_reward_model(folder: Path, num_labels: int = 1) -> Path:
    """A randomly initialised two-layer BERT classifier with a 30-word vocabulary, saved like a real one."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "photo", "is", "fake", "real", "finish", "text",
             "image", "refute", "support", "post", "storm", "statue", "liberty", "a", "of", "and", "[", "]", ".",
             "score", "claim", "check", "my", "part"]
    (folder / "vocab.txt").write_text("\n".join(words) + "\n")
    BertTokenizer(str(folder / "vocab.txt")).save_pretrained(folder)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(words), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=128, num_labels=num_labels)
    BertForSequenceClassification(config).save_pretrained(folder)
    return folder


def test_reward_model_loads_from_a_local_directory_and_scores_on_the_unit_scale(tmp_path: Path) -> None:
    from debates.turns.rewards import LoadedRewardModel

    model = LoadedRewardModel(str(tiny_reward_model(tmp_path / "grm")), max_length=64)
    first = model.reward("Is the storm photo of the statue of liberty real?", "the photo is fake. Finish[TEXT REFUTE]")
    again = model.reward("Is the storm photo of the statue of liberty real?", "the photo is fake. Finish[TEXT REFUTE]")
    other = model.reward("Is the storm photo of the statue of liberty real?", "the photo is real")
    assert 0.0 < first < 1.0 and first == again and other != first
    two_class = LoadedRewardModel(str(tiny_reward_model(tmp_path / "two", num_labels=2)))
    assert 0.0 < two_class.reward("the claim", "real") < 1.0
    with pytest.raises(InputError, match="3 output classes"):
        LoadedRewardModel(str(tiny_reward_model(tmp_path / "three", num_labels=3)))
    with pytest.raises(InputError, match="nothing is downloaded at run time"):
        LoadedRewardModel(str(tmp_path / "missing"))
    with pytest.raises(InputError, match="local Hugging Face cache"):
        LoadedRewardModel("someone/not-a-cached-model")


async def test_best_of_n_with_a_sequence_classifier_reward_makes_no_reward_calls(tmp_path: Path) -> None:
    folder = tiny_reward_model(tmp_path / "grm")
    script = SelectorScript(answers={"text": lambda i: finish("TEXT REFUTE", f"the photo is fake {'. ' * i}")})
    config = bon_config("mmd-agent-decoupled-bon", n=3, reward={"kind": "sequence_classifier", "model": str(folder)})
    config, pool, _ = seat_pool(config, {"text_agent": script})
    verdict = await run_sample(config, M3D_SAMPLE, pool)
    turn = verdict.diagnostics.selection.best_of_n_turns[0]
    assert turn.reward == "sequence_classifier" and len(turn.scores) == 3
    assert all(0.0 < s.u < 1.0 for s in turn.scores)
    assert "reward" not in verdict.accounting.by_role and verdict.accounting.by_role["candidate"].calls == 3
