"""The shipped local corpus: the Wikipedia evidence sentences of CLIMATE-FEVER, indexed with BM25.

The index is built from ``../shared/data/climate-fever/climate-fever.jsonl`` (one document per
distinct evidence sentence, titled by its Wikipedia article) and committed under
``retrieval/data/`` (about 1.5 MB), so it works without the data set. Rebuild it with
``python -m retrieval.climate_fever``; the build is deterministic (documents in file order).
Text: Wikipedia, CC BY-SA; the data set by Diggelmann et al. (2020).
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from m3d_agents.errors import InputError
from retrieval.providers.local_corpus import CorpusDocument, LocalCorpus

PREFIX = "climate_fever"
DEFAULT_SOURCE = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "climate-fever" / "climate-fever.jsonl"


def climate_fever_documents(path: Path) -> list[CorpusDocument]:
    if not path.is_file():
        raise InputError("corpus", f"CLIMATE-FEVER file {path} does not exist")
    seen: dict[str, CorpusDocument] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        claim = json.loads(line)
        for item in claim.get("evidences", []):
            doc_id = item["evidence_id"]
            if doc_id not in seen:
                article = item["article"]
                seen[doc_id] = CorpusDocument(
                    id=doc_id, text=item["evidence"].strip(), title=article,
                    url=f"https://en.wikipedia.org/wiki/{article.replace(' ', '_')}",
                )
    return list(seen.values())


def packaged_dir() -> Path:
    return Path(str(resources.files("retrieval").joinpath("data")))


def load_climate_fever(reranker: Any = None) -> LocalCorpus:
    """The committed index (no data set needed)."""
    return LocalCorpus.load(packaged_dir(), PREFIX, reranker)


def main() -> int:
    parser = argparse.ArgumentParser(description="Build the CLIMATE-FEVER BM25 index shipped in retrieval/data.")
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "data")
    args = parser.parse_args()
    corpus = LocalCorpus.build(climate_fever_documents(args.source), name=PREFIX)
    corpus.save(args.out, PREFIX)
    print(f"indexed {len(corpus.documents)} sentences into {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
