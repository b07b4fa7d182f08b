"""Training: FactGuard's rewards, trajectory export for SFT, and vision-language SFT and GRPO on TRL.

Rewards, trajectories and the export work without extras; the trainers, the rendering and the
policy clients need the ``train`` extra (trl, datasets, accelerate, peft, gguf), and DeepSpeed,
FlashAttention and vLLM on GPU machines. The whole path: docs/guides/training-factguard.md.
"""
