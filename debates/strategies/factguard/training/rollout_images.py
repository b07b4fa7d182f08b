"""The images of each rollout, kept so every forward pass over that rollout sees them again.

TRL's ``rollout_func`` returns token ids only: its forward passes (the reference model's log-probs
and the loss) would see the image placeholder tokens of a vision-language rollout without the
pixels behind them. So each rollout's image features (pixel values, image grids, per-token
multimodal types) are kept here, keyed by the rollout's tokens, and
:class:`~debates.strategies.factguard.training.trainer.FactGuardGRPOTrainer` hands them to every
forward pass over a batch: the overview frames of the first prompt and the ClipScout grid inside
the tool results, in the order their placeholders appear. Keyed by content, the lookup is right
whatever order TRL shuffles or splits the batch in.
"""

from __future__ import annotations

from typing import Any

from debates.strategies.factguard.training.rendering import TOKEN_FIELDS

Key = tuple[int, ...]


class RolloutImages:
    """Image features by rollout, for the rollouts of the latest generation."""

    def __init__(self) -> None:
        self._features: dict[Key, dict[str, Any]] = {}
        self._counts: dict[Key, int] = {}

    def clear(self) -> None:
        self._features.clear()
        self._counts.clear()

    def keep(self, ids: list[int], features: dict[str, Any], images: int) -> None:
        """Keep the features of a rollout whose prompt and completion ids are ``ids``."""
        if images:
            key = tuple(ids)
            self._features[key] = {k: (v[: len(ids)] if k in TOKEN_FIELDS else v) for k, v in features.items()}
            self._counts[key] = images

    def __len__(self) -> int:
        return len(self._features)

    def batch(self, input_ids: Any, attention_mask: Any) -> dict[str, Any]:
        """Forward-pass keyword arguments for a padded batch: per-image tensors concatenated in row order,
        per-token tensors placed under each row's real tokens, and ``num_images`` per row; {} without images."""
        import torch

        rows = [tuple(ids[mask.bool()].tolist()) for ids, mask in zip(input_ids, attention_mask)]
        found = [self._features.get(row) for row in rows]
        if not any(found):
            return {}
        out: dict[str, Any] = {"num_images": [self._counts.get(row, 0) for row in rows]}
        names = {name for features in found if features for name in features}
        for name in names:
            if name in TOKEN_FIELDS:
                column = torch.zeros_like(input_ids)
                for index, features in enumerate(found):
                    if features and name in features:
                        column[index, attention_mask[index].bool()] = features[name].to(column.device, column.dtype)
                out[name] = column
            else:
                parts = [features[name] for features in found if features and name in features]
                out[name] = torch.cat(parts).to(input_ids.device)
        return out
