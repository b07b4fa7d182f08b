"""A run in a process of its own, for the tests of what the parser pool leaves behind.

    python -m tests.support.isolation_script run TRACE_DIR       # one check over a recorded trace, then report
    python -m tests.support.isolation_script hold TRACE_DIR      # the same, then a page that never ends, held open

``run`` prints one JSON line: the parsing libraries the process itself imported, the verdict's
lost items, and the pool's worker ids. ``hold`` prints the worker ids once a page hangs in one of
them, then waits inside the run session, to be interrupted (Ctrl-C) or killed (``kill -9``).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from debates.config_loader import load_config, with_overrides
from debates.session import RunSession
from m3d_agents.backends.factory import BackendPool
from m3d_agents.isolation import IsolationSettings, using
from tests.support.scripted import ScriptedClient, scripted_backend

PARSERS = ("newspaper", "trafilatura", "lxml.html", "lxml.etree")
ANSWER = '{"rationale": "read the pages", "label": "true", "confidence": 0.6}'


async def main(mode: str, trace: Path) -> None:
    import retrieval.extract
    from tests.support.hostile_parsers import page_or_failure

    retrieval.extract.page_from_body = page_or_failure  # type: ignore[assignment]
    pool = BackendPool()
    pool.add(scripted_backend(ScriptedClient(lambda messages, kwargs: ANSWER), name="scripted"))
    config = with_overrides(load_config("check"), parse_retries=0,
                            isolation=IsolationSettings(timeout_s=600 if mode == "hold" else 120))
    async with RunSession(config, pool, backend="scripted", replay_mr2=trace) as session:
        verdict = await session.run(session.trace_sample("1"))
        lost = verdict.diagnostics.items_lost if verdict.diagnostics is not None else []
        pids = session.parsers.worker_pids()
        if mode == "hold":
            with using(session.parsers):
                hanging = asyncio.ensure_future(retrieval.extract.extract_page("<p>never</p>", "https://hang.example/"))
            await asyncio.sleep(1.0)
            print(json.dumps({"pids": session.parsers.worker_pids()}), flush=True)
            await hanging
            return
    imported = [name for name in PARSERS if name in sys.modules]
    print(json.dumps({"imported": imported, "lost": lost, "label": verdict.label, "pids": pids}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2])))
