"""Every command against a model server that echoes the key it was sent, and a search of everything they
printed and wrote for that key (``tests/support/key_sweep.py``).

The echoing loopback server puts the request's ``Authorization`` header into each answer's free text and
into the error it gives a refused post. The commands: ``check`` (plain, ``--json``, with an image, refused),
``debate`` (``--save``, ``--json``), ``evaluate`` (``--record-trajectories``), ``report``, ``compare``
(``--out``, ``--json``), ``export-sft``, ``backends``, ``reproduce``, ``evidence`` (with page summaries,
when ../shared/data has the MR2 sample) and ``serve`` (a live debate saved for review, the review pages and
a study, over HTTP). Printed, on stdout, exactly:

    commands run: N (...)
    requests that carried the key to the echoing server: N
    printed output searched: N streams, N lines
    files searched: N (N lines)
    key appearances: 0

followed by where each appearance was, if any.

    PYTHONPATH=$PWD python benchmarks/key_sweep.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.key_sweep import sweep_every_command  # noqa: E402


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="m3d-key-sweep-") as folder:
        sweep = sweep_every_command(Path(folder))
    for line in sweep.lines_out():
        print(line)
    for where in sweep.where:
        print(f"  found in {where}")


if __name__ == "__main__":
    main()
