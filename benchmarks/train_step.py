"""One real GRPO step on the embedded 270M model, through the FactGuard loop on the example video post.

Prints the wall time of the step, the peak memory of the process, and the mean of each reward term
over the group. The model is converted from the PyPI GGUF once into the cache (about 1 GB) by
``m3d train prepare-local-model``; that conversion is timed separately and not counted in the step.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/train_step.py [--generations 4] [--tokens 32]
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generations", type=int, default=4, help="rollouts in the group (the paper uses 8)")
    parser.add_argument("--tokens", type=int, default=32, help="tokens per model turn (the paper allows 768)")
    args = parser.parse_args()

    from debates.config_loader import load_config
    from debates.strategies.factguard.training.grpo import GRPOSettings, train_grpo
    from debates.strategies.factguard.training.local_model import prepare_local_model
    from m3d_agents.sample import Sample, VideoRef

    started = time.perf_counter()
    model_dir = prepare_local_model()
    print(f"model folder: {model_dir} (ready in {time.perf_counter() - started:.1f} s)")
    clip = REPO / "examples" / "video" / "flood.mp4"
    if not clip.is_file():
        sys.exit(f"{clip} is missing; run scripts/make_example_video.py")
    sample = Sample(
        text=(REPO / "examples" / "video" / "caption.txt").read_text().strip(),
        video=VideoRef(path=clip, transcript=(REPO / "examples" / "video" / "transcript.txt").read_text().strip()),
        gold_label="fake",
    )
    settings = GRPOSettings(num_generations=args.generations, max_completion_length=args.tokens, max_steps=1)
    with tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        trainer = train_grpo(model_dir, [sample], load_config("factguard"), Path(out), settings)
        wall = time.perf_counter() - started
    log = next(entry for entry in trainer.state.log_history if "loss" in entry)
    peak_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / 1024
    terms = ", ".join(f"{term} {log[f'rewards/{term}/mean']:+.3f}" for term in ("accuracy", "format", "risk", "tool"))
    print(f"GRPO step (G={args.generations}, {args.tokens} tokens a turn, beta {settings.beta}): wall {wall:.1f} s, "
          f"peak RSS {peak_gib:.2f} GiB, loss {log['loss']:.4f}")
    print(f"rewards (group mean): {terms}; total {log['reward']:+.3f}; "
          f"completion tokens (model's own) {log['completions/mean_length']:.1f}")


if __name__ == "__main__":
    main()
