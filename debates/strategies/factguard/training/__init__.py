"""Training: FactGuard's rewards, trajectory export for SFT, and GRPO/SFT entry points on TRL.

Only :mod:`debates.strategies.factguard.training.grpo` and :mod:`debates.strategies.factguard.training.sft` need the ``train`` extra (trl,
datasets, accelerate, gguf); rewards and exports work without it.
"""
