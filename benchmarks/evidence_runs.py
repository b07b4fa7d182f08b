"""Evidence through ``m3d evaluate``: a live run that records, then a warm rerun that replays.

Runs ``m3d evaluate --config async --limit 10`` twice in this process, on MediaEval 2016 dev posts
(../shared/data), against loopback stand-ins: the providers of tests/support/provider_server.py
(Google Vision web detection, SerpAPI, Serper and the MediaWiki API, serving saved MR2 and
article-extraction pages) and the model stub of tests/support/schema_stub.py, whose answers
depend only on the prompt. The first run is ``--retrieval live`` and records into an evidence
store; the second is ``--retrieval replay`` on the same store and the same (now warm) response
cache. Figures, counted where the requests arrive:

- live evidence items per sample: the mean number of evidence items given to the agents;
- warm rerun model calls: requests that reached the model server during the rerun;
- warm rerun network fetches: requests that reached the provider server during the rerun.

    PYTHONPATH=$PWD python benchmarks/evidence_runs.py [--limit 10] [--config async]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from statistics import mean

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from typer.testing import CliRunner  # noqa: E402

from debates.cli.main import app  # noqa: E402
from debates.eval.records import read_rows  # noqa: E402
from tests.support.evidence_world import World, loopback_world  # noqa: E402

DATA = REPO.parent / "shared" / "data"


def evaluate(world: World, config: str, limit: int, mode: str, out: str) -> None:
    arguments = ["evaluate", "--config", config, "--limit", str(limit), *world.dataset_arguments(), "--backend", "stub",
                 "--config-file", str(world.config_file), "--retrieval", mode,
                 "--evidence-store", str(world.folder / "evidence.sqlite"), "--out", str(world.folder / out),
                 "--no-progress"]
    result = CliRunner().invoke(app, arguments)
    if result.exit_code != 0:
        raise SystemExit(f"m3d {' '.join(arguments)} failed:\n{result.output}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--config", default="async")
    args = parser.parse_args()
    for needed in ("mediaeval2016-dev", "article-extraction-benchmark", "mr2-sample"):
        if not (DATA / needed).is_dir():
            raise SystemExit(f"needs the shared data set at {DATA / needed}")
    with tempfile.TemporaryDirectory(prefix="evidence-runs-") as scratch:
        with loopback_world(Path(scratch), DATA / "mediaeval2016-dev", args.limit) as world:
            evaluate(world, args.config, args.limit, "live", "live")
            rows = read_rows(world.folder / "live" / "results.jsonl")[0]
            reports = [(r.verdict or {}).get("evidence_report") or {} for r in rows]
            items = mean(report.get("kept", 0) for report in reports) if reports else 0.0
            model_before, network_before = len(world.model.requests), world.provider_requests()
            evaluate(world, args.config, args.limit, "replay", "replay")
            model_calls = len(world.model.requests) - model_before
            fetches = world.provider_requests() - network_before
    print(f"live evidence items per sample: {items:.1f}")
    print(f"warm rerun model calls: {model_calls}")
    print(f"warm rerun network fetches: {fetches}")


if __name__ == "__main__":
    main()
