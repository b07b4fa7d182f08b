"""Training: FactGuard's rewards, trajectory export for SFT, and GRPO/SFT entry points on TRL.

Only :mod:`debates.training.grpo` and :mod:`debates.training.sft` need the ``train`` extra (trl,
datasets, accelerate, gguf); rewards and exports work without it.
"""
