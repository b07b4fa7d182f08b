"""What reproducing each paper's table costs per sample, in model calls and tokens, from scripted runs.

Every table's rows run through ``m3d reproduce`` exactly as a user runs them, on small generated
data sets in each data set's format (24 MMFakeBench posts and 24 NewsCLIPpings pairs over the
fixtures' images, 8 FakeSV posts with generated clips, RW-Post's 3-claim fixture), against a
scripted loopback model (tests/support/reproduce_script.py) with retrieval off. The model is scripted, so the figures
count calls and tokens, never quality, and the accuracies printed are those of a script:

- tokens are the characters of the text sent and received over four, plus 765 prompt tokens per
  image attached (GPT-4o's count for a 1024-pixel image at high detail);
- the script's answers are picked by a hash of the request, so early stops (the cascade's first
  distortion, the tree search's pruning, a debate's consensus) happen on some posts and not on
  others; a real model's answers move the calls per sample within each configuration's bounds;
- with retrieval off, no search result enters a prompt: evidence makes real prompts longer.

    python benchmarks/reproduce_costs.py [--show t2agent-table1] [--out DIR]

Prints one line per configuration (calls, prompt and completion tokens per sample), then the table
named by ``--show`` as ``m3d reproduce`` prints it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from typer.testing import CliRunner

from debates.cli.main import app
from debates.eval.papers.paper_tables import load_table, missing_configs
from debates.eval.score.prices import HOSTED
from debates.config_loader import available_configs
from tests.support.paths import REPO
from tests.support.reproduce_script import backend_file, scripted_table_server

FIXTURES = REPO / "tests" / "fixtures" / "datasets"
POSTS = 24
TOPICS = ["a warehouse fire", "a choir at the cathedral", "protesters on the bridge", "a flooded street", "the lantern festival",
          "a marathon finish", "a new bridge opening", "a storm over the harbour"]


def image_posts(folder: Path) -> str:
    """MMFakeBench's format: POSTS posts over the fixture's three images (real, textual, cross-modal)."""
    images = [("/real/visualnews/vn_1.jpg", "original"), ("/fake/chatgpt_match_val/match_2.png", "textual_veracity_distortion"),
              ("/fake/chatgpt_match_val/match_3.png", "mismatch")]
    posts = [{"text": f"Post {i}: photographs of {TOPICS[i % len(TOPICS)]}, day {i}.", "image_path": images[i % 3][0],
              "gt_answers": "True" if i % 3 == 0 else "Fake", "fake_cls": images[i % 3][1]} for i in range(POSTS)]
    (folder / "source").mkdir(parents=True, exist_ok=True)
    (folder / "source" / "MMFakeBench_val.json").write_text(json.dumps(posts))
    return f"mmfakebench:{folder / 'source' / 'MMFakeBench_val.json'}"


def caption_pairs(folder: Path) -> str:
    """NewsCLIPpings' format: POSTS caption-image pairs over the fixture's two images, every other one out of context."""
    images = ["./bbc/images/0001/11.jpg", "./guardian/images/0002/22.jpg"]
    records = [{"id": i, "caption": f"Reporters cover {TOPICS[i % len(TOPICS)]} on day {i}.", "source": "bbc",
                "image_path": images[i % 2]} for i in range(1, POSTS + 1)]
    pairs = [{"id": i, "image_id": i if i % 2 else (i % POSTS) + 1, "falsified": not i % 2} for i in range(1, POSTS + 1)]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "data.json").write_text(json.dumps(records))
    (folder / "val.json").write_text(json.dumps({"annotations": pairs}))
    return f"newsclippings:{folder / 'val.json'}"


def video_posts(folder: Path) -> str:
    """FakeSV's format: eight short-video posts, each with a generated six-second clip (the fixture's
    own clip is an empty file, kept to test that error)."""
    from tests.support.videos import make_clip

    (folder / "videos").mkdir(parents=True, exist_ok=True)
    rows = []
    for i in range(8):
        make_clip(folder / "videos" / f"v{i}.mp4")
        title = f"Video of {TOPICS[i % len(TOPICS)]}"
        rows.append(json.dumps({"video_id": f"v{i}", "title": title, "keywords": TOPICS[i % len(TOPICS)],
                                "annotation": "假" if i % 2 else "真"}, ensure_ascii=False))
    (folder / "data.json").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return f"fakesv:{folder / 'data.json'}"


def runs(out: Path) -> list[tuple[str, str, list[str]]]:
    images = image_posts(out / "mmfakebench")
    captions = caption_pairs(out / "newsclippings")
    videos = video_posts(out / "fakesv")
    rwpost = f"rwpost:{FIXTURES / 'AgentFact/Dataset_RW-Post/demo/demo.jsonl'}"
    on_images = ["-o", f"image_root={FIXTURES / 'MMFakeBench_val'}"]
    on_captions = ["-o", f"visualnews={out / 'newsclippings' / 'data.json'}",
                   "-o", f"image_root={FIXTURES / 'newsclippings/visual_news/origin'}"]
    return [
        ("agentm3d-table1", images, on_images), ("t2agent-table1", images, on_images), ("t2agent-table3", images, on_images),
        ("t2agent-table6", images, on_images), ("t2agent-table7", images, on_images),
        ("llm-consensus-table1", captions, on_captions), ("llm-consensus-table2", captions, on_captions),
        ("agentfact-table3", rwpost, []), ("agentfact-table5", rwpost, []),
        ("factguard-table1", videos, ["-o", f"video_root={out / 'fakesv' / 'videos'}"]),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--show", default="t2agent-table1", help="the table to print in full")
    parser.add_argument("--out", type=Path, default=None, help="keep the run folders here (default: a temporary folder)")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="m3d-reproduce-"))
    costs: dict[str, tuple[str, int, float, float, float]] = {}
    shown = ""
    with scripted_table_server() as server:
        settings = out / "m3d.yaml"
        out.mkdir(parents=True, exist_ok=True)
        settings.write_text(backend_file(server.base_url))
        for table, dataset, options in runs(out):
            lacking = missing_configs(load_table(table), available_configs())
            if lacking:
                print(f"{table}: skipped, this build lacks {', '.join(lacking)}")
                continue
            folder = out / table
            result = CliRunner().invoke(app, [
                "reproduce", table, "--dataset", dataset, *options, "--backend", "scripted", "--config-file", str(settings),
                "--out", str(folder), "--retrieval", "off", "--no-progress"], env={"COLUMNS": "250"})
            if result.exit_code != 0:
                sys.exit(f"{table}: m3d reproduce failed:\n{result.output}")
            if table == args.show:
                shown = result.stdout
            data = json.loads((folder / "table.json").read_text())
            for row in data["rows"]:
                if row["config"] and row["config"] not in costs:
                    costs[row["config"]] = (data["setting"]["dataset_kind"], row["samples"], row["calls_per_sample"],
                                            row["prompt_tokens_per_sample"], row["completion_tokens_per_sample"])
    gpt4o = HOSTED["gpt-4o"]
    print()
    print("Scripted runs (a loopback model, retrieval off; tokens = characters / 4 + 765 per image);")
    print("the last column prices those tokens at GPT-4o's list price (USD 2.50 in, 10.00 out per 1M tokens):")
    print(f"{'configuration':<28} {'data set':<14} {'samples':>7} {'calls/sample':>13} {'prompt tok/sample':>18} "
          f"{'completion tok/sample':>22} {'GPT-4o $/sample':>16}")
    for config, (kind, samples, calls, prompt, completion) in costs.items():
        dollars = gpt4o.cost(int(round(prompt)), int(round(completion)))
        print(f"{config:<28} {kind:<14} {samples:>7} {calls:>13.1f} {prompt:>18.0f} {completion:>22.0f} {dollars:>16.4f}")
    if shown:
        print()
        print(f"$ m3d reproduce {args.show} ... (scripted model, generated posts)")
        print(shown, end="")
    if args.out is None:
        print(f"\nrun folders in {out}", file=sys.stderr)


if __name__ == "__main__":
    os.environ.setdefault("COLUMNS", "250")
    main()
