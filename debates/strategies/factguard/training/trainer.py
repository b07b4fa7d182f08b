"""TRL's GRPO trainer, with the images of each rollout in every forward pass (needs the ``train`` extra).

The one change to :class:`trl.GRPOTrainer`: when a forward pass gets no image features (the
``rollout_func`` path never has any), the batch's own are looked up in
:class:`~debates.strategies.factguard.training.rollout_images.RolloutImages` and passed on, so the
reference log-probs and the loss are computed over what the policy saw when it wrote the rollout.
"""

from __future__ import annotations

from typing import Any

from trl import GRPOTrainer

from debates.strategies.factguard.training.rollout_images import RolloutImages


class FactGuardGRPOTrainer(GRPOTrainer):
    def __init__(self, *args: Any, rollout_images: RolloutImages, **kwargs: Any) -> None:
        self.rollout_images = rollout_images
        super().__init__(*args, **kwargs)

    def _get_per_token_logps_and_entropies(self, model: Any, input_ids: Any, attention_mask: Any, logits_to_keep: int,
                                           *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("pixel_values") is None and len(self.rollout_images):
            kwargs.update(self.rollout_images.batch(input_ids, attention_mask))
        return super()._get_per_token_logps_and_entropies(model, input_ids, attention_mask, logits_to_keep, *args, **kwargs)
